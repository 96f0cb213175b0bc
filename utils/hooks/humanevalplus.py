"""lm-eval hooks for HumanEval+ (`tasks/humanevalplus`), OLMES `codex_humanevalplus::tulu`.

A HumanEval-family task differs from HumanEval only in its dataset, its test program and its
time limit, so prompts, stop strings, extraction, batching and pass@k are `humaneval`'s. On top
of the two HumanEval+ runs of each sample (OLMES's program and the extracted one) the same OLMES
program is also run against HumanEval's original tests, so that the task can count the samples
HumanEval passes and HumanEval+ fails: the reason to run HumanEval+ at all.
"""

from __future__ import annotations

import re

from .. import execution
from ..core import data
from . import humaneval

# OLMES `codex_humanevalplus` metric_kwargs: 20 s for the whole test program (HumanEval: 3 s).
DEFAULT_TIMEOUT = 20.0
HUMANEVAL_DATASET = "openai/openai_humaneval"
# HumanEval+ tests open `check` with a literal list of argument lists, `inputs`, and call the
# candidate with each in turn
_INPUTS = re.compile(r"^def check\(candidate\):\n    inputs = (.+)$", re.MULTILINE)
# six of them compute the expected value with a reference function
_REF_FUNC = re.compile(r"^def ref_func\(", re.MULTILINE)


def load(timeout: float = DEFAULT_TIMEOUT, humaneval_revision: str | None = None, **kwargs):
    """`custom_dataset` hook: HumanEval+ docs, each carrying the run's time limit (settable with
    `--metadata '{"timeout": 30}'`) and HumanEval's original test of the same problem (from
    HumanEval at `humaneval_revision`)."""
    dataset = data.load(**kwargs)
    humaneval_tests = original_tests(humaneval_revision)

    def extend(doc: dict) -> dict:
        if doc["task_id"] not in humaneval_tests:
            raise data.DataError(
                f"{doc['doc_key']}: task_id {doc['task_id']!r} has no {HUMANEVAL_DATASET} problem"
            )
        return {"timeout": float(timeout), "humaneval_test": humaneval_tests[doc["task_id"]]}

    return dataset.map(extend)


def original_tests(revision: str | None = None) -> dict[str, str]:
    """HumanEval's own test of each problem, by task_id (same 164 task_ids as HumanEval+)."""
    return {
        row["task_id"]: row["test"]
        for row in data.load_split(HUMANEVAL_DATASET, None, "test", revision)
    }


def planned_calls(test: str) -> str:
    """The expression for the calls a test is expected to make (`execution.Job.calls`): a
    HumanEval+ test's `inputs`; "" for a test without one (HumanEval's asserts)."""
    match = _INPUTS.search(test)
    return match.group(1) if match else ""


def pure_functions(test: str) -> tuple[str, ...]:
    """The test's functions memoized per worker (`execution.Job.pure`): HumanEval+'s
    `ref_func`, the reference solution computing each input's expected value (in the six tests
    that have one, a function of integers or strings and nothing else)."""
    return ("ref_func",) if _REF_FUNC.search(test) else ()


def plan(test: str) -> dict:
    """What the sandbox may prepare for a HumanEval+ test: its planned calls and memoized
    reference function (`execution.Job` fields)."""
    return {"calls": planned_calls(test), "pure": pure_functions(test)}


def job(doc: dict, program: str) -> execution.Job:
    """`program` run against the doc's HumanEval+ test, with the doc's time limit."""
    return humaneval.job(doc, program, **plan(doc["test"]))


def sample_jobs(doc: dict, completion: str) -> dict[str, execution.Job]:
    """HumanEval's two runs of a sample against HumanEval+'s tests (planned, memoized), plus
    OLMES's program against HumanEval's original tests with HumanEval's time limit."""
    return {
        **humaneval.sample_jobs(doc, completion, **plan(doc["test"])),
        "humaneval": execution.Job(
            program=doc["prompt"] + completion,
            test=humaneval.test_program(doc["humaneval_test"], doc["entry_point"]),
            entry_point=doc["entry_point"],
            timeout=humaneval.DEFAULT_TIMEOUT,
            trusted_prelude=doc["prompt"],
        ),
    }


def execute_samples(resps: list[list[str]], docs: list[dict]) -> list[list[dict]]:
    """Custom filter: every sample of every doc, all runs, in one parallel batch."""
    return humaneval.run_samples(resps, docs, sample_jobs)


def process_results(doc: dict, results: list[list[dict]]) -> dict:
    """HumanEval's pass@k, plus how many of the doc's samples pass HumanEval's tests and fail
    HumanEval+'s (OLMES's program in both)."""
    samples = results[0]
    scores = humaneval.process_results(doc, results)
    scores["passes_humaneval_fails_plus"] = sum(
        s["humaneval"]["passed"] and not s["olmes"]["passed"] for s in samples
    )
    return scores


def total(counts: list[int]) -> int:
    """Aggregation for counts: the sum over all docs of the run."""
    return sum(counts)
