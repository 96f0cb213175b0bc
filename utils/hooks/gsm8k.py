"""lm-eval hooks for GSM8K (`tasks/gsm8k`, OLMES `gsm8k::tulu`).

The `score_docs` filter cuts each doc's first sample at OLMES's stop strings (whatever the
backend did) and leaves one plain record per doc: OLMES's label and extracted answer, the
numeric reading, and both verdicts. It is what `--log_samples` shows as the doc's filtered
response; `process_results` only reads it. Scoring is a few linear-time passes over the text
(no sympy, no backtracking regex), so it runs in the main process: a worker pool would cost
more than the work.
"""

from __future__ import annotations

from ..core import fewshot
from ..core.text import cut_at_stops
from ..scoring import gsm8k_answers

# OLMES gsm8k::tulu chat stop strings, enforced here whatever the backend did.
STOP_STRINGS = ["Question:", "</s>", "<|im_end|>"]
METRICS = ("exact_match", "exact_match_numeric")


def gsm8k_shots() -> list[dict]:
    """OLMES's 8 STD:GSM8k chain-of-thought exemplars, in its order."""
    return fewshot.load("gsm8k")["samples"]


def shot_answer(shot: dict) -> str:
    """An exemplar's assistant turn after the "Answer:" prefix (lm-eval joins them with a
    space). A function, not a Jinja template: lm-eval compiles templates anew on every call."""
    return shot["answer"]


def doc_to_text(doc: dict) -> str:
    """The user turn, exactly OLMES's: no trailing "Answer:" (that is the assistant prefix)."""
    return "Question: " + doc["question"]


def doc_to_target(doc: dict) -> str:
    """The gold OLMES compares against (its cleaned short answer: "-10" reads "10")."""
    return gsm8k_answers.olmes_gold(doc["answer"])


def score_docs(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: the first sample of every doc, cut at the stop strings, both verdicts."""
    return [_score(samples[0], doc) for samples, doc in zip(resps, docs)]


def _score(completion: str, doc: dict) -> dict:
    try:
        return gsm8k_answers.score_gsm8k(cut_at_stops(completion, STOP_STRINGS), doc["answer"])
    except (KeyError, ValueError) as exc:
        reason = "missing" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(f"GSM8K doc {doc.get('doc_key', '?')}, field 'answer': {reason}") from None


def process_results(doc: dict, results: list[dict]) -> dict:
    record = results[0]
    return {metric: float(record[metric]) for metric in METRICS}
