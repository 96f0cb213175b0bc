"""The one "did you mean" of the pack: known names that look like a mistyped one."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable


def close_matches(word: str, known: Iterable[str], n: int = 1) -> list[str]:
    """Up to `n` of `known` that look like `word`, closest first."""
    return difflib.get_close_matches(word, list(known), n=n, cutoff=0.6)


def did_you_mean(
    word: str, known: Iterable[str], show: Callable[[str], str] = repr, n: int = 1
) -> str:
    """ " (did you mean X?)" with each close match written by `show`, or "" when none is."""
    close = close_matches(word, known, n)
    return f" (did you mean {' or '.join(show(c) for c in close)}?)" if close else ""
