"""GSM8K answers: OLMES's `gsm8k::tulu` verdict, quirks kept, and a numeric verdict beside it.

OLMES (`oe_eval/tasks/oe_eval_tasks/gsm8k.py` + `ExactMatch` with HF-evaluate's exact match):

* prediction: merge digit pairs around commas (`(\\d),(\\d)` -> `\\1\\2`, non-overlapping, so
  "1,2,3" becomes "12,3"), then the LAST match of `[-+]?\\d*\\.\\d+|\\d+` anywhere in the
  output; with no number at all, the whole output. "The answer is" is never looked at.
* gold: the text after the dataset answer's last "####", through the same extraction. The
  pattern keeps a sign only on a decimal, so "-10" becomes "10" (on both sides).
* comparison: both sides have the regexes `,`, `\\$`, `(?s).*#### ` and `\\.$` removed in
  turn, are lower-cased and compared as strings: "160.0" is not "160".

`exact_match_numeric` is the answer a reader would accept: the answer the output declares
(the last `\\boxed{}`, "the answer is ...", or "#### ..." statement) or its final number,
read with its sign and thousands separators, numerically equal to the full gold.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from decimal import Decimal, InvalidOperation

# --- OLMES ----------------------------------------------------------------------------------

_PAIRED_COMMA = re.compile(r"(\d),(\d)")
_OLMES_NUMBER = re.compile(r"[-+]?\d*\.\d+|\d+")
# ExactMatch's `regexes_to_ignore` for gsm8k are `,`, `\$`, `(?s).*#### ` and `\.$`, applied
# in this order to both sides; `olmes_normalize` does the same without the regex engine's
# quadratic backtracking on `(?s).*#### ` (minutes on a long output with no number).
_HEADER = "#### "
_TRAILING_PERIOD = re.compile(r"\.$")


def olmes_last_number(text: str) -> str:
    """OLMES's `_extract_answer` / `_clean_short_answer`: the last number, or `text` itself."""
    merged = _PAIRED_COMMA.sub(r"\1\2", text)
    numbers = _OLMES_NUMBER.findall(merged)
    return numbers[-1] if numbers else merged


def olmes_gold(answer: str) -> str:
    """The label OLMES compares against: the cleaned short answer after the last '####'."""
    return olmes_last_number(answer.split("####")[-1].strip())


def olmes_normalize(text: str) -> str:
    """OLMES's ignore-regexes, then lower-casing. The greedy `(?s).*#### ` removes everything
    up to and including the last "#### " (nothing after it can match again)."""
    text = text.replace(",", "").replace("$", "")
    header = text.rfind(_HEADER)
    if header != -1:
        text = text[header + len(_HEADER) :]
    return _TRAILING_PERIOD.sub("", text).lower()


def olmes_exact_match(model_answer: str, label: str) -> bool:
    return olmes_normalize(model_answer) == olmes_normalize(label)


# --- numeric --------------------------------------------------------------------------------

# A number as written in prose: optional minus (ASCII or U+2212) and dollar sign, then digits
# with well-formed thousands groups, or plain digits, with an optional decimal part.
_NUMBER = re.compile(
    r"(?P<sign>[-\u2212])?\$?(?P<body>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
)
_ANSWER_IS = re.compile(r"answer\s*(?:is|:)", re.IGNORECASE)
_HASHES = re.compile(r"####")
_BOXED = re.compile(r"\\boxed\s*\{")


class _Numbers:
    """Every number of a text with its position, for answer statements to look up in."""

    def __init__(self, text: str) -> None:
        self.starts: list[int] = []
        self.values: list[Decimal] = []
        for match in _NUMBER.finditer(text):
            value = Decimal(match["body"].replace(",", ""))
            # a minus right after a letter, digit or closing bracket is an operator ("16-3")
            before = text[match.start() - 1] if match.start() else " "
            if match["sign"] and not (before.isalnum() or before in ")]}"):
                value = value.copy_negate()  # exact (unary minus rounds to 28 digits)
            self.starts.append(match.start())
            self.values.append(value)

    def first_in(self, start: int, end: int) -> Decimal | None:
        i = bisect_left(self.starts, start)
        return self.values[i] if i < len(self.starts) and self.starts[i] < end else None

    def last_in(self, start: int, end: int) -> Decimal | None:
        i = bisect_left(self.starts, end) - 1
        return self.values[i] if i >= 0 and self.starts[i] >= start else None


