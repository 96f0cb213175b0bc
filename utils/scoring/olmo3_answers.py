"""OLMES's answer extraction for the rule-scored tasks of `olmo3:adapt` (5a51f50): the regex
cascade of `oe_eval/tasks/utils.py:extract_answer` with each family's `metric_kwargs`, as pure
functions of the scored text (after the thinking switch, when it is on).

The cascade, first stage with an answer wins:

1. `answer_format_regex` (AGIEval, GPQA, GSM8K): its LAST findall match; format 1.0.
2. `answer_regexes_templates` (OLMo 3's eleven, `OLMO3_TEMPLATES`) x `answer_regexes`: the
   first template (then answer regex) with a match gives its LAST match, the last non-empty
   group; format 1.0 for the first template, 0.5 for the others.
3. `answer_prefix_regexes` (GSM8K): the LAST match of the first prefix that matches; in the
   text after it (stripped of whitespace, then of "."), the FIRST match of the answer regexes
   joined by "|", its last non-empty group; format 1.0 for the first prefix, 0.5 for others.
4. the answer regexes alone: the first with a match gives its LAST findall match; format 0.2
   for the first regex, 0.1 for the others.

Where OLMES's patterns take quadratic time on a long output the same answers are computed in
linear time (each case says why it is the same):

* template 11, `(?i).*\\b($ANS$)\\b`, is never reached: it can only match where template 9,
  `(?i)\\b($ANS$)\\b`, already did, with a non-empty answer (every answer regex here matches
  at least one character), so it is left out.
* GSM8K's boxed answer `[\\s\\S]*?\\\\boxed\\{(.*?)\\}[\\s\\S]*?` finds, from each
  position, the next `\\boxed{...}` closed on its line; its format phrase `...\\boxed\\{(.*)\\}`
  and the delimiter pairs it peels (`\\((.*)\\)`, ...) are greedy per line: all are found by
  `line_scans`, which looks for the closing string once per line, not once per opening.
* stage 3 reads only the first match of GSM8K's joined answer regexes, which always matches at
  the start of the rest (`first_gsm8k_answer`), not OLMES's `findall` over the whole rest.
"""

from __future__ import annotations

import re

from . import bbh_answers, line_scans

# OLMES's OLMO_3_REGEXES (oe_eval/configs/regexes.py); $ANS$ is replaced by an answer regex
OLMO3_TEMPLATES = (
    r"(?i)therefore,?\s*the\s*answer\s*is:?\s*\(?($ANS$)\b",
    r"(?i)so\s+the\s+answer\s+is\s+($ANS$)\.?",
    r"(?i)the\s+correct\s+answer\s+is:?\s*($ANS$)",
    r"(?i)the\s+answer\s+is\s+($ANS$)\.?",
    r"(?i)a:\s*($ANS$)",
    r"(?i)answer:\s*($ANS$)",
    r"(?i)\b($ANS$)\)?\s+is\s+correct",
    r"(?i)\(($ANS$)\)",
    r"(?i)\b($ANS$)\b",
    r"(?i)\b($ANS$)\b",
    r"(?i).*\b($ANS$)\b",
)
SEARCHED_TEMPLATES = OLMO3_TEMPLATES[:-1]  # the last is never reached (module docstring)

LETTERS_AD = r"\(?([A-D])\)?"  # MMLU, GPQA: "(A)" and "A"
LETTERS_AF = r"\(?([A-F])\)?"  # AGIEval
AGIEVAL_FORMAT = r"Therefore, the answer is \(([A-F])\)"
GPQA_FORMAT = r"Therefore, the answer is \(([A-D])\)"

GSM8K_FORMAT = r"Therefore, the final answer is \\boxed\{(.*)\}"
GSM8K_PREFIXES = (
    "(?i)Therefore,? the final answer is",
    "(?i)Therefore,? the answer is",
    "(?i)the final answer is",
    "(?i)the answer is",
    "(?i)answer is",
    "(?i)answer is:",
    "(?i)answer:",
)
GSM8K_BOXED_LAZY = r"[\s\S]*?\\boxed\{(.*?)\}[\s\S]*?"  # OLMES's; found by line_scans
NUMBER_AT_START = re.compile(r"[-+]?\d*\.\d+|\d+")
FIRST_LINE = re.compile(r"(.*)\.?")
GSM8K_ANSWERS = (GSM8K_BOXED_LAZY, r"([-+]?\d*\.\d+|\d+)", r"(.*)\.?")
GSM8K_CUTOFF = 0.4  # answer_format_correct_cutoff: below it only exact_match_flex counts


