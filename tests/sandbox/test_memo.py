"""Memoized trusted functions (`Job.pure`): a test's reference function is computed once per
worker for equal arguments, each use gets a fresh copy and is charged the time the computation
took, and verdicts are the ones the jobs get without it."""

import pytest

from evalpack.execution import Job, run_jobs
from evalpack.hooks import humanevalplus
from tests.conftest import DATA_DIR, read_jsonl, requires_shared
from tests.sandbox.conftest import GENEROUS

BURN = """
import time

def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
"""
REFERENCE = (
    BURN
    + """
def ref_func(n):
    burn(0.3)
    return [n, n * 2.5, str(n), (n,)]

def check(candidate):
    for n in (1, 2):
        expected = ref_func(n)
        assert candidate(n) == expected
        expected.append("changed")  # this job's copy only
"""
)
PROGRAM = "def f(n):\n    return [n, n * 2.5, str(n), (n,)]\n"


def jobs(test: str, count: int, program: str = PROGRAM, **fields) -> list[Job]:
    return [
        Job(program, test + "\ncheck(f)\n", "f", pure=("ref_func",), **fields) for _ in range(count)
    ]


def test_a_pure_function_is_computed_once_and_charged_each_time():
    verdicts = run_jobs(jobs(REFERENCE, 3, timeout=5.0), workers=1)
    assert [v.outcome for v in verdicts] == ["passed"] * 3  # no job saw another's change
    if verdicts[0].cpu_seconds is None:
        pytest.skip("no cgroup CPU accounting on this host")
    assert verdicts[0].memo_seconds == 0 and verdicts[0].cpu_seconds > 0.6
    for later in verdicts[1:]:
        assert 0.55 < later.memo_seconds < 1.0  # the two calls' first computations
        assert later.cpu_seconds > later.memo_seconds  # judged as if computed again
        assert later.cpu_seconds - later.memo_seconds < 0.3  # but not computed again
    wrong = run_jobs(
        jobs(REFERENCE, 2, program="def f(n):\n    return [n]\n", timeout=5.0), workers=1
    )
    assert [v.outcome for v in wrong] == ["failed", "failed"]


def test_the_time_limit_counts_what_a_memoized_result_took():
    """The reference needs 0.4 s of CPU per call. Against a 0.3 s limit a job computing it
    times out; against 5 s the next job passes and leaves its results in the memo; against
    0.3 s again, the last job gets the first one for next to no work of its own, is charged its
    0.4 s and times out by CPU time, as it would have computing it. (The charge alone exceeds
    the limit, so how fast a loaded machine runs the job cannot change which limit decides.)"""
    slow = REFERENCE.replace("burn(0.3)", "burn(0.4)")
    computing, filling, given = (jobs(slow, 1, timeout=limit)[0] for limit in (0.3, 5.0, 0.3))
    verdicts = run_jobs([computing, filling, given], workers=1)
    assert [v.outcome for v in verdicts] == ["timeout", "passed", "timeout"], verdicts
    if verdicts[2].cpu_seconds is None:
        pytest.skip("no cgroup CPU accounting on this host")
    assert verdicts[2].limit == "cpu" and verdicts[2].memo_seconds > 0.35, verdicts[2]


def test_results_marshal_cannot_copy_and_exceptions_are_not_kept():
    boxed = (
        BURN
        + """
class Box:
    def __eq__(self, other):
        return other == 1

def ref_func(n):
    burn(0.1)
    return Box()

def check(candidate):
    assert candidate(1) == ref_func(1)
"""
    )
    raising = (
        BURN
        + """
def ref_func(n):
    burn(0.1)
    raise ValueError(n)

def check(candidate):
    try:
        ref_func(1)
    except ValueError:
        assert candidate(1) == [1, 2.5, "1", (1,)]
"""
    )
    for test in (boxed, raising):
        verdicts = run_jobs(
            jobs(
                test,
                2,
                program="def f(n):\n    return 1\n" if test is boxed else PROGRAM,
                timeout=5.0,
            ),
            workers=1,
        )
        assert [(v.outcome, v.memo_seconds) for v in verdicts] == [("passed", 0.0)] * 2


def test_each_test_has_its_own_memo():
    """Two tests defining `ref_func` the same way but checking different things: the second
    test's jobs get its own results, not the first's."""
    first = "def ref_func(n):\n    return n\n\ndef check(candidate):\n    assert candidate(1) == ref_func(1)\n"
    second = first.replace("return n\n", "return n + 1\n")
    verdicts = run_jobs(
        jobs(first, 2, program="def f(n):\n    return 1\n")
        + jobs(second, 2, program="def f(n):\n    return 1\n"),
        workers=1,
    )
    assert [v.outcome for v in verdicts] == ["passed", "passed", "failed", "failed"]


@requires_shared
def test_humaneval_plus_reference_functions_are_memoized_with_the_same_verdicts():
    problems = {
        row["task_id"]: row
        for row in read_jsonl(DATA_DIR / "evalplus__humanevalplus/default/test.jsonl")
    }
    assert [
        task for task, row in problems.items() if humanevalplus.pure_functions(row["test"])
    ] == [
        "HumanEval/14",
        "HumanEval/15",
        "HumanEval/83",
        "HumanEval/100",
        "HumanEval/130",
        "HumanEval/139",
    ]
    doc = {**problems["HumanEval/100"], "timeout": GENEROUS}
    right = doc["prompt"] + doc["canonical_solution"]
    wrong = right.replace("num += 2", "num += 1 if n < 1000 else 2")  # right on big n only
    verdicts = run_jobs(
        [humanevalplus.job(doc, program) for program in (right, right, wrong)], workers=1
    )
    assert [v.outcome for v in verdicts] == ["passed", "passed", "failed"]
    if verdicts[0].cpu_seconds is not None:
        assert verdicts[0].memo_seconds == 0 < verdicts[1].memo_seconds


def test_a_memoizing_test_keeps_one_namespace():
    """Module code and the test's functions see the same names, as without it."""
    test = """
count = 0

def bump():
    globals()["count"] += 1

bump()
assert count == 1  # module code reads what the function changed

def ref_func(n):
    return n

def check(candidate):
    assert candidate(1) == ref_func(1)
"""
    verdicts = run_jobs(jobs(test, 1, program="def f(n):\n    return 1\n"), workers=1)
    assert verdicts[0].outcome == "passed", verdicts[0].reason
