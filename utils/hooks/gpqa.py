"""lm-eval hooks for GPQA (`tasks/gpqa`): OLMES `gpqa:0shot_cot::tulu3` (`gpqa_cot_tulu`) and
`gpqa:0shot_cot::llama3.1` (`gpqa_cot_llama3`).

Data: `Idavidrein/gpqa`, config `gpqa_main`, split `train` (448 rows; gated on the hub). The
four answers are OLMES's `GPQA._process_doc`: each `preprocess`ed, in the order incorrect 1-3,
correct, shuffled by `random.Random(111 + row)` where `row` is the row's index in the split
(read from its doc key), and the label is the letter where the correct answer landed (the FIRST
equal text, as `list.index`). One user turn: description + query + final instruction.

GPQA's authors ask that its questions never appear in plain text online: nothing here logs a
question; the tests compare hashes.
"""

from __future__ import annotations

import random
import re

from ..scoring import mc_cot_answers

SHUFFLE_SEED = 111  # OLMES's `answer_shuffling_seed`
LETTERS = "ABCD"
ANSWER_FIELDS = ("Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3", "Correct Answer")
BRACKETED = re.compile(r"\[.*?\]")

TULU_DESCRIPTION = (
    "Answer the following multiple-choice question by giving the correct answer letter in "
    "parentheses. Provide CONCISE reasoning for the answer, and make sure to finish the response "
    'with "Therefore, the answer is (ANSWER_LETTER)" where (ANSWER_LETTER) is one of (A), (B), '
    "(C), (D).\n\n"
)
TULU_FINAL = (
    "\n\nAnswer the above question and REMEMBER to finish your response with the exact phrase "
    '"Therefore, the answer is (ANSWER_LETTER)" where (ANSWER_LETTER) is one of (A), (B), (C), '
    "(D)."
)
LLAMA3_DESCRIPTION = (
    "Given the following question and four candidate answers (A, B, C and D), "
    "choose the best answer.\n\n"
)
LLAMA3_FINAL = (
    "\n\n- For simple problems:\nDirectly provide the answer with minimal explanation.\n\n"
    "- For complex problems:\nUse this step-by-step format:\n## Step 1: [Concise description]\n"
    "[Brief explanation]\n## Step 2: [Concise description]\n[Brief explanation]\n\n"
    "Regardless of the approach, always conclude with:\nThe best answer is "
    "[the_answer_letter].\nwhere the [the_answer_letter] is one of A, B, C or D.\n\n"
    "Let's think step by step."
)


def preprocess(text: str | None) -> str:
    """OLMES `GPQA._preprocess`: a missing answer is " "; " [title]" becomes ". ", bracketed
    text is dropped, and one pass turns double spaces into single ones."""
    if text is None:
        return " "
    text = text.strip().replace(" [title]", ". ")
    return BRACKETED.sub("", text).replace("  ", " ")


def row_index(doc: dict) -> int:
    """The row of a doc in its split, from its key `Idavidrein__gpqa/gpqa_main/train#<row>`."""
    return int(doc["doc_key"].rsplit("#", 1)[1])


def shuffled_choices(doc: dict, row: int) -> tuple[list[str], str]:
    """(the four answers in OLMES's shuffled order, the correct one's letter)."""
    choices = [preprocess(doc[field]) for field in ANSWER_FIELDS]
    random.Random(SHUFFLE_SEED + row).shuffle(choices)
    return choices, LETTERS[choices.index(preprocess(doc["Correct Answer"]))]


def with_choices(doc: dict) -> dict:
    choices, label = shuffled_choices(doc, row_index(doc))
    return {"choices": choices, "label": label}


def process_docs(dataset):
    """Adds OLMES's shuffled `choices` and the gold `label` to every doc."""
    return dataset.map(with_choices)


def query(doc: dict) -> str:
    lines = "".join(f" ({letter}) {choice}\n" for letter, choice in zip(LETTERS, doc["choices"]))
    return f"Question: {doc['Question']}\nChoices:\n{lines}"


def doc_to_text_tulu(doc: dict) -> str:
    return TULU_DESCRIPTION + query(doc) + TULU_FINAL


def doc_to_text_llama3(doc: dict) -> str:
    return LLAMA3_DESCRIPTION + query(doc) + LLAMA3_FINAL


def doc_to_target(doc: dict) -> str:
    return doc["label"]


def gpqa_scores(found: dict, gold: str) -> dict:
    """OLMES's GPQA metrics (no `exact_match_simple`) and `exact_match_strict`."""
    scores = mc_cot_answers.scores(found, gold)
    del scores["exact_match_simple"]
    return scores


def process_results_tulu(doc: dict, results: list[str]) -> dict:
    return gpqa_scores(mc_cot_answers.extract_gpqa(results[0]), doc["label"])


def process_results_llama3(doc: dict, results: list[str]) -> dict:
    return gpqa_scores(mc_cot_answers.extract_gpqa_llama3(results[0]), doc["label"])
