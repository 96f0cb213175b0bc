"""IFBench instruction ids -> the pack's checker functions, and how a checker is bound to a
doc's arguments."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from . import counting, custom, layout, wording

CHECKERS: dict[str, Callable[..., bool]] = {
    **counting.CHECKERS,
    **wording.CHECKERS,
    **layout.CHECKERS,
    **custom.CHECKERS,
}
# The 58 instruction types, in the order of the authors' registry (the per-type metrics' order).
INSTRUCTION_TYPES = (
    "count:word_count_range", "count:unique_word_count", "ratio:stop_words",
    "ratio:sentence_type", "ratio:sentence_balance", "count:conjunctions", "count:person_names",
    "ratio:overlap", "count:numbers", "words:alphabet", "words:vowel", "words:consonants",
    "sentence:alliteration_increment", "words:palindrome", "count:punctuation",
    "format:parentheses", "format:quotes", "words:prime_lengths", "format:options",
    "format:newline", "format:emoji", "ratio:sentence_words", "count:words_japanese",
    "words:start_verb", "words:repeats", "sentence:keyword", "count:pronouns",
    "words:odd_even_syllables", "words:last_first", "words:paragraph_last_first",
    "sentence:increment", "words:no_consecutive", "format:line_indent", "format:quote_unquote",
    "format:list", "format:thesis", "format:sub-bullets", "format:no_bullets_bullets",
    "custom:multiples", "custom:mcq_count_length", "custom:reverse_newline", "custom:word_reverse",
    "custom:character_reverse", "custom:sentence_alphabet", "custom:european_capitals_sort",
    "custom:csv_city", "custom:csv_special_character", "custom:csv_quotes",
    "custom:date_format_list", "count:keywords_multiple", "words:keywords_specific_position",
    "words:words_position", "repeat:repeat_change", "repeat:repeat_simple", "repeat:repeat_span",
    "format:title_case", "format:output_template", "format:no_whitespace",
)  # fmt: skip


class ArgumentError(ValueError):
    """A doc's arguments do not fit its instruction's checker."""


def arguments(kwargs: dict | None) -> dict:
    """The arguments the authors pass: the doc's kwargs without the None ones (0, "" and empty
    lists stay, unlike OLMES, which drops every falsy value)."""
    return {key: value for key, value in (kwargs or {}).items() if value is not None}


def bind(instruction_id: str, kwargs: dict | None) -> Callable[[str], bool]:
    """The checker of `instruction_id` with the doc's arguments bound: a function of the
    response. An unknown id, an argument the checker does not take, or a missing one (the
    authors would draw it at random) is an `ArgumentError` naming it."""
    checker = CHECKERS.get(instruction_id)
    if checker is None:
        raise ArgumentError(f"unknown IFBench instruction id {instruction_id!r}")
    args = arguments(kwargs)
    try:
        inspect.signature(checker).bind("", **args)
    except TypeError as exc:
        raise ArgumentError(f"{instruction_id}: {exc}") from None
    return functools.partial(checker, **args)
