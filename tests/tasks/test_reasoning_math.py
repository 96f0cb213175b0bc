"""math500 / aime24_reasoning / aime25_reasoning: answer extraction, sampling metrics, BYO data, real data end to end."""

import json

import pytest

from evalpack.core import data
from evalpack.hooks import reasoning_math as tasks_reasoning
from evalpack.hooks.reasoning_math import as_integer, extract_answer
from tests.conftest import replay_eval, requires_shared, task_manager


def test_aime_answers_compare_as_integers():
    assert as_integer("025") == as_integer("25") == as_integer("$25$") == 25
    assert as_integer("25.0") == 25
    assert as_integer("\\frac{1}{2}") is None
    assert as_integer("") is None


def test_only_the_text_after_the_last_think_counts():
    assert extract_answer("<think>\\boxed{1}</think>So \\boxed{7}.") == ("7", False)
    assert extract_answer("<think>a</think><think>\\boxed{2}</think>none") == (None, False)
    assert extract_answer("no box, 42") == (None, False)


def test_unclosed_think_is_truncated():
    assert extract_answer("<think>long reasoning \\boxed{3} and then cut") == (None, True)


def _record(correct, labels, truncated=None):
    n = len(correct)
    return {"correct": correct, "labels": labels, "truncated": truncated or [False] * n}


def test_process_results_hand_computed():
    # 4 samples: answers A, B, B, none; B is right.
    record = _record([False, True, True, False], [0, 1, 1, None], [False, False, False, True])
    scores = tasks_reasoning.process_results({}, [record])
    assert scores["avg@4"] == 0.5
    assert scores["truncated"] == 0.25
    assert scores["pass@1"] == pytest.approx(0.5)
    assert scores["pass@2"] == pytest.approx(1 - 1 / 6)  # 1 - C(2,2)/C(4,2)
    assert scores["pass@4"] == 1.0
    assert scores["maj@1"] == 0.0  # first sample: A
    assert scores["maj@2"] == 0.0  # A vs B tie: first occurrence (A) wins
    assert scores["maj@4"] == 1.0  # B twice
    assert "pass@8" not in scores and "maj@8" not in scores


def test_metric_list_stops_at_n():
    names = [m["metric"] for m in tasks_reasoning.metric_list(5)]
    assert names == ["avg@5", "truncated", "pass@1", "maj@1", "pass@2", "maj@2", "pass@4", "maj@4"]


def test_bad_row_is_an_error_with_its_line(tmp_path):
    file = tmp_path / "mine.jsonl"
    file.write_text(
        '{"question": "1+1?", "answer": 2}\n\n{"problem": "2+2?", "answer": "4"}\n'
        '{"question": "3+3?"}\n'
    )  # a blank line 2: the bad row is on line 4
    with pytest.raises(data.DataError, match=r"mine\.jsonl, line 4: needs 'answer'"):
        tasks_reasoning.load(path="unused", data_file=str(file))


def test_question_is_preferred_over_problem(tmp_path):
    file = tmp_path / "mine.jsonl"
    file.write_text('{"question": "Q?", "problem": "P?", "answer": 5}\n')
    doc = tasks_reasoning.load(path="unused", data_file=str(file))["test"][0]
    assert doc["problem"] == "Q?" and doc["answer"] == "5"


def test_bring_your_own_jsonl_end_to_end(tmp_path):
    problems = tmp_path / "mine.jsonl"
    problems.write_text(
        '{"question": "What is 6*7?", "answer": "042"}\n{"question": "What is 2+3?", "answer": 5}\n'
    )
    samples = {  # per doc, 4 samples
        0: [
            "\\boxed{42}",
            "<think>\\boxed{1}</think> \\boxed{41}",
            "<think>never closed",
            "</think>\\boxed{042}",
        ],
        1: ["\\boxed{6}", "\\boxed{6}", "\\boxed{5}", "\\boxed{5}"],
    }
    completions = tmp_path / "completions.jsonl"
    completions.write_text(
        "".join(
            json.dumps({"task": "aime24_reasoning", "doc_id": d, "completion": c}) + "\n"
            for d, cs in samples.items()
            for c in cs
        )
    )
    results = replay_eval(
        ["aime24_reasoning"],
        f"completions={completions}",
        metadata={"data_file": str(problems), "repeats": 4},
    )["results"]["aime24_reasoning"]
    # doc 0: right, wrong, truncated, right -> avg 0.5; maj@4: 42 twice -> right
    # doc 1: wrong, wrong, right, right -> avg 0.5; maj@4: tie 6 vs 5, 6 first -> wrong
    assert results["avg@4,samples"] == 0.5
    assert results["truncated,samples"] == pytest.approx(1 / 8)
    assert results["maj@4,samples"] == 0.5
    assert results["maj@1,samples"] == 0.5
    assert results["pass@4,samples"] == 1.0
    assert "pass@8,samples" not in results


def test_tasks_and_group_build(mirror):
    loaded = task_manager().load(
        ["reasoning_math", "minerva_math_500_tulu", "math500_minerva_base"]
    )
    sizes = {name: len(task.eval_docs) for name, task in loaded["tasks"].items()}
    assert sizes == {
        "math500": 500,
        "aime24_reasoning": 30,
        "aime25_reasoning": 30,
        "minerva_math_500_tulu": 500,
        "math500_minerva_base": 500,
    }
    assert loaded["tasks"]["aime24_reasoning"].config.repeats == 16
    assert loaded["tasks"]["math500"].config.repeats == 4


@requires_shared
@pytest.mark.parametrize("task", ["aime24_reasoning", "aime25_reasoning"])
def test_real_gold_answers_score_one(mirror, task):
    out = replay_eval(
        [task], "from_doc=The answer is $\\boxed{{{answer}}}$.", metadata={"repeats": 2}
    )["results"][task]
    assert out["avg@2,samples"] == 1.0 and out["maj@2,samples"] == 1.0


@requires_shared
def test_math500_reference_solutions_score_one(mirror):
    out = replay_eval(["math500"], "from_doc={solution}", metadata={"repeats": 1}, log_samples=True)
    misses = [
        s["doc"]["doc_key"]
        for s in out["samples"]["math500"]
        if s["filtered_resps"][0]["correct"] != [True]
    ]
    assert out["results"]["math500"]["avg@1,samples"] == 1.0, misses


def test_the_task_decides_the_comparison_not_the_docs_loaded():
    # an integer gold under math500 is still checked by math-verify: "20+5" is 25
    docs, resps = [{"answer": "25"}], [["\\boxed{20+5}"]]
    assert tasks_reasoning.score_verified_samples(resps, docs)[0]["correct"] == [True]
    assert tasks_reasoning.score_integer_samples(resps, docs)[0]["correct"] == [False]


def test_repeated_non_integer_answers_win_the_aime_vote_together():
    resps = [["\\boxed{25}"] + ["\\boxed{\\frac{1}{2}}"] * 3]
    (record,) = tasks_reasoning.score_integer_samples(resps, [{"answer": "25"}])
    assert record["labels"] == [0, 1, 1, 1]
    assert tasks_reasoning.process_results({}, [record])["maj@4"] == 0.0