def numbers(text: str) -> list[Decimal]:
    """Every number in `text`, in order, signed where a minus is a sign."""
    return _Numbers(text).values


def _closing_braces(text: str) -> dict[int, int]:
    """For every '{' that is closed, the position of its '}' (one pass, any nesting depth)."""
    closing, stack = {}, []
    for i, char in enumerate(text):
        if char == "{":
            stack.append(i)
        elif char == "}" and stack:
            closing[stack.pop()] = i
    return closing


def _last_closed_box(text: str) -> tuple[int, int, int] | None:
    """(start, content start, content end) of the last `\\boxed{...}` whose brace closes."""
    boxes = list(_BOXED.finditer(text))
    if not boxes:
        return None
    closing = _closing_braces(text)
    for box in reversed(boxes):
        close = closing.get(box.end() - 1)
        if close is not None:
            return box.start(), box.end(), close
    return None


def _last_match(pattern: re.Pattern, text: str) -> re.Match | None:
    last = None
    for last in pattern.finditer(text):
        pass
    return last


def declared_answer(text: str, found: _Numbers | None = None) -> Decimal | None:
    """The number of the output's last answer statement: a `\\boxed{}` (its last number),
    "the answer is" / "answer:" or "####" (the first number after it on the same line); None
    when there is no statement or the last one holds no number ("\\boxed{\\text{No solution}}").
    `found`: the text's numbers, when the caller has them already."""
    found = _Numbers(text) if found is None else found
    candidates: list[tuple[int, Decimal | None]] = []  # (position, its number)
    box = _last_closed_box(text)
    if box:
        candidates.append((box[0], found.last_in(box[1], box[2])))
    for pattern in (_ANSWER_IS, _HASHES):
        match = _last_match(pattern, text)
        if match:
            candidates.append((match.start(), _first_on_line(text, found, match)))
    return max(candidates, key=lambda c: c[0])[1] if candidates else None


def _first_on_line(text: str, found: _Numbers, match: re.Match) -> Decimal | None:
    line_end = text.find("\n", match.end())
    return found.first_in(match.end(), len(text) if line_end == -1 else line_end)


def numeric_gold(answer: str) -> Decimal:
    """The full gold after the last '####', sign and all ("-10" stays -10, "1,600" is 1600)."""
    short = answer.split("####")[-1].strip().replace(",", "")
    try:
        value = Decimal(short)
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite():
        raise ValueError(f"GSM8K gold {short!r} is not a number")
    return value


def _plain(value: Decimal | None) -> str | None:
    """A Decimal as plain text for the logs ("1000", "-10", "0.5")."""
    if value is None:
        return None
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


# --- both -----------------------------------------------------------------------------------


def score_gsm8k(completion: str, answer: str) -> dict:
    """Both verdicts on one completion, with what each read. `answer` is the dataset's full
    answer field (chain of thought, then '#### <gold>')."""
    label = olmes_gold(answer)
    model_answer = olmes_last_number(completion)
    gold = numeric_gold(answer)
    found = _Numbers(completion)
    declared = declared_answer(completion, found)
    last = found.values[-1] if found.values else None
    return {
        "label": label,
        "model_answer": model_answer,
        "exact_match": int(olmes_exact_match(model_answer, label)),
        "gold": _plain(gold),
        "declared_answer": _plain(declared),
        "last_number": _plain(last),
        "exact_match_numeric": int(gold in (declared, last)),
    }