def last_nonempty_group(match: re.Match) -> str:
    """OLMES: the last non-empty group of a match, else its first group (the whole match
    when it has none)."""
    groups = match.groups()
    if not groups:
        return match.group(0)
    return next((g for g in reversed(groups) if g), groups[0])


def last_match(pattern: str, text: str) -> re.Match | None:
    found = None
    for found in re.finditer(pattern, text):
        pass
    return found


def findall_last(pattern: str, text: str):
    """`re.findall(pattern, text)[-1]` (a tuple when it has several groups), or None."""
    if pattern in LINEAR_FINDERS:
        return LINEAR_FINDERS[pattern](text)
    found = last_match(pattern, text)
    if found is None:
        return None
    groups = found.groups()
    return found.group(0) if not groups else groups[0] if len(groups) == 1 else groups


def last_content(matches) -> str | None:
    found = None
    for _, _, found in matches:
        pass
    return found


FORMAT_OPENING = "Therefore, the final answer is \\boxed{"
# OLMES's patterns that are quadratic on a long line, and their linear equivalents (line_scans)
LINEAR_FINDERS = {
    GSM8K_FORMAT: lambda text: last_content(line_scans.greedy_matches(text, FORMAT_OPENING, "}")),
    GSM8K_BOXED_LAZY: lambda text: last_content(line_scans.boxed_matches(text)),
}


def first_gsm8k_answer(rest: str) -> str:
    """The first match of GSM8K's three answer regexes joined by "|", its last non-empty group:
    the joined pattern always matches at 0, with the first `\\boxed{...}` anywhere in `rest`
    (its lazy prefix reaches it), else a number at 0, else the first line."""
    boxed = next(line_scans.boxed_matches(rest), None)
    if boxed is not None:
        return boxed[2] or rest[: boxed[1]]
    number = NUMBER_AT_START.match(rest)
    return number.group(0) if number else FIRST_LINE.match(rest).group(1)


def from_templates(text: str, templates, answer_regexes) -> tuple[str, float]:
    for index, template in enumerate(templates):
        for answer_regex in answer_regexes:
            found = last_match(template.replace("$ANS$", answer_regex), text)
            if found is not None and last_nonempty_group(found) != "":
                return last_nonempty_group(found), 1.0 if index == 0 else 0.5
    return "", 0.0


def from_prefixes(text: str, prefixes, answer_regexes) -> tuple[str, float]:
    # only GSM8K's olmo3 spec has prefixes, so the joined answer regexes are always its own
    if list(answer_regexes) != list(GSM8K_ANSWERS):
        raise ValueError("answer prefixes are read with GSM8K's answer regexes only")
    for index, prefix in enumerate(prefixes):
        found = last_match(prefix, text)
        if found is None:
            continue
        answer = first_gsm8k_answer(text[found.end() :].strip().strip("."))
        if answer != "":
            return answer, 1.0 if index == 0 else 0.5
    return "", 0.0


def extract_answer(
    text: str, answer_regexes, format_regex: str | None = None, templates=(), prefixes=()
) -> dict:
    """OLMES `extract_answer`: {"answer", "answer_format_correct"}. As in OLMES, a format
    match with an empty answer leaves the format at 1.0 for the later stages to overwrite."""
    answer, fmt = "", 0.0
    if format_regex:
        found = findall_last(format_regex, text)
        if found is not None:
            answer, fmt = found, 1.0
    for stage, regexes in ((from_templates, templates), (from_prefixes, prefixes)):
        if answer == "" and regexes:
            staged, staged_fmt = stage(text, regexes, answer_regexes)
            if staged != "":
                answer, fmt = staged, staged_fmt
    if answer == "":
        for index, answer_regex in enumerate(answer_regexes):
            found = findall_last(answer_regex, text)
            if found is not None:
                answer, fmt = found, 0.2 if index == 0 else 0.1
                break
    return {"answer": answer, "answer_format_correct": fmt}


