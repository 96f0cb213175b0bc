"""MMLU-Pro chain-of-thought answers: OLMES's `GenericMMLUPro_CoT._extract_answer` and its
`ExactMatch(ignore_case=True, ignore_punctuation=False)`, quirks included (allenai/olmes 5a51f50,
`oe_eval/tasks/oe_eval_tasks/mmlu_pro.py`, `oe_eval/metrics/metric.py`).

The cascade, first rule that finds something wins:

1. the spec's answer-format regex (`TULU3_FORMAT`, `LLAMA31_FORMAT`), case-sensitive, LAST
   occurrence (`re.findall`); `answer_format_correct` 1.0. When it finds nothing the format
   level drops to 0.5 and the fallbacks run:
2. `(?i)answer is:?\\s*\\(?([A-J])\\)?` with `re.search`: the FIRST occurrence, and
   case-insensitive, so "the answer is definitely ..." reads as "d" (a lower-case answer, which
   `exact_match` compares ignoring case and `exact_match_simple` does not);
3. `.*[aA]nswer:\\s*([A-J])` with `re.search`: without DOTALL this is the LAST "answer:" on the
   FIRST line that has one followed by a letter (the letter may sit on a later line: `\\s`
   crosses newlines);
4. `answer_format_correct` 0 and the last standalone capital A-J anywhere (`.*\\b([A-J])\\b`
   with `re.findall`, last element): a pronoun "I" counts; "" when there is none.

OLMES then strips parentheses from the answer; no captured group can hold one, so that step is a
no-op here. Rules 3 and 4 are computed in linear time (the literal regexes backtrack
quadratically on a long line); the tests check them against the literal regexes.
"""

from __future__ import annotations

import re

# OLMES's `metric_kwargs.answer_format_regex` of each spec (configs/tasks.py)
TULU3_FORMAT = r"Therefore, the answer is \(([A-J])\)"  # mmlu_pro:0shot_cot::tulu3
LLAMA31_FORMAT = r"The answer is:?\s*\(?([A-J])\b"  # mmlu_pro:cot::llama3.1

ANSWER_IS = re.compile(r"(?i)answer is:?\s*\(?([A-J])\)?")
ANSWER_COLON_AT = re.compile(r"(?=[aA]nswer:\s*([A-J]))")  # every start, overlapping
STANDALONE_LETTER = re.compile(r"\b([A-J])\b")


def format_answer(text: str, format_regex: str) -> str | None:
    """Rule 1: the last match of the answer-format regex, or None."""
    matches = re.findall(format_regex, text)
    return matches[-1] if matches else None


def answer_is(text: str) -> str | None:
    """Rule 2: the first case-insensitive "answer is X", as written (upper or lower case)."""
    match = ANSWER_IS.search(text)
    return match.group(1) if match else None


def answer_colon(text: str) -> str | None:
    """Rule 3, `re.search(r".*[aA]nswer:\\s*([A-J])", text)`: the rightmost start on the first
    line (split at "\\n" only, as `.` is) holding a start."""
    found, line_end = None, -1
    for match in ANSWER_COLON_AT.finditer(text):
        if found is None:
            found, line_end = match.group(1), text.find("\n", match.start())
        elif line_end == -1 or match.start() < line_end:
            found = match.group(1)
        else:
            break
    return found


def last_standalone_letter(text: str) -> str:
    """Rule 4, the last element of `re.findall(r".*\\b([A-J])\\b", text)`, or ""."""
    letters = STANDALONE_LETTER.findall(text)
    return letters[-1] if letters else ""


def extract_answer(text: str, format_regex: str) -> dict:
    """OLMES's `_extract_answer` for a spec with an answer-format regex (both the pack's are):
    {"answer", "answer_format_correct"} (1.0, 0.5 or 0.0)."""
    answer = format_answer(text, format_regex)
    if answer is not None:
        return {"answer": answer, "answer_format_correct": 1.0}
    for rule in (answer_is, answer_colon):
        answer = rule(text)
        if answer is not None:
            return {"answer": answer, "answer_format_correct": 0.5}
    return {"answer": last_standalone_letter(text), "answer_format_correct": 0.0}


def score(text: str, label: str, format_regex: str) -> dict:
    """OLMES's per-doc values: `exact_match` (equal ignoring case: Hugging Face evaluate's
    exact match with ignore_case, punctuation kept), `exact_match_simple` (equal as written),
    `answer_format_correct`, and the `model_answer` they compared."""
    found = extract_answer(text, format_regex)
    answer = found["answer"]
    return {
        "exact_match": float(answer.lower() == label.lower()),
        "exact_match_simple": float(answer == label),
        "answer_format_correct": found["answer_format_correct"],
        "model_answer": answer,
    }
