"""lm-eval hooks for IFEval (`tasks/ifeval`), OLMES `ifeval::tulu`.

The `score_docs` filter judges every doc's response on all its instructions, in parallel worker
processes, each doc under a hard time bound (`evalpack.core.bounded`); it leaves one plain
verdict record per doc, which `--log_samples` shows as the filtered response. `process_results`
turns a record into OLMES's metrics: the prompt-level ones per doc, and lists of instruction
verdicts that `micro_mean` pools over all instructions (instruction level) or over every
occurrence of one instruction type (`<instruction_id>_{strict,loose}_acc`).
"""

from __future__ import annotations

import logging

from ..core import data
from ..core.bounded import bounded_records
from ..scoring.ifeval import checkers

log = logging.getLogger(__name__)

DOC_TIMEOUT = 60.0  # hard bound on judging one doc (all instructions, strict and loose)
LEVELS = ("strict", "loose")


def load(**kwargs):
    """`custom_dataset` hook: the dataset (`evalpack.core.data.load`), every row checked to
    carry a prompt and one known instruction id and one kwargs mapping per instruction."""
    dataset = data.load(**kwargs)
    known = checkers.registry()
    for split, rows in dataset.items():
        for row_index, row in enumerate(rows):
            problem = row_problem(row, known)
            if problem:
                raise data.DataError(
                    f"{kwargs.get('path')} split {split!r} row {row_index}: {problem}"
                )
    return dataset


def row_problem(row: dict, known) -> str | None:
    """What is wrong with one IFEval row, naming the field, or None."""
    if not isinstance(row.get("prompt"), str):
        return "field 'prompt' is not a string"
    ids, kwargs = row.get("instruction_id_list"), row.get("kwargs")
    if not isinstance(ids, list) or not ids:
        return "field 'instruction_id_list' is not a non-empty list"
    unknown = [iid for iid in ids if iid not in known]
    if unknown:
        return f"field 'instruction_id_list' has unknown instruction ids {unknown}"
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        return f"field 'kwargs' must be a list of {len(ids)} mappings, one per instruction"
    if not all(entry is None or isinstance(entry, dict) for entry in kwargs):
        return "field 'kwargs' holds an entry that is not a mapping"
    return None


def _judge(job: tuple) -> dict:
    score_response, doc, response = job
    return score_response(doc, response)


def unscored_record(doc: dict, reason: str) -> dict:
    """The verdict of a doc whose judging was cut off: every instruction not followed."""
    ids = list(doc["instruction_id_list"])
    return {
        "instruction_id_list": ids,
        **{level: [False] * len(ids) for level in LEVELS},
        "scoring_failure": reason,
    }


def score_docs(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: the first response of every doc judged on all its instructions."""
    checkers.registry()  # import once here, before the workers fork
    return judge_first_responses(
        checkers.score_response,
        resps,
        docs,
        DOC_TIMEOUT,
        "IFEval: a checker raised on %d of %d docs (counted as not followed, as in OLMES)",
    )


def judge_first_responses(score_response, resps, docs, timeout: float, failed: str) -> list:
    """The first response of every doc judged by `score_response(doc, response)`, each doc
    under the hard bound `timeout` (a doc cut off: `unscored_record`); one warning counting
    the docs where a checker failed (`failed`, with the count and the total) and those cut
    off."""
    jobs = [(score_response, doc, samples[0]) for samples, doc in zip(resps, docs)]
    records = bounded_records(
        _judge, jobs, timeout=timeout, unscored=lambda job, reason: unscored_record(job[1], reason)
    )
    cut_off = sum("scoring_failure" in r for r in records)
    raised = sum("errors" in r for r in records)
    if cut_off or raised:
        log.warning(
            failed + " and %d docs were cut off at the time bound; both are marked in the "
            "logged samples",
            raised,
            len(records),
            cut_off,
        )
    return records


def process_results(doc: dict, results: list[dict]) -> dict:
    """OLMES's metrics from the filter's record."""
    return level_scores(results[0], checkers.INSTRUCTION_TYPES)


def level_scores(record: dict, types) -> dict:
    """The metrics of a verdict record, strict and loose: prompt- and instruction-level
    accuracy, and for each of `types` the verdicts of that type's occurrences in this doc (an
    empty list when the doc has none)."""
    ids = record["instruction_id_list"]
    scores = {}
    for level in LEVELS:
        verdicts = record[level]
        scores[f"prompt_level_{level}_acc"] = float(all(verdicts))
        scores[f"inst_level_{level}_acc"] = list(verdicts)
        for iid in types:
            scores[f"{iid}_{level}_acc"] = [v for i, v in zip(ids, verdicts) if i == iid]
    return scores


def micro_mean(items: list[list[bool]]) -> float | None:
    """Aggregation of the list metrics: the mean over all pooled verdicts (OLMES's micro
    average); None when no evaluated doc has the instruction (possible with --limit)."""
    pooled = [verdict for doc_verdicts in items for verdict in doc_verdicts]
    return sum(pooled) / len(pooled) if pooled else None
