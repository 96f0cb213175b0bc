"""Text helpers the IFBench checkers share, as the authors' code splits text: sentences with
NLTK's Punkt (`nltk.sent_tokenize`), words with `nltk.word_tokenize` or `\\w+`, punctuation as
Python's `string.punctuation`. Splits are cached per text: one doc's checkers see the same
response (and its loose variants) many times."""

from __future__ import annotations

import functools
import itertools
import re
import string
from collections.abc import Iterator

from . import resources

PUNCTUATION = string.punctuation
STRIP = PUNCTUATION + " "  # what the authors strip off words: punctuation and spaces
_NO_PUNCTUATION = str.maketrans("", "", PUNCTUATION)
_WORD = re.compile(r"\w+")


def without_punctuation(text: str) -> str:
    """`text` with every ASCII punctuation character removed."""
    return text.translate(_NO_PUNCTUATION)


@functools.lru_cache(maxsize=16)
def sentences(text: str) -> tuple[str, ...]:
    """NLTK's English sentences of `text` (the authors' `split_into_sentences`)."""
    import nltk

    resources.install()
    return tuple(nltk.sent_tokenize(text))


@functools.cache
def _treebank():
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


def iter_word_tokens(text: str) -> Iterator[str]:
    """`nltk.word_tokenize(text)` lazily: the Treebank tokens of each Punkt sentence in turn."""
    for sentence in sentences(text):
        yield from _treebank().tokenize(sentence)


def word_tokens(text: str) -> list[str]:
    """`nltk.word_tokenize(text)`: Treebank tokens, punctuation included."""
    return list(iter_word_tokens(text))


def first_word_tokens(text: str, count: int) -> list[str]:
    """The first `count` tokens of `word_tokens(text)`, without tokenizing the rest."""
    return list(itertools.islice(iter_word_tokens(text), count))


def last_word_tokens(text: str, count: int) -> list[str]:
    """The last `count` tokens of `word_tokens(text)` (fewer if it has fewer), tokenizing
    sentences from the end only until there are enough."""
    tokens: list[str] = []
    for sentence in reversed(sentences(text)):
        tokens[:0] = _treebank().tokenize(sentence)
        if len(tokens) >= count:
            break
    return tokens[-count:]


def regexp_word_count(text: str) -> int:
    """The number of `\\w+` runs (the authors' `count_words`)."""
    return sum(1 for _ in _WORD.finditer(text))


def stopword_count(text: str) -> int:
    """How many `\\w+` runs are English stop words, compared lower-cased."""
    stop = resources.stopwords()
    return sum(1 for match in _WORD.finditer(text) if match.group().lower() in stop)


def first_tag(text: str) -> str | None:
    """The Penn Treebank tag `nltk.pos_tag(nltk.word_tokenize(text))` gives the first token,
    None when there is no token. The tagger looks two tokens ahead, so tagging the first three
    gives the tag the whole list's first token gets."""
    tokens = first_word_tokens(text, 3)
    return resources.tagger().tag(tokens)[0][1] if tokens else None


def needed(value, name: str):
    """`value` when set; where the authors' checker would draw a random value for an empty
    argument, an error instead (a verdict must not depend on chance)."""
    if not value:
        raise ValueError(
            f"argument {name!r} is empty: the authors' checker would draw it at random"
        )
    return value
