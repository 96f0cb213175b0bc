"""OLMES's thinking switch (`process_output: "r1_style"`, `oe_eval/models/output_processors.py`)
as a pure function of a model's raw output, in linear time.

OLMES applies it per model, before any task sees the output:

* reasoning: `re.findall("(?ms)^(?:\\s*<think>\\s*)?(.*)\\s*</think>", text)[0]`, i.e. the
  text before the LAST `</think>`, a leading `<think>` (with the whitespace around it) dropped,
  whitespace before `</think>` kept; `None` when there is no `</think>` (thinking never ended).
* answer: the text after the last `</think>` (all of it when there is none), then
  `re.sub("(?ms)^\\s*<answer>\\s*", "", ...)` and `re.sub("(?ms)</answer>\\s*$", "", ...)`.
  Both are MULTILINE: every `<answer>` that starts a line (after optional whitespace) goes, not
  only a leading one, and every `</answer>` that ends a line (before optional whitespace).

OLMES's patterns are quadratic on long outputs (`.*</think>` without a `</think>`, `^\\s*` over
long runs of blank lines); these functions give the same strings with `str.rfind`/`str.find`
and one pass over each whitespace run.
"""

from __future__ import annotations

import re
from typing import NamedTuple

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"

WHITESPACE = re.compile(r"\s*")  # re's `\s`, the same set as str.isspace / str.strip
LEADING_THINK = re.compile(r"\s*<think>\s*")


class Thought(NamedTuple):
    """A raw output split the way OLMES's `r1_style` splits it."""

    reasoning: str | None  # OLMES's `reasoning_content`; None when there is no `</think>`
    answer: str  # what OLMES scores
    finished: bool  # a `</think>` was written


def split_r1_style(text: str) -> Thought:
    """`text` split into reasoning and scored answer, as OLMES's `extract_think_answer`."""
    close = text.rfind(THINK_CLOSE)
    if close < 0:
        return Thought(None, trim_answer_tags(text), False)
    before = text[:close]
    opening = LEADING_THINK.match(before)
    reasoning = before[opening.end() :] if opening else before
    return Thought(reasoning, trim_answer_tags(text[close + len(THINK_CLOSE) :]), True)


def trim_answer_tags(text: str) -> str:
    """OLMES's two MULTILINE substitutions, `<answer>` first, then `</answer>`."""
    return drop_line_end_closes(drop_line_start_opens(text))


def drop_line_start_opens(text: str) -> str:
    """`re.sub("(?ms)^\\s*<answer>\\s*", "", text)`: each `<answer>` preceded, back to a line
    start, only by whitespace is removed with that whitespace and the whitespace after it. The
    earliest line start in the run wins, as the scan from the left finds it first."""
    pieces, cursor, found = [], 0, text.find(ANSWER_OPEN)
    floor = 0  # no whitespace run before a tag reaches back past this (each slice read once)
    while found >= 0:
        run_start = floor + len(text[floor:found].rstrip())  # the whitespace run before the tag
        start = line_start_in(text, run_start, found)
        end = found + len(ANSWER_OPEN)
        if start is not None:
            end = WHITESPACE.match(text, end).end()
            pieces.append(text[cursor:start])
            cursor = end
        floor = end
        found = text.find(ANSWER_OPEN, end)
    pieces.append(text[cursor:])
    return "".join(pieces)


def line_start_in(text: str, low: int, high: int) -> int | None:
    """The first position in [low, high] where `^` matches in MULTILINE mode, or None."""
    if low == 0:
        return 0
    newline = text.find("\n", low - 1, high)
    return None if newline < 0 else newline + 1


def drop_line_end_closes(text: str) -> str:
    """`re.sub("(?ms)</answer>\\s*$", "", text)`: each `</answer>` followed by whitespace up to
    a line end is removed with the longest such whitespace (`\\s*` is greedy; `$` matches before
    any "\\n" and at the end)."""
    pieces, cursor, found = [], 0, text.find(ANSWER_CLOSE)
    while found >= 0:
        after = found + len(ANSWER_CLOSE)
        run_end = WHITESPACE.match(text, after).end()
        end = run_end if run_end == len(text) else text.rfind("\n", after, run_end)
        if end < 0:
            found = text.find(ANSWER_CLOSE, found + 1)
            continue
        pieces.append(text[cursor:found])
        cursor = end
        found = text.find(ANSWER_CLOSE, cursor)
    pieces.append(text[cursor:])
    return "".join(pieces)
