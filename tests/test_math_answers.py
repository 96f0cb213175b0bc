"""OLMES strict / flex and math-verify scoring on hand-made cases and OLMES's own verdicts."""

import json

import pytest

from conftest import DATA_DIR, OLMES_REF, OUTPUTS, read_jsonl, requires_shared
from evalpack import math_answers as m
from evalpack.bounded import bounded_map

SOLUTION = "So the answer is $\\boxed{2}$."


def final(answer):
    return f"Work.\nFinal Answer: The final answer is ${answer}$. I hope it is correct."


def score(completion, solution=SOLUTION):
    return m.score_math(completion, solution)


def test_final_answer_line_scores_all_three_only_with_a_box():
    record = score(final("2"))
    assert (record["exact_match"], record["exact_match_flex"], record["math_verify"]) == (1, 1, 0)
    record = score("So $\\boxed{2}$.\n" + final("2"))
    assert (record["exact_match"], record["exact_match_flex"], record["math_verify"]) == (1, 1, 1)


def test_boxed_only_is_flex_not_strict():
    record = score("Thus $\\boxed{2}$.")
    assert (record["exact_match"], record["exact_match_flex"], record["math_verify"]) == (0, 1, 1)


def test_last_of_several_boxes_counts():
    assert score("$\\boxed{2}$ no wait $\\boxed{3}$")["exact_match_flex"] == 0
    assert score("$\\boxed{3}$ no wait $\\boxed{2}$")["exact_match_flex"] == 1


def test_fbox_is_gold_material_but_not_a_flex_candidate():
    assert m.olmes_gold("so \\fbox{7}") == "7"
    assert score("It is \\fbox{2}.")["model_answer"] != "2"


def test_boxed_with_a_space_wins_over_braces():
    assert m.last_boxed_only_string("\\boxed{3} and \\boxed 2$ end") == "\\boxed 2"
    assert score("\\boxed{3} then \\boxed 2$")["exact_match_flex"] == 1


def test_nested_braces_and_unbalanced_boxes():
    assert m.last_boxed_answer("$\\boxed{\\frac{1}{\\sqrt{2}}}$") == "\\frac{1}{\\sqrt{2}}"
    assert m.last_boxed_answer("\\boxed{2") is None


def test_intervals_are_string_equal_only_under_flex():
    solution = "The domain is $\\boxed{[2,5)}$."
    assert m.olmes_gold(solution) == "[2,5)"
    strict_only = score(final("[2,5)"), solution)
    assert strict_only["exact_match"] == 0  # sympy cannot parse an interval: OLMES strict says no
    assert strict_only["exact_match_flex"] == 1  # strip_string equality


def test_percent_and_degrees():
    assert score("$\\boxed{2\\%}$")["exact_match_flex"] == 1
    assert score("$\\boxed{2^\\circ}$")["exact_match_flex"] == 1


def test_gold_normalisation_quirks_are_kept():
    assert m.olmes_gold("$\\boxed{\\left(1,2\\right)}$") == "\\le(1,2\\right)"
    assert m.olmes_gold("$\\boxed{(-\\infty, 0)}$") == "(-\\iny,0)"
    assert m.olmes_gold("$\\boxed{3, 5, 7}$") == "357"
    assert m.olmes_gold("$\\boxed{x = 4}$") == "4"


def test_unclosed_think_gets_no_math_verify_answer():
    record = score("<think>so \\boxed{2} maybe")
    assert record["math_verify"] == 0 and record["math_verify_answer"] is None
    assert score("<think>\\boxed{3}</think> \\boxed{2}")["math_verify"] == 1


def test_empty_and_huge_outputs():
    assert score("")["exact_match_flex"] == 0
    record = score("x" * 100_000)
    assert record["exact_match"] == record["exact_match_flex"] == record["math_verify"] == 0


def test_towers_of_powers_are_bounded_and_counted():
    record = score("$\\boxed{10^{10^{10}}}$", "$\\boxed{10^{10^{10}}}$")
    assert record["exact_match_flex"] == 1  # string-equal after strip_string: no evaluation
    record = score(final("10^{10^{10}}") + " \\boxed{10^{10^{10}}}")
    assert record["exact_match"] == 0 and record["timeouts"]["exact_match"] == 1
    assert record["timeouts"]["math_verify"] == 1


def test_strip_string_falls_back_to_raw_comparison_when_it_raises():
    assert m.hendrycks_equal("a/b", "a/b")  # int("a") raises inside strip_string
    assert not m.hendrycks_equal("a/b", "\\frac{a}{b}")
    assert m.hendrycks_equal("0.5", "\\frac12")


@requires_shared
def test_gold_equals_olmes_label_for_every_reference_doc():
    rows = {}
    for ref in read_jsonl(OLMES_REF / "requests_dev.jsonl"):
        if ref["task"].startswith("minerva_math"):
            path, row = ref["key"].split("#")
            rows.setdefault(path, read_jsonl(DATA_DIR / f"{path}.jsonl"))
            assert m.olmes_gold(rows[path][int(row)]["solution"]) == ref["label"], ref["key"]


def _score_job(job):
    return m.score_math(*job)


@requires_shared
def test_every_olmes_verdict_on_the_adversarial_completions():
    completions = {r["id"]: r for r in read_jsonl(OUTPUTS / "math.jsonl")}
    verdicts = read_jsonl(OLMES_REF / "scores_dev_math.jsonl")
    docs = {}
    jobs = []
    for v in verdicts:
        path, row = v["key"].split("#")
        docs.setdefault(path, read_jsonl(DATA_DIR / f"{path}.jsonl"))
        jobs.append((completions[v["id"]]["completion"], docs[path][int(row)]["solution"]))
    outcomes = bounded_map(_score_job, jobs, timeout=60)
    mismatches = [
        v["id"] for v, o in zip(verdicts, outcomes)
        if o.status != "ok" or (o.value["exact_match"], o.value["exact_match_flex"],
                                o.value["model_answer"])
        != (int(v["exact_match"]), int(v["exact_match_flex"]), v["model_answer"])
    ]
    assert len(verdicts) == 345
    assert mismatches == []


@pytest.mark.parametrize("text, expected", [
    ("a</think>b</think>c", ("c", False)), ("<think>open", (None, True)), ("plain", ("plain", False)),
])
def test_strip_think(text, expected):
    assert m.strip_think(text) == expected


def test_records_are_plain_json():
    json.dumps(score(final("2")))
