"""BIG-Bench Hard answer extraction and comparison, as OLMES does it and as it was meant.

* `extract_cot_v1(..., flex=False)`: OLMES `bbh:cot-v1`, bit for bit. The subtask's answer
  pattern goes through a cascade of templates; the FIRST template with any match wins and its
  LAST match is taken. For multiple-choice subtasks OLMES's bare-letter template is the
  non-raw string "\\b([A-Z])\\b", whose `\\b` are backspace characters: it never matches real
  text, so "So the answer is A." finds no `(A)` there. Kept.
* `extract_cot_v1(..., flex=True)`: the intended behaviour for multiple choice. The two
  explicit templates ("So the answer is X", "answer is X") also accept a bare capital letter,
  optionally bold or in `$`, and the bare-letter fallback is a real word-boundary match; a
  single letter is then written `(X)`. `(A)` and `A` compare equal either way (punctuation is
  ignored), so flex differs only in what it finds. For word_sorting, flex also reads words
  with an apostrophe or `&` ("won't", "r&d"), which OLMES's `[a-z ]+` cuts short (15 of the
  250 real targets). Other subtasks are unchanged.
* `extract_cot_release` / `exact_match_release`: the extractor of OLMES at the Tülu-3 release
  (`bbh:cot`): the rest of the line after the first case-sensitive "the answer is ", minus
  the line's last character, periods stripped; compared exactly.
"""

from __future__ import annotations

import re
import string

MULTIPLE_CHOICE = {
    "date_understanding", "disambiguation_qa", "geometric_shapes", "hyperbaton",
    "logical_deduction_five_objects", "logical_deduction_seven_objects",
    "logical_deduction_three_objects", "movie_recommendation", "penguins_in_a_table",
    "reasoning_about_colored_objects", "ruin_names", "salient_translation_error_detection",
    "snarks", "temporal_sequences", "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects", "tracking_shuffled_objects_three_objects",
}
PATTERNS = {
    "boolean_expressions": r"[tT]rue|[fF]alse",
    "causal_judgement": r"[yY]es|[nN]o",
    "sports_understanding": r"[yY]es|[nN]o",
    "web_of_lies": r"[yY]es|[nN]o",
    "navigate": r"[nN]o|[yY]es",
    "formal_fallacies": r"[iI]nvalid|[vV]alid",
    "multistep_arithmetic_two": r"-?\d+",
    "object_counting": r"\d+",
    "dyck_languages": r"[\]\)\}\> ]+",
    "word_sorting": r"[a-z ]+",
}
MC_PATTERN = r"\([A-Z]\)"
# OLMES's bare-letter template, a non-raw string: "\b" is the backspace character here.
OLMES_BARE_LETTER = "\b([A-Z])\b"
FLEX_BARE_LETTER = r"\b([A-Z])\b"
# The letter alone, case-sensitive inside (?i) templates, not part of a longer word.
FLEX_MC_ANSWER = r"\([A-Z]\)|(?-i:[A-Z])(?![A-Za-z0-9])"
DELIMITERS = [("$", "$"), ("\\(", "\\)"), ("(", ")"), ("**", "**"), ("***", "***"),
              ("\\[", "\\]"), ("'", "'"), ("`", "`"), ('"', '"')]
PUNCTUATION = str.maketrans("", "", string.punctuation)


def answer_pattern(subtask: str) -> str:
    return MC_PATTERN if subtask in MULTIPLE_CHOICE else PATTERNS[subtask]


FLEX_WORDS = r"[a-z '&]+"


def _templates(subtask: str, flex: bool) -> list[str]:
    ans = FLEX_WORDS if flex and subtask == "word_sorting" else answer_pattern(subtask)
    explicit = FLEX_MC_ANSWER if flex and subtask in MULTIPLE_CHOICE else ans
    lead = r"[\s*$]*" if flex and subtask in MULTIPLE_CHOICE else ""
    templates = [
        rf"(?i)So the answer is {lead}({explicit})\.?",
        rf"(?i)answer is {lead}({explicit})",
        rf"(?i)answer:.*?({ans})",
        rf"(?i)answer\b.*?({ans})",
        rf"({ans})",
    ]
    if subtask in MULTIPLE_CHOICE:
        templates.append(FLEX_BARE_LETTER if flex else OLMES_BARE_LETTER)
    templates.append(rf"(?i)({ans})")
    return templates


def _strip_delimiters(answer: str, pattern: str) -> str:
    for left, right in DELIMITERS:
        if re.match(pattern, left):
            continue
        if len(answer) >= len(left) + len(right) and answer.startswith(left) \
                and answer.endswith(right):
            answer = answer[len(left): len(answer) - len(right)].strip()
    return answer


def extract_cot_v1(completion: str, subtask: str, flex: bool = False) -> str:
    """The answer OLMES cot-v1 (or, with `flex`, the intended rule) reads from a completion;
    "" when nothing matches."""
    for template in _templates(subtask, flex):
        matches = re.findall(template, completion)
        if matches:
            answer = matches[-1].strip()
            break
    else:
        return ""
    answer = _strip_delimiters(answer, answer_pattern(subtask))
    if subtask in MULTIPLE_CHOICE and len(answer) == 1:
        answer = f"({answer})"
    return answer


def exact_match_cot_v1(answer: str, target: str, subtask: str) -> float:
    """Case-insensitive comparison with ASCII punctuation removed (kept for dyck_languages)."""
    def canonical(text: str) -> str:
        text = text.strip().lower()
        return text if subtask == "dyck_languages" else text.translate(PUNCTUATION).strip()

    return float(canonical(answer) == canonical(target))


def extract_cot_release(completion: str) -> str:
    """Release-time extractor: after the first "the answer is " (case-sensitive), the rest of
    that line without its last character, periods stripped from both ends."""
    match = re.search(r"(?<=the answer is )(.*)(?=.)", completion)
    return match.group(1).strip(".") if match else ""


def exact_match_release(answer: str, target: str) -> float:
    return float(answer.strip() == target.strip())


def score_bbh(completion: str, target: str, subtask: str) -> dict:
    """Every BBH extractor on one completion, as a plain record."""
    answer = extract_cot_v1(completion, subtask)
    flex = extract_cot_v1(completion, subtask, flex=True)
    release = extract_cot_release(completion)
    return {
        "answer": answer,
        "exact_match": exact_match_cot_v1(answer, target, subtask),
        "answer_flex": flex,
        "exact_match_flex": exact_match_cot_v1(flex, target, subtask),
        "answer_release": release,
        "exact_match_release": exact_match_release(release, target),
    }
