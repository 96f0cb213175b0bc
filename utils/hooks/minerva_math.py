"""lm-eval hooks for the Hendrycks MATH tasks (`tasks/minerva_math_tulu`).

Scoring is expensive (sympy) and can hang on pathological answers, so it happens once, for all
docs in parallel, in the `score_docs` filter, each doc under a hard time bound
(`evalpack.core.bounded`). The filter leaves one plain verdict record per doc: it is what
`--log_samples` shows as the doc's filtered response, and `process_results` only reads it.
"""

from __future__ import annotations

import logging

from ..core import fewshot
from ..core.bounded import bounded_records
from ..scoring import math_answers

log = logging.getLogger(__name__)

SYMPY_CALL_TIMEOUT = 5.0  # OLMES's alarm around each sympy comparison (here CPU time)
DOC_TIMEOUT = 60.0  # hard bound on all scoring of one doc, enforced by killing its worker
METRICS = ("exact_match", "exact_match_flex", "math_verify")


def minerva_shots() -> list[dict]:
    """OLMES's copy of the 4 Minerva exemplars (lm-eval 0.4.3), quirks kept."""
    return fewshot.load("minerva_math")["samples"]


def _score_one(job: tuple[str, str]) -> dict:
    completion, solution = job
    return math_answers.score_math(completion, solution, sympy_timeout=SYMPY_CALL_TIMEOUT)


def unscored_record(solution: str, reason: str) -> dict:
    """The verdict of a doc whose scoring was cut off: every metric 0, the reason kept."""
    return {
        "gold": math_answers.olmes_gold(solution),
        **{metric: 0 for metric in METRICS},
        "scoring_failure": reason,
    }


def score_docs(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: the first sample of every doc scored by all three metrics, in parallel."""
    jobs = [(samples[0], doc["solution"]) for samples, doc in zip(resps, docs)]
    records = bounded_records(
        _score_one,
        jobs,
        timeout=DOC_TIMEOUT,
        unscored=lambda job, reason: unscored_record(job[1], reason),
    )
    _warn_about_bounds(records)
    return records


def _warn_about_bounds(records: list[dict]) -> None:
    cut_off = sum("scoring_failure" in r for r in records)
    timed_out = sum(any(r.get("timeouts", {}).values()) for r in records)
    if cut_off or timed_out:
        log.warning(
            "MATH scoring: %d of %d docs hit a sympy/math-verify time bound, %d were cut off "
            "entirely; they score 0 and are marked in the logged samples",
            timed_out,
            len(records),
            cut_off,
        )


def process_results(doc: dict, results: list[dict]) -> dict:
    """Read the filter's verdict; `*_micro` copies feed the doc-weighted group mean."""
    verdict = results[0]
    scores = {metric: float(verdict[metric]) for metric in METRICS}
    return {**scores, **{f"{metric}_micro": value for metric, value in scores.items()}}
