"""Writes the per-category YAMLs and the two group YAMLs of `tasks/mmlu_pro/` (run it from
anywhere: `python tasks/mmlu_pro/_generate_configs.py`). The shared settings are the hand-written
`_template.yaml` of each folder; this script only lists the 14 categories."""

from pathlib import Path

from evalpack.hooks import config_files

HERE = Path(__file__).resolve().parent
# MMLU-Pro's `category` values in OLMES's order (oe_eval/data/mmlu_pro_categories.py)
CATEGORIES = (
    "math",
    "health",
    "physics",
    "business",
    "biology",
    "chemistry",
    "computer science",
    "economics",
    "engineering",
    "philosophy",
    "other",
    "history",
    "psychology",
    "law",
)
NO_REFERENCES = (
    "  references: []  # no published figure found for this formulation; see README.md\n"
)

GROUPS = {
    "cot_tulu": {
        "group": "mmlu_pro_cot_tulu",
        "comment": "# OLMES `mmlu_pro:0shot_cot::tulu3`: 14 categories, 12,032 docs, 0-shot chain "
        "of thought.\n# Plain names: the macro mean over categories (OLMES's "
        "primary); `exact_match_micro`: weighted by doc count.\n",
        "aggregates": [
            ("exact_match", False),
            ("exact_match_simple", False),
            ("answer_format_correct", False),
            ("exact_match_micro", True),
        ],
        "label": "MMLU-Pro (0-shot CoT)",
        "splits": "[test]",
    },
    "cot_llama3": {
        "group": "mmlu_pro_cot_llama3",
        "comment": "# OLMES `mmlu_pro:cot::llama3.1`: 14 categories, 12,032 docs, 5-shot chain of "
        "thought.\n# Plain names: weighted by doc count (OLMES's primary, micro); "
        "`exact_match_macro`: the mean over categories.\n",
        "aggregates": [
            ("exact_match", True),
            ("exact_match_simple", True),
            ("answer_format_correct", True),
            ("exact_match_macro", False),
        ],
        "label": "MMLU-Pro (5-shot CoT, Llama 3.1)",
        "splits": "[test, validation]",
    },
}


def slug(category: str) -> str:
    return category.replace(" ", "_")


def category_yaml(group: str, category: str, splits: str) -> str:
    return (
        f"include: _template.yaml\ntask: {group}_{slug(category)}\n"
        f"dataset_kwargs: {{path: TIGER-Lab/MMLU-Pro, category: {category}, "
        f"splits: {splits}, revision: null}}\n"
    )


def group_file(folder: str) -> Path:
    return HERE / folder / f"{GROUPS[folder]['group']}.yaml"


def files() -> dict[Path, str]:
    """Every generated file and its text."""
    out = {}
    members = [slug(category) for category in CATEGORIES]
    for folder, spec in GROUPS.items():
        for category in CATEGORIES:
            path = HERE / folder / f"{spec['group']}_{slug(category)}.yaml"
            out[path] = category_yaml(spec["group"], category, spec["splits"])
        metadata = (
            f'  version: 1.0\n  label: "{spec["label"]}"\n'
            "  primary: {metric: exact_match, filter: none}\n"
            f"  breakdown:\n    - {{by: subtasks}}\n{NO_REFERENCES}"
        )
        out[group_file(folder)] = config_files.group_yaml(
            spec["comment"], spec["group"], members, spec["aggregates"], metadata
        )
    return out


if __name__ == "__main__":
    config_files.rewrite(files(), [group_file(folder) for folder in GROUPS])
