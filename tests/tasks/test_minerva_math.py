"""minerva_math_tulu through lm-eval: task build, OLMES-identical messages, end-to-end scoring.

The exemplars in fewshot/minerva_math.json: hash, provenance, quirks, and equality with the
few-shot turns OLMES built for every MATH / MATH-500 request."""

import hashlib
import json

import pytest

from evalpack.hooks import minerva_math as tasks_math
from evalpack.scoring import math_answers
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    OUTPUTS,
    REPO,
    chat_requests,
    olmes_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)

SUBJECTS = [
    "algebra",
    "counting_and_probability",
    "geometry",
    "intermediate_algebra",
    "number_theory",
    "prealgebra",
    "precalculus",
]
SIZES = [1187, 474, 479, 903, 540, 871, 546]


def test_group_and_all_subjects_build(mirror):
    loaded = task_manager().load(["minerva_math_tulu"])
    assert loaded["group_map"] == {
        "minerva_math_tulu": [f"minerva_math_tulu_{s}" for s in SUBJECTS]
    }
    sizes = [len(loaded["tasks"][f"minerva_math_tulu_{s}"].eval_docs) for s in SUBJECTS]
    assert sizes == SIZES and sum(sizes) == 5000


@requires_shared
@pytest.mark.parametrize("subject", ["algebra", "prealgebra"])
def test_messages_identical_to_olmes(mirror, subject):
    reference = olmes_requests(f"minerva_math_{subject}::tulu")
    instances = chat_requests(f"minerva_math_tulu_{subject}")
    built = {inst.doc["doc_key"]: inst for inst in instances}
    assert len(reference) == len(built) == {"algebra": 1187, "prealgebra": 871}[subject]
    for ref in reference:
        inst = built[ref["key"]]
        context, gen_kwargs = inst.args
        assert json.loads(context) == ref["messages"], ref["key"]
        assert gen_kwargs["until"] == [] and gen_kwargs["max_gen_toks"] == 1024
        assert gen_kwargs["do_sample"] is False and gen_kwargs["temperature"] == 0.0
        assert inst.repeats == ref["repeats"] == 1


def _spin_on_marker(job):
    completion, _solution = job
    if "SPIN" in completion:
        while True:
            pass
    return _real_score_one(job)


_real_score_one = tasks_math._score_one


@requires_shared
def test_a_scorer_that_never_returns_cannot_stall_the_run(mirror, tmp_path, monkeypatch):
    monkeypatch.setattr(tasks_math, "_score_one", _spin_on_marker)
    monkeypatch.setattr(tasks_math, "DOC_TIMEOUT", 2.0)
    rows = [
        {"key": "EleutherAI__hendrycks_math/algebra/test#0", "completion": "SPIN"},
        {
            "key": "EleutherAI__hendrycks_math/algebra/test#1",
            "completion": "Final Answer: The final answer is $6$. I hope it is correct.",
        },
    ]
    file = tmp_path / "c.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = replay_eval(
        ["minerva_math_tulu_algebra"], f"completions={file}", limit=2, log_samples=True
    )
    records = [s["filtered_resps"][0] for s in out["samples"]["minerva_math_tulu_algebra"]]
    assert records[0]["scoring_failure"] == "hard time bound 2s"
    assert records[0]["exact_match_flex"] == 0
    assert "scoring_failure" not in records[1]


@requires_shared
def test_pathological_completions_score_through_lm_eval(mirror, tmp_path):
    nasty = [
        "$10^{10^{10}}$ \\boxed{10^{10^{10}}}",
        "x" * 100_000,
        "",
        "\\boxed{" * 500 + "1" + "}" * 500,
        "Final Answer: The final answer is $9^{9^{9^{9}}}$. I hope it is correct.",
    ]
    rows = [
        {"key": f"EleutherAI__hendrycks_math/algebra/test#{i}", "completion": c}
        for i, c in enumerate(nasty)
    ]
    file = tmp_path / "c.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = replay_eval(
        ["minerva_math_tulu_algebra"], f"completions={file}", limit=len(nasty), log_samples=True
    )
    records = [s["filtered_resps"][0] for s in out["samples"]["minerva_math_tulu_algebra"]]
    assert len(records) == len(nasty)
    assert all(r["exact_match"] == 0 and r["exact_match_flex"] == 0 for r in records)


def reference_slice() -> dict[str, list[int]]:
    """Every 10th doc of each subject and every doc whose solution boxes several values: a real
    slice of the 5000 (benchmarks/score_math.py scores all of them and prints any miss)."""
    picked = {}
    for subject in SUBJECTS:
        rows = read_jsonl(DATA_DIR / f"EleutherAI__hendrycks_math/{subject}/test.jsonl")
        picked[f"minerva_math_tulu_{subject}"] = [
            i for i, row in enumerate(rows) if i % 10 == 0 or row["solution"].count("\\boxed") > 1
        ]
    return picked


