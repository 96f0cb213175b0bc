"""Writes the 56 per-category YAMLs and the group YAML of `tasks/deepmind_math/` (run it from
anywhere: `python tasks/deepmind_math/_generate_configs.py`). The shared settings are the hand-written
`_template.yaml`; this script only lists the categories."""

from pathlib import Path

from evalpack.hooks import config_files

HERE = Path(__file__).resolve().parent
GROUP = "deepmind_math_cot_tulu"
# OLMES's DEEPMIND_MATH_CATEGORIES (the dataset's 56 test configs), alphabetical
CATEGORIES = (
    "algebra__linear_1d",
    "algebra__linear_1d_composed",
    "algebra__linear_2d",
    "algebra__linear_2d_composed",
    "algebra__polynomial_roots",
    "algebra__polynomial_roots_composed",
    "algebra__sequence_next_term",
    "algebra__sequence_nth_term",
    "arithmetic__add_or_sub",
    "arithmetic__add_or_sub_in_base",
    "arithmetic__add_sub_multiple",
    "arithmetic__div",
    "arithmetic__mixed",
    "arithmetic__mul",
    "arithmetic__mul_div_multiple",
    "arithmetic__nearest_integer_root",
    "arithmetic__simplify_surd",
    "calculus__differentiate",
    "calculus__differentiate_composed",
    "comparison__closest",
    "comparison__closest_composed",
    "comparison__kth_biggest",
    "comparison__kth_biggest_composed",
    "comparison__pair",
    "comparison__pair_composed",
    "comparison__sort",
    "comparison__sort_composed",
    "measurement__conversion",
    "measurement__time",
    "numbers__base_conversion",
    "numbers__div_remainder",
    "numbers__div_remainder_composed",
    "numbers__gcd",
    "numbers__gcd_composed",
    "numbers__is_factor",
    "numbers__is_factor_composed",
    "numbers__is_prime",
    "numbers__is_prime_composed",
    "numbers__lcm",
    "numbers__lcm_composed",
    "numbers__list_prime_factors",
    "numbers__list_prime_factors_composed",
    "numbers__place_value",
    "numbers__place_value_composed",
    "numbers__round_number",
    "numbers__round_number_composed",
    "polynomials__add",
    "polynomials__coefficient_named",
    "polynomials__collect",
    "polynomials__compose",
    "polynomials__evaluate",
    "polynomials__evaluate_composed",
    "polynomials__expand",
    "polynomials__simplify_power",
    "probability__swr_p_level_set",
    "probability__swr_p_sequence",
)
AGGREGATES = ("exact_match", "answer_format_correct", "answer_parse_error")


def category_yaml(category: str) -> str:
    return (
        f"include: _template.yaml\ntask: {GROUP}_{category}\n"
        f"dataset_kwargs: {{category: {category}, revision: null}}\n"
    )


GROUP_FILE = HERE / f"{GROUP}.yaml"
HEADER = (
    "# OLMES `deepmind_math:0shot_cot::tulu3`: 56 categories x OLMES's 100-problem sample,\n"
    "# 0-shot chain of thought. Every metric is the macro mean over categories (OLMES's\n"
    "# primary; all categories have 100 docs, so it is also the micro mean).\n"
)
METADATA = (
    '  version: 1.0\n  label: "DeepMind Mathematics (0-shot CoT)"\n'
    "  primary: {metric: exact_match, filter: olmes}\n  breakdown:\n"
    "    - {by: subtasks}\n"
    '    - {by: subtask_prefix, separator: "__"}  # the 8 areas: algebra, arithmetic, ...\n'
    "  references: []  # no published Tulu-3 figure for this held-out task; see README.md\n"
)


def files() -> dict[Path, str]:
    """Every generated file and its text."""
    out = {HERE / f"{GROUP}_{category}.yaml": category_yaml(category) for category in CATEGORIES}
    means = [(metric, False) for metric in AGGREGATES]
    out[GROUP_FILE] = config_files.group_yaml(HEADER, GROUP, CATEGORIES, means, METADATA)
    return out


if __name__ == "__main__":
    config_files.rewrite(files(), [GROUP_FILE])
