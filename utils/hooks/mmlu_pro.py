"""lm-eval hooks for MMLU-Pro (`tasks/mmlu_pro`): OLMES `mmlu_pro_<category>:0shot_cot::tulu3`
(group `mmlu_pro_cot_tulu`) and `mmlu_pro_<category>:cot::llama3.1` (group
`mmlu_pro_cot_llama3`), allenai/olmes 5a51f50 (`oe_eval/tasks/oe_eval_tasks/mmlu_pro.py`,
`oe_eval/configs/tasks.py`).

Data: hub `TIGER-Lab/MMLU-Pro`, one task per `category`; each category's docs are the rows of
the whole `test` split with that category, in file order, keeping the doc key of the whole
split (`TIGER-Lab__MMLU-Pro/default/test#<row>`, OLMES's reference key). The split is read once
per process and shared by the 28 tasks.

tulu3: one user turn, the description + `Question: q\\n` + ` (A) option\\n` lines + the final
instruction. llama3.1: 5 shots, the category's `validation` rows in file order (exactly 5 per
category), as user/assistant turns; user turns are OLMES's `make_mcq_prompt` with the Llama-3.1
question and answer prefixes, assistant turns the row's `cot_content` without its
"A: Let's think step by step." (stripped, as OLMES's `concat_with_space` does).
"""

from __future__ import annotations

import os
from functools import cache

import datasets

from ..core import data
from ..scoring.mmlu_pro_answers import LLAMA31_FORMAT, TULU3_FORMAT, score

LETTERS = "ABCDEFGHIJKLMNO"  # OLMES's labels; MMLU-Pro has 3 to 10 options
TULU3_DESCRIPTION = (
    "Answer the following multiple-choice question by giving the correct answer letter in "
    "parentheses. Provide CONCISE reasoning for the answer, and make sure to finish the response "
    'with "Therefore, the answer is (ANSWER_LETTER)" where (ANSWER_LETTER) is one of (A), (B), '
    "(C), (D), (E), etc.\n\n"
)
TULU3_FINAL = (  # one leading newline: the query already ends with one
    "\nAnswer the above question and REMEMBER to finish your response with the exact phrase "
    '"Therefore, the answer is (ANSWER_LETTER)" where (ANSWER_LETTER) is one of (A), (B), (C), '
    "(D), (E), etc."
)
LLAMA31_QUESTION_PREFIX = (
    "Given the following question and candidate answers, choose the best answer.\nQuestion: "
)
LLAMA31_ANSWER_PREFIX = (
    '\nYour response should end with "The answer is [the_answer_letter]." where the '
    "[the_answer_letter] is a letter from the provided choices.\n\nLet's think step by step."
)
COT_OPENING = "A: Let's think step by step."


@cache
def _split(
    path: str, name: str | None, split: str, data_dir: str | None, revision: str | None
) -> datasets.Dataset:
    """One whole split with its doc keys (`data_dir`: the mirror in use, part of the key)."""
    return data.load_split(path, name, split, revision)


def category_rows(
    path: str, name: str | None, split: str, category: str, revision: str | None = None
) -> datasets.Dataset:
    rows = _split(path, name, split, os.environ.get(data.DATA_DIR_ENV), revision)
    picked = [i for i, value in enumerate(rows["category"]) if value == category]
    if not picked:
        raise data.DataError(f"dataset {path!r} split {split!r}: no row has category {category!r}")
    return rows.select(picked)


def load(
    path: str,
    category: str,
    name: str | None = None,
    splits: tuple[str, ...] = ("test",),
    revision: str | None = None,
    **_metadata,
) -> datasets.DatasetDict:
    """`custom_dataset` hook: the rows of `category` in each named split (OLMES's
    `test_docs` / `validation_docs` filter), from the hub at `revision`."""
    return datasets.DatasetDict(
        {split: category_rows(path, name, split, category, revision) for split in splits}
    )


def doc_to_text_tulu3(doc: dict) -> str:
    options = "".join(f" ({LETTERS[i]}) {option}\n" for i, option in enumerate(doc["options"]))
    return TULU3_DESCRIPTION + f"Question: {doc['question']}\n{options}" + TULU3_FINAL


def doc_to_text_llama31(doc: dict) -> str:
    """OLMES's `make_mcq_prompt`: prefix, question, ` A. option` lines, answer prefix."""
    options = "\n".join(f" {LETTERS[i]}. {option}" for i, option in enumerate(doc["options"]))
    return f"{LLAMA31_QUESTION_PREFIX}{doc['question']}\n{options}\n{LLAMA31_ANSWER_PREFIX}"


def doc_to_target(doc: dict) -> str:
    return doc["answer"]


def fewshot_target_llama31(doc: dict) -> str:
    """A shot's assistant turn: its worked answer without the opening line."""
    return doc["cot_content"].replace(COT_OPENING, "").strip()


def _results(doc: dict, completion: str, format_regex: str, other_mean: str) -> dict:
    found = score(completion, doc["answer"], format_regex)
    return {
        "exact_match": found["exact_match"],
        other_mean: found["exact_match"],
        "exact_match_simple": found["exact_match_simple"],
        "answer_format_correct": found["answer_format_correct"],
    }


def process_results_tulu3(doc: dict, results: list[str]) -> dict:
    """The group's `exact_match` is the macro mean (OLMES's primary), `exact_match_micro` the
    mean over docs."""
    return _results(doc, results[0], TULU3_FORMAT, "exact_match_micro")


def process_results_llama31(doc: dict, results: list[str]) -> dict:
    """The group's `exact_match` is the mean over docs (OLMES's primary: micro),
    `exact_match_macro` the mean over categories."""
    return _results(doc, results[0], LLAMA31_FORMAT, "exact_match_macro")
