"""BIG-Bench Hard answer extraction and comparison: OLMES's rules, the intended rules, and the
rule OLMES used at the Tülu-3 release.

Faithful (`extract_cot_v1(..., flex=False)`, OLMES `bbh:cot-v1`): the subtask's answer pattern
ANS is tried inside a cascade of templates; the FIRST template with any match wins and its LAST
match is the answer. Multiple-choice subtasks get an extra bare-letter template which OLMES wrote
as the non-raw string "\\b([A-Z])\\b": its `\\b` are backspace characters, so it never matches
real text and "So the answer is B." yields no answer at all (or an earlier "(A)" elsewhere in
the text). Kept. Then one enclosing delimiter pair of each kind is peeled off, and a single MC
letter is written back as "(X)".

Flex (`flex=True`), the intended behaviour; everything not listed is identical to faithful:

* MC, answer cues: right after "So the answer is", "answer is" and "answer:", a capital letter
  standing alone also counts, behind any spacing, punctuation or `\\boxed{`/`\\text{`:
  "So the answer is B.", "the answer is **B**", "Answer: $C$", "the answer is [D]",
  "So the answer is $\\boxed{A}$." all read as a letter. Lower-case letters do not ("the answer
  is a bit unclear"), nor a capital followed by a lower-case word ("the answer is I think",
  and also "the answer is B because ...").
* MC, last resort: a completion that is nothing but one capital letter (with punctuation or
  emphasis around it: "B", "B.", "**B**") is that letter. This replaces OLMES's bare-letter
  template instead of "fixing" it into a real `\\b([A-Z])\\b` anywhere in the text, which
  would read the pronoun in "I cannot determine ..." as option (I), an article "A", or a label
  ("side G") in a truncated derivation. It comes after the case-insensitive "(x)" template.
* word_sorting: words may contain "'" and "&" ("shouldn't", "r&d", "it&t"); OLMES's `[a-z ]+`
  cuts the list at them (15 of the 250 real targets contain one).
* "(A)" and "A" compare equal in both modes, since punctuation is removed before comparing.

Release (`extract_cot_release`, `exact_match_release`, OLMES `bbh:cot` at the Tülu-3 release):
the rest of the line after the first case-sensitive "the answer is ", minus the line's last
character, periods stripped from both ends; compared with the target as plain strings.
"""

from __future__ import annotations

import re
import string

