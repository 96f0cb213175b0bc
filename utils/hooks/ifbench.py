"""lm-eval hooks for IFBench (`tasks/ifbench`), OLMES `ifbench::tulu` and `ifbench::olmo3:adapt`.

As for IFEval (`evalpack.hooks.ifeval`): the `score_docs` filter judges every doc's response on
all its instructions with the pack's IFBench checkers, in parallel worker processes, each doc
under a hard time bound, and leaves one verdict record per doc; `process_results` turns it into
lm-eval's IFEval metrics and one accuracy per instruction type (OLMES's
`output_individual_metrics`), pooled by `micro_mean`.
"""

from __future__ import annotations

from ..core import data
from ..scoring.ifbench import checkers, registry
from .ifeval import judge_first_responses, level_scores, micro_mean

DOC_TIMEOUT = 180.0  # hard wall-clock bound on judging one doc (all instructions, both levels)

__all__ = ["load", "micro_mean", "process_results", "score_docs"]


def load(**kwargs):
    """`custom_dataset` hook: the dataset (`evalpack.core.data.load`), every row checked to
    carry a prompt, known instruction ids and, per instruction, arguments its checker takes."""
    dataset = data.load(**kwargs)
    for split, rows in dataset.items():
        for row_index, row in enumerate(rows):
            problem = row_problem(row)
            if problem:
                raise data.DataError(
                    f"{kwargs.get('path')} split {split!r} row {row_index}: {problem}"
                )
    return dataset


def row_problem(row: dict) -> str | None:
    """What is wrong with one IFBench row, naming the field, or None."""
    if not isinstance(row.get("prompt"), str):
        return "field 'prompt' is not a string"
    ids, kwargs = row.get("instruction_id_list"), row.get("kwargs")
    if not isinstance(ids, list) or not ids:
        return "field 'instruction_id_list' is not a non-empty list"
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        return f"field 'kwargs' must be a list of {len(ids)} mappings, one per instruction"
    for iid, entry in zip(ids, kwargs):
        if entry is not None and not isinstance(entry, dict):
            return "field 'kwargs' holds an entry that is not a mapping"
        try:
            registry.bind(iid, entry)
        except registry.ArgumentError as exc:
            return f"field 'instruction_id_list'/'kwargs': {exc}"
    return None


def score_docs(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: the first response of every doc judged on all its instructions."""
    checkers.preload()  # NLTK data and the tagger, loaded once here, before the workers fork
    return judge_first_responses(
        checkers.score_response,
        resps,
        docs,
        DOC_TIMEOUT,
        "IFBench: a checker failed or gave up on %d of %d docs (counted as not followed)",
    )


def process_results(doc: dict, results: list[dict]) -> dict:
    """The IFEval metrics from the filter's record, plus `<type>_{strict,loose}_acc` for each of
    the 58 instruction types: that type's verdicts in this doc (an empty list when it has
    none)."""
    return level_scores(results[0], registry.INSTRUCTION_TYPES)
