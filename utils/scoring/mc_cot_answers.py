"""OLMES's answer extraction for the 0-shot chain-of-thought multiple-choice tasks of
`tulu_3_unseen` (AGIEval English, GPQA), as small pure functions of the completion text.

Each extractor returns OLMES's `{"answer": letter or "", "answer_format_correct": 1.0/0.5/0.0}`:

* 1.0: the configured exact phrase matched (`answer_format_regex`; findall, LAST match).
* 0.5: it did not, and a first fallback found a letter.
* 0.0: only the last-resort letter search ran (which may still find a letter, or "").

Quirks kept because they are OLMES's verdicts (each has a test):

* AGIEval: the phrase class is `[A-F]` (an "(F)" is format-correct); its fallback looks for
  `(X)` in the text between the LAST lower-case "the answer is " and the next "." on that line,
  and, if there is no such phrase, in the whole completion (still scored 0.0); the last resort
  is the last capital A-E ANYWHERE, inside words too ("DATA" reads as A).
* GPQA: the fallbacks are the last `(X)` anywhere, then the FIRST "The correct answer is: X";
  the last resort is the last standalone capital A-D (`\\bX\\b`).
* GPQA Llama-3.1: the phrase `The best answer is (\\(?[A-D])` has no word boundary, so "The best
  answer is Definitely C" reads as D.
* Parentheses are removed from the answer; the comparison ignores case and punctuation
  (Hugging Face evaluate's `exact_match`, as OLMES's `ExactMatch`).

`exact_match_strict` (not OLMES's) counts an answer only when it came from the exact phrase.
"""

from __future__ import annotations

import re
import string

AGIEVAL_PHRASE = re.compile(r"Therefore, the answer is \(([A-F])\)")
GPQA_PHRASE = re.compile(r"Therefore, the answer is \(([A-D])\)")
GPQA_LLAMA3_PHRASE = re.compile(r"The best answer is (\(?[A-D])")

AGIEVAL_AFTER_PHRASE = re.compile(r"(?<=the answer is )(.*?)(?=\.)")
AGIEVAL_PARENTHESISED = re.compile(r"\([A-E]\)")
AGIEVAL_ANY_CAPITAL = re.compile(r"[A-E]")
GPQA_PARENTHESISED = re.compile(r"\(([A-D])\)")
GPQA_CORRECT_ANSWER = re.compile(r"(?<=The correct answer is: )([A-D])")
GPQA_STANDALONE = re.compile(r"\b([A-D])\b")

PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)


def last_match(pattern: re.Pattern, text: str) -> str | None:
    """The last `findall` result of `pattern` in `text` (its group when it has one)."""
    found = pattern.findall(text)
    return found[-1] if found else None


def without_parentheses(answer: str) -> str:
    return answer.replace("(", "").replace(")", "")


def result(answer: str, answer_format_correct: float) -> dict:
    return {"answer": without_parentheses(answer), "answer_format_correct": answer_format_correct}


def extract_agieval(text: str) -> dict:
    """OLMES `GenericAGIEval._extract_answer` with `agi_eval_*:0shot_cot::tulu3`'s phrase."""
    phrase = last_match(AGIEVAL_PHRASE, text)
    if phrase is not None:
        return result(phrase, 1.0)
    fmt = 0.5
    scope = last_match(AGIEVAL_AFTER_PHRASE, text)
    if scope is None:
        fmt, scope = 0.0, text
    letter = last_match(AGIEVAL_PARENTHESISED, scope)
    if letter is not None:
        return result(letter, fmt)
    return result(last_match(AGIEVAL_ANY_CAPITAL, text) or "", 0.0)


def last_standalone_letter(text: str) -> str | None:
    """OLMES's `re.findall(".*\\\\b([A-D])\\\\b", text)[-1]`: one greedy match per line, each
    the line's last standalone letter, so the last of them is the text's last standalone letter.
    Computed in linear time (OLMES's pattern is quadratic on a long line without a letter)."""
    return last_match(GPQA_STANDALONE, text)


def extract_gpqa(text: str, phrase: re.Pattern = GPQA_PHRASE) -> dict:
    """OLMES `GPQA._extract_answer` with a task's `answer_format_regex` (`phrase`)."""
    found = last_match(phrase, text)
    if found is not None:
        return result(found, 1.0)
    letter = last_match(GPQA_PARENTHESISED, text)
    if letter is None:
        first = GPQA_CORRECT_ANSWER.search(text)
        letter = first.group(1) if first else None
    if letter is not None:
        return result(letter, 0.5)
    return result(last_standalone_letter(text) or "", 0.0)


def extract_gpqa_llama3(text: str) -> dict:
    """`gpqa:0shot_cot::llama3.1`: the same cascade after the Llama-3.1 phrase."""
    return extract_gpqa(text, GPQA_LLAMA3_PHRASE)


def exact_match(answer: str, gold: str, ignore_punctuation: bool = True) -> float:
    """OLMES `ExactMatch.exact_match` (Hugging Face evaluate's, `ignore_case=True`)."""

    def norm(value: str) -> str:
        value = value.lower()
        return value.translate(PUNCTUATION_TABLE) if ignore_punctuation else value

    return float(norm(answer) == norm(gold))


def scores(found: dict, gold: str) -> dict:
    """The per-doc metrics of one extraction: OLMES's `exact_match`, `exact_match_simple`
    (plain string equality) and `answer_format_correct`, and `exact_match_strict`."""
    match = exact_match(found["answer"], gold)
    return {
        "exact_match": match,
        "exact_match_simple": float(found["answer"] == gold),
        "answer_format_correct": found["answer_format_correct"],
        "exact_match_strict": match if found["answer_format_correct"] == 1.0 else 0.0,
    }
