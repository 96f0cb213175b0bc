"""lm-eval hooks for DeepMind Mathematics (`tasks/deepmind_math`, OLMES
`deepmind_math:0shot_cot::tulu3`).

Data: OLMES's own 100-problem sample per category (not the hub's 10,000-problem test split),
shipped with the pack as OLMES ships it (`tasks/deepmind_math/data/<category>/test.jsonl.gz`,
byte for byte, Apache-2.0), so no download is needed. Scoring (sympy) happens once for all docs,
in parallel, in the `score_docs` filter, each doc under a hard time bound
(`evalpack.core.bounded`); `process_results` only reads the verdict records.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import zlib

import datasets

from ..core.bounded import bounded_records
from ..core.data import DataError, with_keys
from ..core.resources import tasks_dir
from ..scoring.deepmind_answers import score_deepmind

log = logging.getLogger(__name__)

DATASET = "olmes/deepmind_math_sample100"  # doc keys: olmes__deepmind_math_sample100/<cat>/test#i
DESCRIPTION = "Solve the following math problem efficiently:\n"
FINAL_DESCRIPTION = (
    '\n\nShow your work and conclude with the exact phrasing "Therefore, the final answer is '
    '[answer]. I hope it is correct." where [answer] is just the final number or expression that '
    'solves the problem. E.g., if the answer is 6, conclude with "Therefore, the final answer is '
    '6. I hope it is correct."\nNote the formatting for the following answer types:\n- If the '
    "answer is a list (e.g., when there are two solutions to an equation), unless otherwise "
    "specified, present the solutions in a list separated by commas ordering them from the "
    "smallest to biggest  e.g.: 2, 10\n- Powers should be written with **, for instance x to the "
    "power of 2 should be written as x**2\n- Use * for multiplication, e.g.: 2*x"
)
SYMPY_CALL_TIMEOUT = 5.0  # soft bound on the sympy comparison of one doc (CPU time, SIGPROF)
DOC_TIMEOUT = 20.0  # hard bound on all scoring of one doc, enforced by killing its worker
METRICS = ("exact_match", "answer_format_correct", "answer_parse_error")


def data_file(category: str):
    return tasks_dir() / "deepmind_math" / "data" / category / "test.jsonl.gz"


def unwrap(text: str) -> str:
    """OLMES's clean-up of the hub's `b'...\\n'` wrappers (a `b"..."` one is left as it is)."""
    return re.sub("\\\\n'$", "", re.sub("^b'", "", text))


def read_sample(category: str) -> list[dict]:
    """The category's 100 rows: OLMES's doc fields (`question`, `answer` unwrapped) and the
    category and its area (the part before "__")."""
    file = data_file(category)
    if not file.is_file():
        raise DataError(f"DeepMind Mathematics: no category {category!r} (looked for {file})")
    with gzip.open(file, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    area = category.split("__")[0]
    return [
        {
            "question": unwrap(row["question"]),
            "answer": unwrap(row["answer"]),
            "category": category,
            "area": area,
        }
        for row in rows
    ]


def load(category: str, **_metadata) -> datasets.DatasetDict:
    """`custom_dataset` hook: one category's sample, from the copy shipped with the pack."""
    rows = with_keys(read_sample(category), DATASET, category, "test")
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def doc_to_text(doc: dict) -> str:
    """OLMES's single user turn (`cot_style: plain`)."""
    return DESCRIPTION + doc["question"].strip() + FINAL_DESCRIPTION


def doc_seed(doc: dict) -> int:
    """The fixed seed of a doc's random point (`check_equal`): its key's CRC-32."""
    return zlib.crc32(doc["doc_key"].encode("utf-8"))


def _score_one(job: tuple[str, str, int]) -> dict:
    completion, gold, seed = job
    record = score_deepmind(completion, gold, seed=seed, sympy_timeout=SYMPY_CALL_TIMEOUT)
    return {**record, "gold": gold}


def unscored_record(gold: str, reason: str) -> dict:
    """The verdict of a doc whose scoring was cut off: 0, the reason kept."""
    return {
        "exact_match": 0,
        "answer_format_correct": 0.0,
        "answer_parse_error": 0,
        "model_answer": None,
        "gold": gold,
        "scoring_failure": reason,
    }


def score_docs(resps: list[list[str]], docs: list[dict]) -> list[dict]:
    """Custom filter: the first sample of every doc scored, in parallel, each doc bounded."""
    jobs = [(samples[0], doc["answer"], doc_seed(doc)) for samples, doc in zip(resps, docs)]
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
    timed_out = sum("timeout" in r for r in records)
    refused = sum("refused" in r for r in records)
    if cut_off or timed_out:
        log.warning(
            "DeepMind Mathematics scoring: %d of %d docs hit the sympy time bound, %d "
            "were cut off entirely; they score 0 and are marked in the logged samples",
            timed_out,
            len(records),
            cut_off,
        )
    if refused:
        log.warning(
            "DeepMind Mathematics scoring: %d answers were not given to sympy (they "
            "would run code, not build an expression); marked `refused` in the logged "
            "samples",
            refused,
        )


def process_results(doc: dict, results: list[dict]) -> dict:
    """Read the filter's verdict."""
    verdict = results[0]
    return {metric: float(verdict[metric]) for metric in METRICS}
