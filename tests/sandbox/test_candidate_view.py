"""What a candidate's process can observe does not depend on the expected answers: it receives
the same calls, and is stopped at the same point, whether its answers are right or wrong (so no
state the host shares between jobs can carry answer information to a later job).

The candidates here are the reference solution wrapped so that it logs, on its stdout, each call
it receives (a running digest of the arguments) and then returns the right answer, None, or a
wrong answer of the right type."""

from evalpack.execution import Job, run_jobs
from evalpack.hooks import humaneval, humanevalplus, olmo3_code
from evalpack.sandbox.checks import NOT_EVALUATED
from tests.conftest import DATA_DIR, read_jsonl, requires_shared
from tests.sandbox.conftest import GENEROUS

HUMANEVAL = DATA_DIR / "openai__openai_humaneval/default/test.jsonl"
HUMANEVALPLUS = DATA_DIR / "evalplus__humanevalplus/default/test.jsonl"
MBPPPLUS = DATA_DIR / "evalplus__mbppplus/default/test.jsonl"
ANSWERS = {
    "right": "result",
    "none": "None",
    "wrong": "_wrong(result)",  # a wrong value of the right type
}
LOGGING = """
import os as _os, zlib as _zlib
_real = {name}
_state = [0, 0, 0]  # calls received, digest of their arguments, depth (recursive calls pass)

def _canon(value):
    if isinstance(value, (set, frozenset)):
        return "{{" + ",".join(sorted(map(_canon, value))) + "}}"
    if isinstance(value, (list, tuple)):
        return type(value).__name__ + "(" + ",".join(map(_canon, value)) + ")"
    if isinstance(value, dict):
        return "{{" + ",".join(_canon(k) + ":" + _canon(v) for k, v in value.items()) + "}}"
    return repr(value)

def _wrong(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, (list, tuple)):
        return type(value)(list(value) + [value[0]] if value else [0])
    return None

def {name}(*args, **kwargs):
    if _state[2]:
        return _real(*args, **kwargs)
    _state[0] += 1
    _state[1] = _zlib.crc32(_canon((args, kwargs)).encode(), _state[1])
    _os.write(1, f"{{_state[0]}}:{{_state[1]:08x}}\\n".encode())
    _state[2] += 1
    try:
        result = _real(*args, **kwargs)
    finally:
        _state[2] -= 1
    return {answer}
"""


def logging(solution: str, name: str, answer: str) -> str:
    return solution + LOGGING.format(name=name, answer=ANSWERS[answer])


def logged_reference(hook):
    """The job of `hook` (humaneval, humanevalplus) for a doc's logged reference solution."""

    def job(doc, answer):
        program = logging(doc["prompt"] + doc["canonical_solution"], doc["entry_point"], answer)
        return hook.job({**doc, "timeout": GENEROUS}, program)

    return job


def views(jobs_of, docs, random_inputs=lambda doc: False):
    """For each doc, the log of calls and the verdict of each kind of answer; with random
    inputs (drawn afresh in every job) only the number of calls is compared."""
    jobs = [jobs_of(doc, answer) for doc in docs for answer in ANSWERS]
    verdicts = iter(run_jobs(jobs))
    result = {}
    for doc in docs:
        for answer in ANSWERS:
            verdict = next(verdicts)
            log = verdict.output
            if random_inputs(doc):
                log = log.count("\n")
            result[doc["task_id"], answer] = (log, verdict.passed, verdict.reason)
    return result


# Where the views differ, and why that carries no expected answer.
OWN_ANSWER_DECIDES = {
    # `assert tuple(candidate(x)) == tuple(sort_third(x))`: `tuple(None)` raises before the
    # condition's second call (`sort_third` is the entry point itself), whatever was expected
    ("HumanEval/33", "none")
}


def assert_same_view(views_by_doc, docs):
    differing = []
    for doc in docs:
        right, _, reason = views_by_doc[doc["task_id"], "right"]
        assert right, f"{doc['task_id']}: the reference was never called ({reason})"
        for answer in ("none", "wrong"):
            view, passed, _ = views_by_doc[doc["task_id"], answer]
            assert not passed, f"{doc['task_id']}: a {answer} answer passed"
            if view != right:
                differing.append((doc["task_id"], answer))
    assert set(differing) == OWN_ANSWER_DECIDES & {(d["task_id"], a) for d in docs for a in ANSWERS}


