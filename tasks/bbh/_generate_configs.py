"""Writes the BBH task YAMLs: one per (variant, subtask) and each variant's group, with its
benchmark facts. Run from anywhere: `python tasks/bbh/_generate_configs.py`; the subtasks are
those of the pack's exemplar file (`fewshot/bbh_cot.json`, the 27 `lukaemon/bbh` configs).
A test checks that the committed files are exactly what this writes."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = (
    "Tülu 3 paper (Lambert et al. 2024, arXiv:2411.15124) and the Llama-3.1-Tulu-3-8B model card"
)

TABLE_6 = (
    "Tülu 3 paper (Lambert et al. 2024, arXiv:2411.15124), Table 6, BigBenchHard"
    " (3 shot, CoT); the figures of bbh:cot-v1::tulu"
)
VARIANTS = {
    "cot_v1_tulu": {
        "comment": (
            "# OLMES `bbh:cot-v1::tulu`: 27 subtasks, 6511 docs. `exact_match` is the micro mean"
            " over all docs\n# (OLMES's primary); `*_macro` is the mean over subtasks"
            " (PrimeIntellect's bbh environment).\n"
        ),
        "metrics": [
            "exact_match",
            "exact_match_macro",
            "exact_match_flex",
            "exact_match_flex_macro",
        ],
        "label": "BBH cot-v1",
        "references": [
            (model, value, TABLE_6)
            for model, value in (
                ("Tulu-3-8B-SFT", 69.7),
                ("Tulu-3-8B-DPO", 68.7),
                ("Tulu-3-8B", 69.0),
                ("Llama-3.1-8B-Instruct", 71.9),
            )
        ],
    },
    "cot_tulu": {
        "comment": (
            "# The release-time BBH variant (OLMES `bbh:cot::tulu`): micro `exact_match`"
            " (primary) and macro.\n"
        ),
        "metrics": ["exact_match", "exact_match_macro"],
        "label": "BBH (release)",
        "references": [
            (model, value, SOURCE + ", BBH 3-shot CoT")
            for model, value in (
                ("Tulu-3-8B-SFT", 67.9),
                ("Tulu-3-8B-DPO", 65.8),
                ("Tulu-3-8B", 66.0),
                ("Llama-3.1-8B-Instruct", 62.8),
            )
        ],
    },
}


def subtasks() -> list[str]:
    exemplars = HERE.parents[1] / "fewshot" / "bbh_cot.json"
    return list(json.loads(exemplars.read_text(encoding="utf-8"))["subtasks"])


def subtask_yaml(group: str, subtask: str) -> str:
    return (
        f"include: _template.yaml\ntask: {group}_{subtask}\ndataset_kwargs:\n"
        f"  path: lukaemon/bbh\n  name: {subtask}\n  revision: null\n"
    )


def group_yaml(group: str, spec: dict, names: list[str]) -> str:
    lines = [spec["comment"].rstrip("\n"), f"group: {group}", "task:"]
    lines += [f"  - {group}_{name}" for name in names]
    lines.append("aggregate_metric_list:")
    lines += [
        f"  - {{metric: {metric}, aggregation: mean, "
        f"weight_by_size: {'false' if metric.endswith('_macro') else 'true'}}}"
        for metric in spec["metrics"]
    ]
    lines += [
        "metadata:",
        "  version: 1.1",
        f"  label: {spec['label']}",
        "  primary: {metric: exact_match, filter: cot}",
        "  breakdown:",
        "    - {by: subtasks}",
        "  references:",
    ]
    lines += [
        f'    - {{model: {model}, value: {value}, source: "{source}"}}'
        for model, value, source in spec["references"]
    ]
    return "\n".join(lines) + "\n"


def files() -> dict[Path, str]:
    """Every generated file and its text."""
    names = subtasks()
    out = {}
    for variant, spec in VARIANTS.items():
        group = f"bbh_{variant}"
        out[HERE / variant / f"{group}.yaml"] = group_yaml(group, spec, names)
        for name in names:
            out[HERE / variant / f"{group}_{name}.yaml"] = subtask_yaml(group, name)
    return out


if __name__ == "__main__":
    for path, text in files().items():
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files())} files under {HERE}")
