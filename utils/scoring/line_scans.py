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
