"""Writes the BBH task YAMLs: one per (variant, subtask) and each variant's group, with its
benchmark facts. Run from anywhere: `python tasks/bbh/_generate_configs.py`; the subtasks are
those of the pack's exemplar file (`fewshot/bbh_cot.json`, the 27 `lukaemon/bbh` configs).
A test checks that the committed files are exactly what this writes."""

from __future__ import annotations

import json
from pathlib import Path

from evalpack.hooks import config_files

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
    "cot_olmo3": {
        "comment": (
            "# OLMES `bbh:cot::olmo3:adapt` (suite `olmo3:adapt`): 27 subtasks, 6511 docs, 0-shot,"
            " sampled.\n# `exact_match` is the micro mean over all docs (OLMES's primary).\n"
        ),
        "metrics": ["exact_match", "exact_match_simple"],
        "label": "BBH (0-shot CoT, OLMo 3)",
        "references": [],
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
    means = [(metric, not metric.endswith("_macro")) for metric in spec["metrics"]]
    metadata = (
        f"  version: 1.1\n  label: {spec['label']}\n  primary: {{metric: exact_match, filter: cot}}\n"
        "  breakdown:\n    - {by: subtasks}\n"
    ) + references_block(spec["references"])
    return config_files.group_yaml(spec["comment"], group, names, means, metadata)


def references_block(references: list) -> str:
    if not references:
        return "  references: []  # no published OLMo 3 figure checked offline; see README.md\n"
    return "  references:\n" + "".join(
        f'    - {{model: {model}, value: {value}, source: "{source}"}}\n'
        for model, value, source in references
    )


def group_file(variant: str) -> Path:
    return HERE / variant / f"bbh_{variant}.yaml"


def files() -> dict[Path, str]:
    """Every generated file and its text."""
    names = subtasks()
    out = {}
    for variant, spec in VARIANTS.items():
        group = f"bbh_{variant}"
        out[group_file(variant)] = group_yaml(group, spec, names)
        for name in names:
            out[HERE / variant / f"{group}_{name}.yaml"] = subtask_yaml(group, name)
    return out


if __name__ == "__main__":
    config_files.rewrite(files(), [group_file(variant) for variant in VARIANTS])
