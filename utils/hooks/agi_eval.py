"""lm-eval hooks for AGIEval English (`tasks/agi_eval`), OLMES `agi_eval_<t>:0shot_cot::tulu3`.

OLMES does not read AGIEval from the hub but from its own copy of AGIEval's v1 files
(`oe_eval/dependencies/AGIEval/data/v1/<t>.jsonl`); the pack ships the same 8 files, byte for
byte, in `tasks/agi_eval/data/v1/` (package data), so no hub and no mirror is needed. Docs get
the mirror's key `ruixiangcui__AGIEval/<t>/test#<row>` (the OLMES reference files' key).

The prompt is OLMES `GenericAGIEval._process_doc` with `prompt_style: no_answer_prefix`: one
user turn, description + query + final instruction; the query is cleaned by `clean_text`.
"""

from __future__ import annotations

import re

import datasets

from ..core import data
from ..core.resources import tasks_dir
from ..scoring import mc_cot_answers

DATA_PATH = "ruixiangcui/AGIEval"  # the doc keys' dataset name (the mirror's folder)
FIELDS = ("passage", "question", "options", "label")  # what OLMES reads at 0 shots
LETTERS = "ABCDE"

DESCRIPTION = (
    "Answer the following multiple-choice question by giving the correct answer letter in "
    "parentheses. Provide CONCISE reasoning for the answer, and make sure to finish the response "
    'with "Therefore, the answer is (ANSWER_LETTER)" where (ANSWER_LETTER) is one of (A), (B), '
    "(C), (D), (E), etc.\n\n"
)
FINAL_INSTRUCTION = (
    "\n\nAnswer the above question and REMEMBER to finish your response with the exact phrase "
    '"Therefore, the answer is (ANSWER_LETTER)" where (ANSWER_LETTER) is one of (A), (B), (C), '
    "(D), (E), etc."
)
CHOICE_PREFIX = re.compile(r"^\s*\([A-E]\)\s*|^\s*[A-E][.?]?\s*")
LETTER_GLUED = re.compile(r"(\([A-G]\))(\w)")
BLANK_LINES = re.compile(r"\n{2,}")


def data_file(name: str):
    return tasks_dir() / "agi_eval" / "data" / "v1" / f"{name}.jsonl"


def load(name: str, **_metadata) -> datasets.DatasetDict:
    """`custom_dataset` hook: the packaged v1 file of task `name` as the `test` split."""
    file = data_file(name)
    if not file.is_file():
        raise data.DataError(f"AGIEval task {name!r}: no packaged data file {file}")
    rows = []
    for lineno, row in data.numbered_jsonl(file):
        missing = [field for field in FIELDS if field not in row]
        if missing:
            raise data.DataError(f"{file}, line {lineno}: missing field(s) {', '.join(missing)}")
        rows.append({field: row[field] for field in FIELDS})
    keyed = data.with_keys(rows, DATA_PATH, name, "test")
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(keyed)})


def strip_choice_prefix(choice: str) -> str:
    """OLMES drops a leading "(A)" or "A." / "A?" / "A" from each option."""
    return CHOICE_PREFIX.sub("", choice)


def clean_text(text: str) -> str:
    """OLMES `_clean_text`: "(A)word" -> "(A) word"; runs of blank lines -> one newline."""
    return BLANK_LINES.sub("\n", LETTER_GLUED.sub(r"\1 \2", text))


def query(doc: dict) -> str:
    text = f"Passage: {doc['passage']}\n" if doc["passage"] else ""
    text += f"Question: {doc['question']}\n"
    text += "\n".join(
        f" ({letter}) {strip_choice_prefix(option)}"
        for letter, option in zip(LETTERS, doc["options"])
    )
    return clean_text(text)


def doc_to_text(doc: dict) -> str:
    return DESCRIPTION + query(doc) + FINAL_INSTRUCTION


def doc_to_target(doc: dict) -> str:
    return doc["label"]


def process_results(doc: dict, results: list[str]) -> dict:
    scores = mc_cot_answers.scores(mc_cot_answers.extract_agieval(results[0]), doc["label"])
    return {**scores, "exact_match_micro": scores["exact_match"]}
