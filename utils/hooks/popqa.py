"""lm-eval hooks for PopQA (`tasks/popqa`), OLMES `popqa::tulu`.

OLMES's task is `oe_eval/tasks/oe_eval_tasks/popqa.py` (class `PopQA`): every doc gets the same
15 exemplars (`fewshot/popqa.json`), each a user turn `"Q: " + question + " A:"` and an
assistant turn with the exemplar's `obj` (OLMES's target `" " + obj`, stripped when it becomes
a chat turn by `concat_with_space`). The `score_docs` filter leaves one record per doc (the
answer as scored, the verdicts, the matching alias), which `--log_samples` shows as the doc's
filtered response.
"""

from __future__ import annotations

import json

from ..core import data, fewshot
from ..core.text import cut_at_stops
from ..scoring.popqa_match import matching_alias, olmes_match

STOP_STRINGS = ["\n\n"]  # OLMES PopQA generation_kwargs, enforced here whatever the backend did
METRICS = ("exact_match", "alias_match")

# Subject popularity (`s_pop`, monthly Wikipedia page views) buckets for the report breakdown:
# PopQA's point is that accuracy collapses on long-tail (unpopular) subjects.
POPULARITY_BUCKETS = [
    (100, "1 (<100)"),
    (1_000, "2 (100-999)"),
    (10_000, "3 (1k-9.9k)"),
    (100_000, "4 (10k-99k)"),
]
TOP_BUCKET = "5 (>=100k)"


def popqa_shots() -> list[dict]:
    """OLMES's 15 PopQA exemplars, in OLMES's order."""
    return fewshot.load("popqa")["samples"]


def popularity_bucket(s_pop: int) -> str:
    return next((label for bound, label in POPULARITY_BUCKETS if s_pop < bound), TOP_BUCKET)


def aliases(doc: dict) -> list[str]:
    """`possible_answers` (a JSON list stored as a string); bad data names the doc and field."""
    where = f"{doc.get('doc_key', 'PopQA doc')}: field 'possible_answers'"
    try:
        values = json.loads(doc["possible_answers"])
    except (KeyError, TypeError, json.JSONDecodeError):
        raise data.DataError(f"{where}: missing or not a JSON string") from None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise data.DataError(f"{where}: not a JSON list of strings")
    return values


def _checked(doc: dict) -> dict:
    aliases(doc)
    if not isinstance(doc.get("s_pop"), int):
        raise data.DataError(f"{doc.get('doc_key', 'PopQA doc')}: field 's_pop': not an integer")
    return {"popularity": popularity_bucket(doc["s_pop"])}


def process_docs(dataset):
    """Check every doc before any generation, and add its `popularity` bucket."""
    return dataset.map(_checked)


def doc_to_text(doc: dict) -> str:
    return "Q: " + doc["question"] + " A:"


def doc_to_target(doc: dict) -> str:
    return doc["obj"].strip()


def score_record(completion: str, doc: dict) -> dict:
    answer = cut_at_stops(completion, STOP_STRINGS)
    labels = aliases(doc)
    alias = matching_alias(answer, labels)
    return {
        "answer": answer,
        "exact_match": float(olmes_match(answer, labels)),
        "alias_match": float(alias is not None),
        "matched_alias": alias,
        "popularity": doc["popularity"],
    }


def score_docs(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: the first sample of every doc, scored (cheap: no time bound needed)."""
    return [score_record(samples[0], doc) for samples, doc in zip(resps, docs)]


def process_results(doc: dict, results: list[dict]) -> dict:
    record = results[0]
    return {metric: record[metric] for metric in METRICS}