@requires_shared
def test_reference_solutions_are_accepted(mirror):
    picked = reference_slice()
    out = replay_eval(
        ["minerva_math_tulu"], "from_doc={solution}", log_samples=True, samples=picked
    )
    results = out["results"]["minerva_math_tulu"]
    samples = [s for samples in out["samples"].values() for s in samples]
    assert len(samples) == sum(map(len, picked.values())) > 500
    # Reference solutions have no "Final Answer" line: OLMES strict gives 0 everywhere.
    assert results["exact_match,olmes"] == 0.0
    # OLMES flex and math-verify accept every reference solution (those that box several
    # values box the gold's last value last, so gold and answer agree). A doc that hit the 5 s
    # bound (a loaded machine) must have recorded it and is judged again under a bound no load
    # reaches.
    for metric in ("exact_match_flex", "math_verify"):
        misses = [s for s in samples if s["filtered_resps"][0][metric] != 1]
        for sample in misses:
            record, solution = sample["filtered_resps"][0], sample["doc"]["solution"]
            assert "scoring_failure" in record or record["timeouts"][metric], record
            again = math_answers.score_math(solution, solution, sympy_timeout=600)
            assert again[metric] == 1, (sample["doc"]["doc_key"], again)
        if not misses:
            assert results[f"{metric}_micro,olmes"] == 1.0
    record = out["samples"]["minerva_math_tulu_algebra"][0]["filtered_resps"][0]
    assert {
        "gold",
        "strict_answer",
        "exact_match",
        "exact_match_flex",
        "model_answer",
        "math_verify_answer",
        "math_verify",
        "timeouts",
    } <= set(record)


@requires_shared
def test_parallel_scoring_gives_every_doc_its_one_by_one_verdict(monkeypatch):
    """The filter's workers (each remembering the quick parses of the docs it scored) and
    `score_math` called doc by doc in this process agree on every record of a slice of real outputs, the answers whose evaluation would never
    end included: their time-out is recorded in both. (The per-call bound is raised so that a
    loaded machine cannot cut a slow sympy call short in one path and not the other; those
    answers are refused before evaluation, whatever the bound.)"""
    monkeypatch.setattr(tasks_math, "SYMPY_CALL_TIMEOUT", 60.0)
    rows = read_jsonl(OUTPUTS / "math.jsonl")
    picked = rows[::25] + [r for r in rows if r.get("case", "").startswith("pathological_pow")]
    docs = []
    for row in picked:
        path, number = row["key"].split("#")
        docs.append(read_jsonl(DATA_DIR / f"{path}.jsonl")[int(number)])
    completions = [row["completion"] for row in picked]
    assert len(picked) > 50  # both workers busy, each with many docs
    parallel = tasks_math.score_docs([[c] for c in completions], docs)
    one_by_one = [tasks_math._score_one((c, d["solution"])) for c, d in zip(completions, docs)]
    assert parallel == one_by_one
    timed_out = [r for r in parallel if any(r["timeouts"].values())]
    assert len(timed_out) >= 2 and all("scoring_failure" not in r for r in parallel)
    assert 0 < sum(r["exact_match_flex"] for r in parallel) < len(parallel)


# ------------------------------------------------------------ few-shot exemplars

RECORD = json.loads((REPO / "fewshot" / "minerva_math.json").read_text(encoding="utf-8"))


def shot_turns(samples):
    turns = []
    for shot in samples:
        turns.append({"role": "user", "content": "Problem:\n" + shot["problem"] + "\n\nSolution:"})
        turns.append({"role": "assistant", "content": shot["solution"].strip()})
    return turns


def test_recorded_sha256_matches_the_samples():
    text = json.dumps(RECORD["samples"], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == RECORD["sha256"]


def test_four_shots_from_lm_eval_0_4_3_with_quirks():
    assert RECORD["name"] == "minerva_math"
    assert "lm-eval==0.4.3" in RECORD["source"] and "list_fewshot_samples" in RECORD["source"]
    samples = RECORD["samples"]
    assert [sorted(s) for s in samples] == [["problem", "solution"]] * 4
    assert samples[0]["problem"].endswith("{\\sqrt{5-x}}$.}")  # the stray brace
    assert "30n&=480\\\n\\Rightarrow" in samples[2]["solution"]  # one backslash, then newline
    assert "6x-4y&=a,\\\n6y-9x" in samples[3]["problem"]
    assert all(s["solution"].endswith("I hope it is correct.") for s in samples)


@requires_shared
def test_shots_equal_olmes_turns_of_every_math_request():
    expected = shot_turns(RECORD["samples"])
    math_requests = [
        r
        for r in read_jsonl(OLMES_REF / "requests_dev.jsonl")
        if r["task"].startswith("minerva_math")
    ]
    assert len(math_requests) == 1187 + 871 + 100
    for request in math_requests:
        assert request["messages"][:8] == expected, request["key"]
        assert len(request["messages"]) == 9
