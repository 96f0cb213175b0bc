"""Writes the per-subject YAMLs and the two group YAMLs of `tasks/mmlu/` (run it from
anywhere: `python tasks/mmlu/_generate_configs.py`). The shared settings are the hand-written
`_template.yaml` of each folder; this script only lists the 57 subjects."""

from pathlib import Path

from evalpack.hooks import config_files

HERE = Path(__file__).resolve().parent
# cais/mmlu's 57 subject configs (OLMES's MMLU_SUBJECTS), alphabetical
SUBJECTS = (
    "abstract_algebra",
    "anatomy",
    "astronomy",
    "business_ethics",
    "clinical_knowledge",
    "college_biology",
    "college_chemistry",
    "college_computer_science",
    "college_mathematics",
    "college_medicine",
    "college_physics",
    "computer_security",
    "conceptual_physics",
    "econometrics",
    "electrical_engineering",
    "elementary_mathematics",
    "formal_logic",
    "global_facts",
    "high_school_biology",
    "high_school_chemistry",
    "high_school_computer_science",
    "high_school_european_history",
    "high_school_geography",
    "high_school_government_and_politics",
    "high_school_macroeconomics",
    "high_school_mathematics",
    "high_school_microeconomics",
    "high_school_physics",
    "high_school_psychology",
    "high_school_statistics",
    "high_school_us_history",
    "high_school_world_history",
    "human_aging",
    "human_sexuality",
    "international_law",
    "jurisprudence",
    "logical_fallacies",
    "machine_learning",
    "management",
    "marketing",
    "medical_genetics",
    "miscellaneous",
    "moral_disputes",
    "moral_scenarios",
    "nutrition",
    "philosophy",
    "prehistory",
    "professional_accounting",
    "professional_law",
    "professional_medicine",
    "professional_psychology",
    "public_relations",
    "security_studies",
    "sociology",
    "us_foreign_policy",
    "virology",
    "world_religions",
)

MC_REFERENCES = "  references: []  # no published 5-shot MC figure; see README.md\n"
COT_REFERENCES = """\
  references:  # the Tulu-3 paper's "MMLU (0-shot CoT)"; which OLMES prompt made it is not recorded
    - {model: Tulu-3-8B-SFT, value: 65.9, source: "Tülu 3 paper (arXiv:2411.15124) / model card"}
    - {model: Tulu-3-8B-DPO, value: 68.7, source: "Tülu 3 paper (arXiv:2411.15124) / model card"}
    - {model: Tulu-3-8B, value: 68.2, source: "Tülu 3 paper (arXiv:2411.15124) / model card"}
    - {model: Llama-3.1-8B-Instruct, value: 71.2, source: "Tülu 3 paper (arXiv:2411.15124)"}
"""

GROUPS = {
    "mc_tulu": {
        "group": "mmlu_mc_tulu",
        "comment": "# OLMES `mmlu:mc::tulu`: 57 subjects, 14,042 docs, 5-shot multiple choice by "
        "log-likelihood.\n# Plain names: the macro mean over subjects (OLMES's "
        "primary); `*_micro`: weighted by doc count.\n",
        "aggregates": [
            (m, False)
            for m in (
                "acc_raw",
                "acc_per_char",
                "acc_per_byte",
                "sum_logits_corr",
                "logits_per_char_corr",
                "bits_per_byte_corr",
            )
        ]
        + [(m + "_micro", True) for m in ("acc_raw", "acc_per_char", "acc_per_byte")],
        "label": "MMLU (5-shot MC)",
        "primary": "{metric: acc_raw, filter: none}",
        "references": MC_REFERENCES,
        "splits": "[test, dev]",
    },
    "cot_tulu": {
        "group": "mmlu_cot_tulu",
        "comment": "# OLMES `mmlu:cot::summarize`: 57 subjects, 14,042 docs, 0-shot chain of "
        "thought.\n# Plain names: the macro mean over subjects (OLMES's primary); "
        "`*_micro`: weighted by doc count.\n",
        "aggregates": [
            ("exact_match", False),
            ("answer_format_correct", False),
            ("exact_match_micro", True),
        ],
        "label": "MMLU (0-shot CoT)",
        "primary": "{metric: exact_match, filter: none}",
        "references": COT_REFERENCES,
        "splits": "[test]",
    },
    "cot_olmo3": {
        "group": "mmlu_cot_olmo3",
        "comment": "# OLMES `mmlu:cot::olmo3:adapt` (suite `olmo3:adapt`): 57 subjects, 14,042 docs, "
        "0-shot chain of\n# thought, sampled. Plain names: the macro mean over subjects (OLMES's "
        "primary); `*_micro`: weighted by doc count.\n",
        "aggregates": [
            ("exact_match", False),
            ("exact_match_simple", False),
            ("answer_format_correct", False),
        ],
        "label": "MMLU (0-shot CoT, OLMo 3)",
        "primary": "{metric: exact_match, filter: olmes}",
        "references": "  references: []  # no published OLMo 3 figure checked offline; see README.md\n",
        "splits": "[test]",
    },
}


def subject_yaml(group: str, subject: str, splits: str) -> str:
    return (
        f"include: _template.yaml\ntask: {group}_{subject}\n"
        f"dataset_kwargs: {{path: cais/mmlu, name: {subject}, splits: {splits}, "
        "revision: null}\n"
    )


def group_file(folder: str) -> Path:
    return HERE / folder / f"{GROUPS[folder]['group']}.yaml"


def files() -> dict[Path, str]:
    """Every generated file and its text."""
    out = {}
    for folder, spec in GROUPS.items():
        for subject in SUBJECTS:
            path = HERE / folder / f"{spec['group']}_{subject}.yaml"
            out[path] = subject_yaml(spec["group"], subject, spec["splits"])
        metadata = (
            f'  version: 1.0\n  label: "{spec["label"]}"\n  primary: {spec["primary"]}\n'
            f"  breakdown:\n    - {{by: subtasks}}\n{spec['references']}"
        )
        out[group_file(folder)] = config_files.group_yaml(
            spec["comment"], spec["group"], SUBJECTS, spec["aggregates"], metadata
        )
    return out


if __name__ == "__main__":
    config_files.rewrite(files(), [group_file(folder) for folder in GROUPS])