MULTIPLE_CHOICE = frozenset(
    {
        "date_understanding",
        "disambiguation_qa",
        "geometric_shapes",
        "hyperbaton",
        "logical_deduction_five_objects",
        "logical_deduction_seven_objects",
        "logical_deduction_three_objects",
        "movie_recommendation",
        "penguins_in_a_table",
        "reasoning_about_colored_objects",
        "ruin_names",
        "salient_translation_error_detection",
        "snarks",
        "temporal_sequences",
        "tracking_shuffled_objects_five_objects",
        "tracking_shuffled_objects_seven_objects",
        "tracking_shuffled_objects_three_objects",
    }
)
MC_PATTERN = r"\([A-Z]\)"
OTHER_PATTERNS = {
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
FLEX_WORD_SORTING = r"[a-z '&]+"

# OLMES's template "\b([A-Z])\b" as written, a non-raw string: "\b" is the backspace U+0008.
OLMES_BARE_LETTER = "\b([A-Z])\b"
# Flex, after an answer cue: anything but letters and digits (a `\boxed{` or `\text{`, and the
# word "option" or "choice", count as one unit), then "(X)" or a capital letter that is neither
# the start of a longer word nor a word of a sentence ("I think", "A man", "A and B": the letter
# followed by a lower-case word), unless that word gives a reason ("B because it fits").
FLEX_CUE_GAP = r"(?:\\(?:boxed|text|textbf|mathrm)\{|(?:option|choice)\s+|[^A-Za-z0-9])*"
FLEX_CUE_ANSWER = r"\([A-Z]\)|(?-i:[A-Z](?![A-Za-z0-9])(?! +(?!(?:because|since|as)\b)[a-z]))"
FLEX_LETTER_ALONE = r"\A[^A-Za-z0-9]*([A-Z])[^A-Za-z0-9]*\Z"

# Pairs peeled off the extracted answer, in this order, one pair each.
DELIMITERS = (
    ("$", "$"),
    ("\\(", "\\)"),
    ("(", ")"),
    ("**", "**"),
    ("***", "***"),
    ("\\[", "\\]"),
    ("'", "'"),
    ("`", "`"),
    ('"', '"'),
)
NO_PUNCTUATION = str.maketrans("", "", string.punctuation)


def answer_pattern(subtask: str) -> str:
    """OLMES's answer regex for a BBH subtask."""
    return MC_PATTERN if subtask in MULTIPLE_CHOICE else OTHER_PATTERNS[subtask]


def _olmes_templates(ans: str, multiple_choice: bool) -> list[str]:
    templates = [
        rf"(?i)So the answer is ({ans})\.?",
        rf"(?i)answer is ({ans})",
        rf"(?i)answer:.*?({ans})",
        rf"(?i)answer\b.*?({ans})",
        rf"({ans})",
    ]
    if multiple_choice:
        templates.append(OLMES_BARE_LETTER)
    return templates + [rf"(?i)({ans})"]


def _flex_mc_templates() -> list[str]:
    return [
        rf"(?i)So the answer is\b{FLEX_CUE_GAP}({FLEX_CUE_ANSWER})\.?",
        rf"(?i)answer is\b{FLEX_CUE_GAP}({FLEX_CUE_ANSWER})",
        rf"(?i)answer:{FLEX_CUE_GAP}({FLEX_CUE_ANSWER})",
        rf"(?i)answer:.*?({MC_PATTERN})",
        rf"(?i)answer\b.*?({MC_PATTERN})",
        rf"({MC_PATTERN})",
        rf"(?i)({MC_PATTERN})",
        FLEX_LETTER_ALONE,
    ]


def _templates(subtask: str, flex: bool) -> list[str]:
    if not flex:
        return _olmes_templates(answer_pattern(subtask), subtask in MULTIPLE_CHOICE)
    if subtask in MULTIPLE_CHOICE:
        return _flex_mc_templates()
    if subtask == "word_sorting":
        return _olmes_templates(FLEX_WORD_SORTING, multiple_choice=False)
    return _olmes_templates(answer_pattern(subtask), multiple_choice=False)


def _last_match_of_first_template(text: str, templates: list) -> str | None:
    """A template is a pattern, or a function giving its `findall` in linear time."""
    for template in templates:
        matches = template(text) if callable(template) else re.findall(template, text)
        if matches:
            return matches[-1]
    return None


def _strip_delimiters(answer: str) -> str:
    # OLMES skips a pair whose left side the answer pattern matches; no BBH pattern matches any
    # left delimiter (tested), so every pair applies.
    for left, right in DELIMITERS:
        if (
            len(answer) >= len(left) + len(right)
            and answer.startswith(left)
            and answer.endswith(right)
        ):
            answer = answer[len(left) : len(answer) - len(right)].strip()
    return answer


def extract_cot_v1(completion: str, subtask: str, flex: bool = False) -> str:
    """The answer OLMES `bbh:cot-v1` reads from a completion (with `flex`, the intended
    reading: see the module docstring); "" when nothing matches."""
    return read_answer(completion, subtask, _templates(subtask, flex))


def read_answer(completion: str, subtask: str, templates: list) -> str:
    """The LAST match of the first of `templates` that matches, delimiters peeled off, a
    single MC letter written "(X)"; "" when none matches."""
    found = _last_match_of_first_template(completion, templates)
    if found is None:
        return ""
    answer = _strip_delimiters(found.strip())
    if subtask in MULTIPLE_CHOICE and len(answer) == 1:
        answer = f"({answer})"
    return answer


def exact_match_cot_v1(answer: str, target: str, subtask: str) -> float:
    """OLMES's comparison: case-insensitive, ASCII punctuation removed from both sides except
    for dyck_languages (whose answers are punctuation). Whitespace is never normalised, so
    "]]" is not "] ]"."""

    def canonical(text: str) -> str:
        text = text.lower()
        return text if subtask == "dyck_languages" else text.translate(NO_PUNCTUATION)

    return float(canonical(answer) == canonical(target))


def extract_cot_release(completion: str) -> str:
    """Release-time answer: after the first "the answer is " (case-sensitive), the rest of that
    line without its last character, periods stripped from both ends; "" when absent."""
    match = re.search(r"(?<=the answer is )(.*)(?=.)", completion)
    return match.group(1).strip(".") if match else ""


def exact_match_release(answer: str, target: str) -> float:
    """Release-time comparison: the strings as they are (case, punctuation and spacing count)."""
    return float(answer == target)


def score_bbh(completion: str, target: str, subtask: str) -> dict:
    """Every BBH reading of one completion, as a plain record."""
    answer = extract_cot_v1(completion, subtask)
    answer_flex = extract_cot_v1(completion, subtask, flex=True)
    answer_release = extract_cot_release(completion)
    return {
        "answer": answer,
        "exact_match": exact_match_cot_v1(answer, target, subtask),
        "answer_flex": answer_flex,
        "exact_match_flex": exact_match_cot_v1(answer_flex, target, subtask),
        "answer_release": answer_release,
        "exact_match_release": exact_match_release(answer_release, target),
    }
