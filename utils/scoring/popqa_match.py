"""PopQA answer matching: OLMES's substring rule, and a whole-word rule beside it.

OLMES (`oe_eval/tasks/oe_eval_tasks/popqa.py`, `PopQA.process_results`) marks a completion
correct when, for some alias in `possible_answers`, the alias itself, its `lower()` or its
`capitalize()` form is a substring of the completion. The completion is NOT lower-cased, so
"PARIS" misses "Paris"; an empty alias matches everything; a one-letter alias matches any
completion containing that letter ("B" is in "Brown"); "US" is in "USSR". Kept as is in
`exact_match`.

`alias_match` is the rule that was meant: a non-blank alias, compared case-insensitively, found
as a whole word (not inside a longer word or number).
"""

from __future__ import annotations

import re


def olmes_match(prediction: str, aliases: list[str]) -> bool:
    """OLMES's verdict (see the module docstring)."""
    return any(
        alias in prediction or alias.lower() in prediction or alias.capitalize() in prediction
        for alias in aliases
    )


def matching_alias(prediction: str, aliases: list[str]) -> str | None:
    """The first non-blank alias found in `prediction` as a whole word, ignoring case."""
    text = prediction.lower()
    for alias in aliases:
        needle = alias.strip().lower()
        if needle and re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", text):
            return alias
    return None
