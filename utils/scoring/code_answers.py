"""The code answer of OLMES's `olmo3:adapt` code tasks (`codex_humanevalplus`, `mbppplus`), read
as OLMES's `extract_answer` reads it with their `metric_kwargs`, in linear time.

OLMES (`oe_eval/tasks/utils.py`, `extract_answer`) tries two patterns on the whole output:

* `answer_format_regex` `(?s)Here is the completed function:\\n*```(?:python\\n)?\\n*(.*?)\\s*````:
  the LAST match wins, `answer_format_correct` 1.0;
* else `answer_regexes` `[(?s)```(?:python\\n)?\\n*(.*?)\\s*```]`: the LAST match, 0.2;
* else the answer is "" (0.0).

`re.findall` with these patterns is quadratic on a long run of whitespace that no fence
follows (`.*?` grows one character at a time and `\\s*` rescans the run each time). The scan
below gives the same matches: a fence opener, an optional `python\\n`, newlines, then the body
up to the next three backticks, less the whitespace right before them; findall's matches do not
overlap, and once a fence has no closing one none after it has either.
"""

from __future__ import annotations

from typing import NamedTuple

FENCE = "```"
LANGUAGE = "python\n"
FORMAT_PREFIX = "Here is the completed function:"
FORMAT_CORRECT, RAW_MATCH = 1.0, 0.2


class CodeAnswer(NamedTuple):
    answer: str  # the code OLMES runs (after the task's own prefix)
    answer_format_correct: float  # 1.0 (the template's fence), 0.2 (any fence), 0.0 (none)


def olmes_code_answer(text: str) -> CodeAnswer:
    """OLMES's `extract_answer(text)` for the code tasks of `olmo3:adapt`."""
    formatted = [body for _, body in fences(text, FORMAT_PREFIX)]
    if formatted:
        return CodeAnswer(formatted[-1], FORMAT_CORRECT)
    raw = [body for _, body in fences(text, "")]
    return CodeAnswer(raw[-1], RAW_MATCH) if raw else CodeAnswer("", 0.0)


def fences(text: str, prefix: str):
    """(end, body) of each non-overlapping match of `<prefix>\\n*```(?:python\\n)?\\n*(.*?)\\s*````
    (without a prefix, of `````(?:python\\n)?\\n*(.*?)\\s*````), left to right."""
    start = 0
    while True:
        opener = text.find(prefix or FENCE, start)
        if opener < 0:
            return
        fence = skip_newlines(text, opener + len(prefix)) if prefix else opener
        if not text.startswith(FENCE, fence):
            start = opener + 1  # the prefix without a fence after it: no match here
            continue
        body = fence + len(FENCE)
        if text.startswith(LANGUAGE, body):
            body += len(LANGUAGE)
        body = skip_newlines(text, body)
        closing = text.find(FENCE, body)
        if closing < 0:
            return  # no fence closes this one, so none later does either
        yield closing + len(FENCE), text[body : whitespace_start(text, body, closing)]
        start = closing + len(FENCE)


def skip_newlines(text: str, at: int) -> int:
    while at < len(text) and text[at] == "\n":
        at += 1
    return at


def whitespace_start(text: str, low: int, end: int) -> int:
    """Where the whitespace run ending at `end` starts, not before `low` (re's `\\s`: isspace)."""
    while end > low and text[end - 1].isspace():
        end -= 1
    return end
