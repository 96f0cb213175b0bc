"""lm-eval hooks for the zero-shot reasoning tasks (`tasks/reasoning_math`: math500, aime24_reasoning,
aime25_reasoning) with n samples per problem: avg@n, pass@k, maj@k and the fraction truncated.

Per sample, only what follows the last `</think>` counts; an unclosed `<think>` is truncated
(scores 0, counted). The last `\\boxed{}` of what remains is the answer (no box: no answer).
AIME compares integers ("025" = "25"); MATH-500 uses math-verify against the gold `answer`.
All scoring, including grouping equivalent answers for the majority vote, runs per doc under
a hard time bound in the tasks' filters (`score_integer_samples`, `score_verified_samples`).
"""

from __future__ import annotations

import logging
import re

from ..core import data
from ..core.bounded import bounded_records
from ..scoring import math_answers
from ..scoring.sampling_metrics import (
    avg_at_n,
    group_equivalent,
    maj_at_k,
    pass_at_k,
    powers_of_two_up_to,
)
from .sampled import SampledTask

log = logging.getLogger(__name__)

VERIFY_TIMEOUT = 5.0  # per math-verify comparison
DOC_TIMEOUT = 120.0  # hard bound on scoring all samples of one doc


# ---------------------------------------------------------------- data


def _question(row: dict, where: str) -> str:
    text = row.get("question", row.get("problem"))
    if not isinstance(text, str) or not text.strip():
        raise data.DataError(f"{where}: needs a non-empty string 'question' or 'problem'")
    return text


def _answer(row: dict, where: str) -> str:
    answer = row.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)) or answer == "":
        raise data.DataError(f"{where}: needs 'answer' as a non-empty string or a number")
    return str(answer)


def normalize_rows(rows: list[tuple[int, dict]], source: str) -> list[dict]:
    """(line number, row) pairs with `question` (preferred) or `problem`, and `answer`, given
    the tasks' fields `problem` and `answer` (a string); other fields are kept. The first bad
    row is a `DataError` naming its line."""
    out = []
    for index, (lineno, row) in enumerate(rows):
        where = f"{source}, line {lineno}"
        out.append(
            {
                **row,
                "problem": _question(row, where),
                "answer": _answer(row, where),
                "doc_key": row.get("doc_key", f"{source}#{index}"),
            }
        )
    return out


def load(
    path: str,
    names: list[str] | None = None,
    split: str = "test",
    data_file: str | None = None,
    revision: str | None = None,
    **_metadata,
):
    """`custom_dataset` hook. The hub dataset at `revision` (several configs concatenated in
    order), or, with `--metadata '{"data_file": "my.jsonl"}'`, the user's own JSONL instead."""
    import datasets

    if data_file:
        rows = normalize_rows(data.numbered_jsonl(data_file), data_file)
    else:
        rows = []
        for name in names or [None]:
            split_rows = list(data.load_split(path, name, split, revision))
            rows += normalize_rows(
                list(enumerate(split_rows, start=1)), f"{path}/{name or 'default'}/{split}"
            )
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


# ---------------------------------------------------------------- scoring


def extract_answer(sample: str) -> tuple[str | None, bool]:
    """(the last boxed answer after the last `</think>`, truncated?)."""
    remaining, truncated = math_answers.strip_think(sample)
    if truncated or remaining is None:
        return None, truncated
    return math_answers.last_boxed_answer(remaining), False


def as_integer(text: str) -> int | None:
    """An AIME answer as an integer: "025", "25", "$25$", "25.0" all give 25."""
    cleaned = re.sub(r"[\s$]|\\[,!;: ]|\\text\{[^}]*\}", "", text).rstrip(".")
    match = re.fullmatch(r"[+-]?\d+(?:\.0+)?", cleaned)
    return int(float(cleaned)) if match else None


def _score_doc(job: dict) -> dict:
    answers, truncated = zip(*(extract_answer(s) for s in job["samples"])) or ((), ())
    timeouts = 0

    def same(a: str, b: str) -> bool:
        nonlocal timeouts
        if job["integer"]:
            # non-integer answers (never right) still group with their exact repeats for maj@k
            return a == b or (as_integer(a) is not None and as_integer(a) == as_integer(b))
        if a == b:
            return True
        equal, timed_out = math_answers.math_verify_equal(a, b, VERIFY_TIMEOUT)
        timeouts += timed_out
        return equal

    correct = [a is not None and same(job["gold"], a) for a in answers]
    labels = group_equivalent(list(answers), same)
    return {
        "gold": job["gold"],
        "answers": list(answers),
        "correct": correct,
        "truncated": list(truncated),
        "labels": labels,
        "timeouts": timeouts,
    }


def _unscored(job: dict, reason: str) -> dict:
    n = len(job["samples"])
    return {
        "gold": job["gold"],
        "answers": [None] * n,
        "correct": [False] * n,
        "truncated": [False] * n,
        "labels": [None] * n,
        "scoring_failure": reason,
    }


def score_integer_samples(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter of the AIME tasks: answers compare as integers ("025" = "25")."""
    return score_samples(resps, docs, integer=True)


def score_verified_samples(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter of math500: answers compare by math-verify against the gold answer."""
    return score_samples(resps, docs, integer=False)


def score_samples(resps: list[list[str]], docs: list[dict], integer: bool) -> list[dict]:
    """Every doc's samples scored in parallel, each doc under a hard bound. The comparison is
    the task's (its YAML names the filter), never inferred from the docs a run happens to load."""
    jobs = [
        {"samples": samples, "gold": doc["answer"], "integer": integer}
        for samples, doc in zip(resps, docs)
    ]
    records = bounded_records(_score_doc, jobs, timeout=DOC_TIMEOUT, unscored=_unscored)
    failed = sum("scoring_failure" in r for r in records)
    if failed:
        log.warning("%d of %d docs could not be scored in time; they score 0", failed, len(docs))
    return records


def process_results(doc: dict, results: list[dict]) -> dict:
    record = results[0]
    n = len(record["correct"])
    scores = {f"avg@{n}": avg_at_n(record["correct"]), "truncated": sum(record["truncated"]) / n}
    for k in powers_of_two_up_to(n):
        scores[f"pass@{k}"] = pass_at_k(n, sum(record["correct"]), k)
        scores[f"maj@{k}"] = maj_at_k(record["labels"], record["correct"], k)
    return scores


def metric_list(repeats: int) -> list[dict]:
    """The metrics a task with `repeats` samples reports (ks beyond n are never listed)."""
    names = [f"avg@{repeats}", "truncated"]
    for k in powers_of_two_up_to(repeats):
        names += [f"pass@{k}", f"maj@{k}"]
    return [
        {"metric": name, "aggregation": "mean", "higher_is_better": name != "truncated"}
        for name in names
    ]


class ReasoningTask(SampledTask):
    """A sampled task whose metric list follows its number of samples n (`repeats`, settable
    with `--metadata '{"repeats": N}'`): avg@n, truncated, and pass@k / maj@k for k = 1, 2,
    4, ... <= n."""

    @classmethod
    def adjust_config(cls, config: dict) -> dict:
        config = super().adjust_config(config)
        return {**config, "metric_list": metric_list(config.get("repeats", 1))}
