"""lm-eval hooks for `aime24_olmo3` and `aime25_olmo3`: OLMES's `aime:2024::olmo3:adapt` and
`aime:2025::olmo3:adapt` (prompt, 32 samples, pass@1, 4, 8, 16, 32) over the AIME problems the
pack mirrors (OLMES reads `allenai/aime-2021-2025`, which has no offline copy: tasks/
reasoning_math/README.md).

Per sample, OLMES's AIME reading: the candidates are the "Final Answer" line's answer, the last
boxed answer (else the text between the last two `$`, else the whole output), each normalised
as Minerva does; a sample passes when any candidate equals the gold (the answer with its
leading zeros stripped) by sympy or by the Hendrycks string normalisation. `exact_match` and
`exact_match_flex` read the first sample only (OLMES's `GenericMetric`). Every doc's samples are
scored in a worker under a hard bound; with the thinking switch on, each sample is split first
and its reasoning kept in the record.
"""

from __future__ import annotations

import logging

from ..core.bounded import bounded_records
from ..scoring import math_answers
from ..scoring.math_extract import INVALID_ANSWER, hendrycks_equal, normalize_final_answer
from ..scoring.sampling_metrics import pass_at_k
from . import reasoning_math, thinking_switch

log = logging.getLogger(__name__)

PROMPT_SUFFIX = "\n\nPresent the answer in LaTex format: \\boxed{Your answer}"
PASS_AT_KS = (1, 4, 8, 16, 32)  # OLMES's metric_kwargs pass_at_ks
SYMPY_CALL_TIMEOUT = 5.0  # OLMES's alarm around each sympy comparison (here CPU time)
DOC_TIMEOUT = 300.0  # hard bound on scoring all samples of one doc


def load(process_output=None, **kwargs):
    """`custom_dataset` hook: the mirrored AIME problems, stamped with the thinking switch."""
    return thinking_switch.stamp(reasoning_math.load(**kwargs), process_output)


def prompt(doc: dict) -> str:
    """OLMES's AIME user turn: the problem as it is, then the boxed-answer request."""
    return doc["problem"] + PROMPT_SUFFIX


def gold(doc: dict) -> str:
    """OLMES's label: the answer without leading zeros ("025" -> "25")."""
    return str(doc["answer"]).lstrip("0")


def sample_verdict(text: str, label: str) -> dict:
    """(OLMES's first candidate, `exact_match` on the Final Answer line, passed?) of one sample."""
    strict = math_answers.strict_answer(text)
    candidates = math_answers.flex_candidates(text, strict)
    timeouts = 0

    def equal(candidate: str) -> bool:
        nonlocal timeouts
        same, timed_out = math_answers.sympy_equal(candidate, label, SYMPY_CALL_TIMEOUT)
        timeouts += timed_out
        return same

    exact = strict != INVALID_ANSWER and equal(normalize_final_answer(strict))
    passed = exact or any(hendrycks_equal(c, label) or equal(c) for c in candidates)
    return {"answer": candidates[0], "exact": exact, "passed": passed, "timeouts": timeouts}


def _score_doc(job: dict) -> dict:
    thoughts = [thinking_switch.split(s, job["doc"]) for s in job["samples"]]
    texts = [thinking_switch.scored_text(s, t) for s, t in zip(job["samples"], thoughts)]
    verdicts = [sample_verdict(text, job["gold"]) for text in texts]
    record = {
        "gold": job["gold"],
        "model_answers": [v["answer"] for v in verdicts],
        "passed": [v["passed"] for v in verdicts],
        "exact_match": int(verdicts[0]["exact"]),
        "exact_match_flex": int(verdicts[0]["passed"]),
        "timeouts": sum(v["timeouts"] for v in verdicts),
    }
    if thoughts[0] is not None:
        record["reasoning"] = [t.reasoning for t in thoughts]
        record["thinking_finished"] = [t.finished for t in thoughts]
    return record


def _unscored(job: dict, reason: str) -> dict:
    n = len(job["samples"])
    return {
        "gold": job["gold"],
        "model_answers": [""] * n,
        "passed": [False] * n,
        "exact_match": 0,
        "exact_match_flex": 0,
        "scoring_failure": reason,
    }


def score_samples(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: every doc's samples scored, each doc in a worker under a hard bound."""
    jobs = [{"samples": s, "gold": gold(doc), "doc": doc} for s, doc in zip(resps, docs)]
    records = bounded_records(_score_doc, jobs, timeout=DOC_TIMEOUT, unscored=_unscored)
    cut_off = sum("scoring_failure" in r for r in records)
    if cut_off:
        log.warning(
            "AIME: %d of %d docs could not be scored in time; they score 0", cut_off, len(records)
        )
    return records


def process_results(doc: dict, results: list[dict]) -> dict:
    """pass@k for OLMES's ks up to the number of samples, the first sample's `exact_match` and
    `exact_match_flex`, and (switch on) how many samples never ended their thinking."""
    record = results[0]
    n, correct = len(record["passed"]), sum(record["passed"])
    scores = {f"pass_at_{k}": pass_at_k(n, correct, k) for k in PASS_AT_KS if k <= n}
    scores["exact_match"] = float(record["exact_match"])
    scores["exact_match_flex"] = float(record["exact_match_flex"])
    if "thinking_finished" in record:
        scores["thinking_unfinished"] = record["thinking_finished"].count(False)
    return scores
