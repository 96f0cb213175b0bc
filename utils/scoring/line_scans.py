"""Linear-time equivalents of three regular expressions OLMES's olmo3 GSM8K reading runs, each
quadratic on a long line where its opening string repeats without its closing one. `.` never
crosses a newline, so every match lies inside one line; each function below walks the openings
left to right, as `re` does, but looks for the closing string once per line, not once per
opening.

* `boxed_matches`: `re.finditer(r"\\\\boxed\\{(.*?)\\}", text)`, the lazy content up to the
  first "}" on the line (OLMES's `[\\s\\S]*?\\\\boxed\\{(.*?)\\}[\\s\\S]*?` finds the same).
* `greedy_matches`: `re.finditer(re.escape(opening) + r"(.*)" + re.escape(closing), text)`: from
  the first opening on a line with a closing after it, up to that line's LAST closing.
* `peel`: `re.sub(re.escape(left) + "(.*)" + re.escape(right), r"\\1", text)`, built on
  `greedy_matches`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

BOXED = "\\boxed{"


def line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end < 0 else end


def boxed_matches(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, content) of each `\\boxed{...}` match, left to right, non-overlapping."""
    # the next "}" and "\n" at or after the content's start, len(text) when there is none;
    # both only move forward, so each character is looked at a bounded number of times
    close = newline = -1
    start = text.find(BOXED)
    while start >= 0:
        inside = start + len(BOXED)
        if close < inside:
            close = text.find("}", inside)
            close = len(text) if close < 0 else close
        if newline < inside:
            newline = line_end(text, inside)
        if close < newline:
            yield start, close + 1, text[inside:close]
            start = text.find(BOXED, close + 1)
        else:
            start = text.find(BOXED, start + 1)


def greedy_matches(text: str, opening: str, closing: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, content) of each `opening(.*)closing` match (neither string has a
    newline), left to right: on each line, the first opening with a closing after it, up to
    the line's last closing; the rest of that line holds no further match."""
    start = text.find(opening)
    while start >= 0:
        inside = start + len(opening)
        end_of_line = line_end(text, inside)
        close = text.rfind(closing, inside, end_of_line)
        if close >= 0:
            yield start, close + len(closing), text[inside:close]
        start = text.find(opening, end_of_line)


def peel(text: str, left: str, right: str) -> str:
    """Every `left(.*)right` of `text` replaced by its inside."""
    pieces, cursor = [], 0
    for start, end, inside in greedy_matches(text, left, right):
        pieces += [text[cursor:start], inside]
        cursor = end
    return "".join(pieces) + text[cursor:]


IS_CORRECT = re.compile(r"(?i)is\s+correct")
WORDS_AND_SPACES = re.compile(r"(?i)[a-z ]+")


def is_word(char: str) -> bool:
    """re's `\\w` for a str pattern: Unicode letters and digits, and "_"."""
    return char.isalnum() or char == "_"


def suffix_spans(text: str) -> list[tuple[int, int, int]]:
    """(lowest, highest, end): for each "is correct" of `text`, the positions q from which
    `\\)?\\s+is\\s+correct` matches it (a ")" then whitespace, or whitespace, up to "is"), and
    where that match ends."""
    spans = []
    for core in IS_CORRECT.finditer(text):
        low = core.start()
        while low > 0 and text[low - 1].isspace():  # re's `\s`: str.isspace
            low -= 1
        if low == core.start():
            continue  # `\s+` needs one whitespace character before "is"
        if low > 0 and text[low - 1] == ")":
            low -= 1
        spans.append((low, core.start() - 1, core.end()))
    return spans


def word_list_is_correct(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, group) of each match of `(?i)\\b([a-z ]+)\\)?\\s+is\\s+correct` (OLMES's
    "X is correct" template with word_sorting's answer pattern), left to right. The regex tries
    every word of a run of letters and spaces and backtracks over the rest of the run from each;
    here each run is read once: its match, if any, starts at its first word boundary (after the
    last match) and takes the run up to the last "is correct" it can reach (greedy)."""
    spans, index, cursor = suffix_spans(text), 0, 0
    for run in WORDS_AND_SPACES.finditer(text):
        low, high = max(run.start(), cursor), run.end()
        while index + 1 < len(spans) and spans[index + 1][0] <= high:
            index += 1
        if not spans or spans[index][0] > high:
            continue
        last = min(spans[index][1], high)  # the greedy group ends here
        start = next((p for p in range(low, last) if boundary(text, p)), None)
        if start is None:
            continue
        yield start, spans[index][2], text[start:last]
        cursor = spans[index][2]


def boundary(text: str, position: int) -> bool:
    before = position > 0 and is_word(text[position - 1])
    return before != is_word(text[position])
