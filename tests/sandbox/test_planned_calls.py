"""Planned calls (`Job.calls`): the candidate answers the calls a test is expected to make
without waiting for each, and every verdict is the one the job gets call by call.

A stateful candidate (its answer counts the calls it has had) shows what it computed and in
which order; a test that strays from the plan must get a fresh candidate, call by call.
"""

import dataclasses

import pytest

from evalpack.execution import Job, run_jobs
from evalpack.hooks import humanevalplus
from evalpack.sandbox.plans import plan_for
from tests.conftest import DATA_DIR, read_jsonl, requires_shared
from tests.sandbox.conftest import GENEROUS

COUNTING = (
    "seen = []\ndef f(*args, **kwargs):\n    seen.append(args)\n    return [len(seen), args]\n"
)
TYPES = "def f(x):\n    return type(x).__name__\n"
COUNTER = "__import__('collections').Counter(a=1)"  # crosses the wire; marshal refuses it


def job(program, test, calls, timeout=5.0):
    return Job(program=program, test=test, entry_point="f", timeout=timeout, calls=calls)


def both_ways(jobs):
    """Verdicts with the plans and call by call, as (outcome, reason) pairs."""
    planned = run_jobs(jobs)
    alone = run_jobs([dataclasses.replace(j, calls="") for j in jobs])
    return [(v.outcome, v.reason) for v in planned], [(v.outcome, v.reason) for v in alone]


def test_verdicts_with_a_plan_are_the_verdicts_call_by_call():
    followed = "for n in range(5):\n    assert f(n, [n]) == [n + 1, (n, [n])]\n"
    jobs = [
        job(COUNTING, followed, "[[n, [n]] for n in range(5)]"),  # the test follows the plan
        job(COUNTING, "assert f(0, [0])[0] == 1\n", "[[n, [n]] for n in range(5)]"),  # stops early
        job(COUNTING, followed, "[[n, [n]] for n in range(3)]"),  # calls beyond the plan
        job(
            COUNTING,
            "assert f(0, [0])[0] == 1\nassert f(7, [7])[0] == 2\n",  # strays at call 2
            "[[n, [n]] for n in range(5)]",
        ),
        job(TYPES, "assert f(1.0) == 'float'\n", "[[1]]"),  # 1 and 1.0 are different calls
        job(TYPES, "assert f(x=1) == 'int'\n", "[[1]]"),  # so are keyword arguments
        job(TYPES, "assert f((1,)) == 'tuple'\n", "[[[1]]]"),  # and a tuple and a list
        job(TYPES, "assert f(1j) == 'complex'\n", "[[1j]]"),
        job(TYPES, f"assert f({COUNTER}) == 'Counter'\n", f"[[{COUNTER}]]"),  # no plan: marshal
        job(TYPES, "assert f(bytearray()) == 'bytearray'\n", "[[bytearray()]]"),  # not plain
        job("def f(x):\n    raise ValueError(x)\n", "f(1)\n", "[[1], [2]]"),
        job(COUNTING, "assert f(0)[0] == 2\n", "[[0], [1]]"),  # a wrong answer fails as ever
    ]
    planned, alone = both_ways(jobs)
    assert planned == alone
    assert [outcome for outcome, _ in planned] == ["passed"] * 9 + ["error", "failed", "failed"]
    assert planned[9][1].startswith("test passed non-plain data")
    assert plan_for("[[1j]]") is not None and plan_for(f"[[{COUNTER}]]") is None


def test_a_test_that_strays_gets_a_fresh_candidate():
    # the candidate answered call 2 of the plan, f(1), ahead; the test then calls f(7): a
    # candidate that kept its state would count 3 calls, a fresh one counts 2
    test = "assert f(0)[0] == 1\nassert f(7) == [2, (7,)]\n"
    (verdict,) = run_jobs([job(COUNTING, test, "[[n] for n in range(100)]")])
    assert verdict.passed, verdict.reason


def test_a_wrong_answer_before_a_hanging_call_fails_and_does_not_time_out():
    # the failed check is recorded and the test goes on (so the candidate's view does not
    # depend on the answers, `checks`): it waits for the stuck call until the time limit, and
    # the first failure, the wrong answer, still decides, as in one process
    program = "def f(n):\n    while n:\n        pass\n    return 1\n"
    (verdict,) = run_jobs([job(program, "assert f(0) == 0\nf(1)\n", "[[0], [1]]", timeout=1.0)])
    assert (verdict.outcome, verdict.reason) == ("failed", "assertion failed")


def test_a_hanging_planned_call_times_out():
    (verdict,) = run_jobs(
        [
            job(
                "def f(n):\n    while True:\n        pass\n",
                "assert f(0) == 0\n",
                "[[0], [1]]",
                timeout=1.0,
            )
        ]
    )
    assert verdict.outcome == "timeout" and verdict.limit in ("cpu", "wall")


def test_jobs_cycling_through_more_plans_than_a_zygote_keeps():
    # the zygote keeps the last few plans and its slot mirrors which: keys sent alone must
    # always name a plan the zygote has (else the job would fail or be answered wrongly)
    tests = {k: f"for n in range({k}):\n    assert f(n)[1] == (n,)\n" for k in range(1, 9)}
    jobs = [job(COUNTING, tests[k], f"[[n] for n in range({k})]") for _ in range(3) for k in tests]
    assert [v.outcome for v in run_jobs(jobs, workers=1)] == ["passed"] * len(jobs)


@requires_shared
def test_every_humanevalplus_test_has_a_plan_and_humaneval_none():
    plus = read_jsonl(DATA_DIR / "evalplus__humanevalplus/default/test.jsonl")
    for doc in plus:
        calls = eval(humanevalplus.planned_calls(doc["test"]))  # the dataset's literal
        assert calls and all(type(args) is list for args in calls), doc["task_id"]
    original = read_jsonl(DATA_DIR / "openai__openai_humaneval/default/test.jsonl")
    assert not any(humanevalplus.planned_calls(doc["test"]) for doc in original)


@pytest.mark.parametrize(
    "completion",
    [
        "    return [x for x in strings if substring in x]\n",  # right
        "    return [x for x in strings if x.startswith(substring)]\n",  # wrong on some inputs
        "    strings.sort()\n    return [x for x in strings if substring in x]\n",  # mutates
    ],
)
@requires_shared
def test_humanevalplus_verdicts_with_and_without_the_plan(completion):
    doc = next(
        d
        for d in read_jsonl(DATA_DIR / "evalplus__humanevalplus/default/test.jsonl")
        if d["task_id"] == "HumanEval/7"
    )
    planned, alone = both_ways(
        [humanevalplus.job({**doc, "timeout": GENEROUS}, doc["prompt"] + completion)]
    )
    assert planned == alone