@requires_shared
def test_every_humaneval_problem_makes_the_same_calls_whatever_the_answers():
    docs = read_jsonl(HUMANEVAL)
    found = views(
        logged_reference(humaneval),
        docs,
        lambda doc: "random" in doc["test"] and "Random(" not in doc["test"],
    )
    assert all(found[d["task_id"], "right"][1] for d in docs)  # (the wrapper is neutral)
    assert_same_view(found, docs)


@requires_shared
def test_humanevalplus_and_mbppplus_candidates_answer_every_planned_call_whatever_the_answers():
    plus = read_jsonl(HUMANEVALPLUS)[::20]
    mbpp = read_jsonl(MBPPPLUS)[::40]

    def mbpp_job(doc, answer):
        name = olmo3_code.mbpp_entry_point({**doc, "doc_key": doc["task_id"]})
        (planned,) = olmo3_code.mbppplus_jobs(
            {**doc, "timeout": GENEROUS, "entry_point": name}, "pass\n"
        ).values()
        return Job(
            program=logging(doc["code"], name, answer),
            test=planned.test,
            entry_point=name,
            timeout=GENEROUS,
            calls=planned.calls,
            pure=planned.pure,
        )

    found = views(logged_reference(humanevalplus), plus)
    assert all(found[d["task_id"], "right"][1] for d in plus)
    assert_same_view(found, plus)
    found = views(mbpp_job, mbpp)
    assert all(found[d["task_id"], "right"][1] for d in mbpp)
    assert_same_view(found, mbpp)


ECHO = "import time\ndef f(x):\n    print(x, flush=True)\n    time.sleep(0.1)\n    while x < 0:\n        pass\n    return x\n"


def test_failed_checks_neither_stop_the_calls_nor_change_the_verdict():
    jobs = {
        # each assertion is a check: the first failed one decides, the test goes on
        "checks": ("assert f(1) == 2, 'first'\nassert f(2) == 2\nassert f(3) == 4\n", ""),
        # `and` is two checks
        "and": ("assert f(1) == 2 and f(2) == 2\nassert f(3) == 3\n", ""),
        # a later timeout does not decide: in one process the test stopped at the first check
        "timeout": ("assert f(1) == 2, 'first'\nf(-1)\n", ""),
        "planned timeout": ("assert f(1) == 2, 'first'\nf(-1)\n", "[[1], [-1]]"),
        # a failed check's message calls the candidate no more (its answer comes back)
        "message": ("assert f(1) == 2, 'got ' + str(f(1))\nassert f(2) == 3, str(f(2))\n", ""),
        "new call": ("assert f(1) == 2, str(f(5))\n", ""),
        # the test stops early (by design): the candidate still answers every planned call
        "early": ("assert f(1) == 1\n", "[[1], [2], [3]]"),
        # a test that could catch a failed assertion runs as in one process
        "try": (
            "try:\n    assert f(1) == 2\nexcept AssertionError:\n    pass\nassert f(2) == 2\n",
            "",
        ),
    }
    verdicts = run_jobs(
        [
            Job(program=ECHO, test=test, entry_point="f", timeout=0.5, calls=calls)
            for test, calls in jobs.values()
        ]
    )
    found = {name: (v.outcome, v.reason, v.output) for name, v in zip(jobs, verdicts)}
    assert found == {
        "checks": ("failed", "assertion failed first", "1\n2\n3\n"),
        "and": ("failed", "assertion failed", "1\n2\n3\n"),
        "timeout": ("failed", "assertion failed first", "1\n-1\n"),
        "planned timeout": ("failed", "assertion failed first", "1\n-1\n"),
        "message": ("failed", "assertion failed got 1", "1\n2\n"),
        "new call": ("failed", f"assertion failed {NOT_EVALUATED}", "1\n"),
        "early": ("passed", "all assertions held", "1\n2\n3\n"),
        "try": ("passed", "all assertions held", "1\n2\n"),
    }