# ---------------------------------------------------------------- the families


def without_parentheses(found: dict) -> dict:
    """AGIEval's and GPQA's `_clean_answer`: parentheses removed from the answer."""
    return {**found, "answer": found["answer"].replace("(", "").replace(")", "")}


def extract_mmlu(text: str) -> dict:
    """`mmlu_<subject>:cot::olmo3:adapt`."""
    return extract_answer(text, [LETTERS_AD], templates=SEARCHED_TEMPLATES)


def extract_agi_eval(text: str) -> dict:
    """`agi_eval_<task>::olmo3:adapt`."""
    found = extract_answer(text, [LETTERS_AF], AGIEVAL_FORMAT, SEARCHED_TEMPLATES)
    return without_parentheses(found)


def extract_gpqa(text: str) -> dict:
    """`gpqa::olmo3:adapt`."""
    return without_parentheses(extract_answer(text, [LETTERS_AD], GPQA_FORMAT, SEARCHED_TEMPLATES))


# pairs GSM8K peels off the whole (comma-free, period-stripped) output, in this order
GSM8K_DELIMITERS = (
    ("$", "$"),
    ("\\(", "\\)"),
    ("**", "**"),
    ("***", "***"),
    ("\\[", "\\]"),
    ("\\[\n", "\n\\]"),
)


def gsm8k_text(text: str) -> str:
    """What GSM8K's `_extract_answer` searches: thousands commas between digits removed, a
    final "." (and whitespace) removed, then each delimiter pair's greedy `L(.*)R` replaced by
    its inside, per line, everywhere (OLMES's `re.sub` without an anchor)."""
    out = re.sub(r"(\d),(\d)", r"\1\2", text)
    out = re.sub(r"\.\s*$", "", out).strip()
    for left, right in GSM8K_DELIMITERS:
        if "\n" in left:  # (.*) then spans exactly the next line: linear as a regex
            out = re.sub(f"{re.escape(left)}(.*){re.escape(right)}", r"\1", out).strip()
        else:
            out = line_scans.peel(out, left, right).strip()
    return out


def extract_gsm8k(text: str) -> dict:
    """`gsm8k::olmo3:adapt`."""
    return extract_answer(gsm8k_text(text), GSM8K_ANSWERS, GSM8K_FORMAT, prefixes=GSM8K_PREFIXES)


def word_list_is_correct(text: str) -> list[str]:
    """Template 7 with word_sorting's answer pattern, `(?i)\\b([a-z ]+)\\)?\\s+is\\s+correct`:
    its `findall`, found in linear time (`line_scans`; the regex backtracks over the rest of a
    run of words from every word in it)."""
    return [group for _, _, group in line_scans.word_list_is_correct(text)]


def bbh_templates(subtask: str) -> list:
    """`bbh_<subtask>:cot::olmo3:adapt`'s cascade: OLMo 3's templates with the subtask's answer
    pattern, then (multiple choice) OLMES's bare-letter template, whose non-raw "\\b" are
    backspaces, then the pattern anywhere, case-insensitive. (OLMES appends the last two to
    its shared template list on every call; the copies after the first change nothing.)"""
    ans = bbh_answers.answer_pattern(subtask)
    templates: list = [t.replace("$ANS$", ans) for t in SEARCHED_TEMPLATES]
    if subtask == "word_sorting":
        templates[6] = word_list_is_correct
    if subtask in bbh_answers.MULTIPLE_CHOICE:
        templates.append(bbh_answers.OLMES_BARE_LETTER)
    return templates + [f"(?i)({ans})"]


def extract_bbh(text: str, subtask: str) -> str:
    """`bbh_<subtask>:cot::olmo3:adapt`'s answer (a string: no format score, as in OLMES)."""
    return bbh_answers.read_answer(text, subtask, bbh_templates(subtask))
