"""IFBench checkers that count or compare proportions: `count:*` and `ratio:*`.

Each checker takes the response and the instruction's arguments (keyword-only, as the test
set's kwargs name them) and says whether the response follows the instruction, with the
semantics of the authors' code (allenai/IFBench db69a6f), quirks included (noted where a
reader would expect otherwise).
"""

from __future__ import annotations

import re

from . import text as t

CONJUNCTIONS = frozenset(("and", "but", "for", "nor", "or", "so", "yet"))
PERSON_NAMES = (  # the fixed list the instruction quotes to the model
    "Emma", "Liam", "Sophia", "Jackson", "Olivia", "Noah", "Ava", "Lucas", "Isabella", "Mason",
    "Mia", "Ethan", "Charlotte", "Alexander", "Amelia", "Benjamin", "Harper", "Leo", "Zoe",
    "Daniel", "Chloe", "Samuel", "Lily", "Matthew", "Grace", "Owen", "Abigail", "Gabriel", "Ella",
    "Jacob", "Scarlett", "Nathan", "Victoria", "Elijah", "Layla", "Nicholas", "Audrey", "David",
    "Hannah", "Christopher", "Penelope", "Thomas", "Nora", "Andrew", "Aria", "Joseph", "Claire",
    "Ryan", "Stella", "Jonathan",
)  # fmt: skip
_NAME_PATTERNS = {name: re.compile(rf"\b{re.escape(name)}\b") for name in PERSON_NAMES}
PRONOUNS = frozenset((  # personal, possessive, reflexive, demonstrative, interrogative, indefinite
    "i", "me", "we", "us", "you", "he", "him", "she", "her", "it", "they", "them",
    "my", "mine", "our", "ours", "your", "yours", "his", "hers", "its", "their", "theirs",
    "myself", "ourselves", "yourself", "yourselves", "himself", "herself", "itself", "themselves",
    "this", "that", "these", "those", "who", "whom", "whose", "which", "what",
    "whoever", "whomever", "whatever", "whichever",
    "anybody", "anyone", "anything", "everybody", "everyone", "everything",
    "nobody", "nothing", "somebody", "someone", "something",
    "each", "either", "neither", "both", "all", "some", "any", "none",
))  # fmt: skip
_DIGIT_RUN = re.compile(r"\d+")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")  # kana and CJK ideographs
MARKS = frozenset(".,!?;:")


def word_count_range(text: str, *, min_words, max_words) -> bool:
    """count:word_count_range: between min_words and max_words `\\w+` words, inclusive."""
    return min_words <= t.regexp_word_count(text) <= max_words


def unique_word_count(text: str, *, N) -> bool:
    """count:unique_word_count: at least N distinct lower-cased whitespace words, each stripped
    of punctuation (a word of punctuation only counts once, as the empty word)."""
    return len({word.strip(t.STRIP) for word in text.lower().split()}) >= N


def stop_words(text: str, *, percentage) -> bool:
    """ratio:stop_words: English stop words are at most `percentage`% of the `\\w+` words."""
    total = t.regexp_word_count(text)
    if total == 0:
        return False
    return (t.stopword_count(text) / total) * 100 <= percentage


def _endings(text: str, marks: str) -> list[int]:
    found = t.sentences(text)
    return [sum(1 for sentence in found if sentence.endswith(mark)) for mark in marks]


def sentence_type(text: str) -> bool:
    """ratio:sentence_type: exactly twice as many sentences ending in "." as in "?" (none of
    either passes)."""
    declarative, interrogative = _endings(text, ".?")
    return declarative == 2 * interrogative


def sentence_balance(text: str) -> bool:
    """ratio:sentence_balance: as many sentences end in "." as in "?" and in "!"."""
    declarative, interrogative, exclamatory = _endings(text, ".?!")
    return declarative == interrogative == exclamatory


def conjunctions(text: str, *, small_n) -> bool:
    """count:conjunctions: at least small_n different coordinating conjunctions. Quirk: the
    words are told apart as written, so "and" and "And," count as two."""
    used = {word for word in text.split() if word.strip(t.STRIP).lower() in CONJUNCTIONS}
    return len(used) >= small_n


def person_names(text: str, *, N) -> bool:
    """count:person_names: at least N of the 50 listed names, each as a whole word, case
    sensitive."""
    found = (name in text and _NAME_PATTERNS[name].search(text) for name in PERSON_NAMES)
    return sum(1 for hit in found if hit) >= N


def overlap(text: str, *, reference_text, percentage) -> bool:
    """ratio:overlap: the share of the response's distinct character trigrams that occur in the
    reference text is within 2 points of `percentage`."""
    mine = {text[i : i + 3] for i in range(len(text) - 2)}
    if not mine:
        return False
    theirs = {reference_text[i : i + 3] for i in range(len(reference_text) - 2)}
    share = len(mine & theirs) / len(mine)
    return percentage - 2 <= share * 100 <= percentage + 2


def numbers(text: str, *, N) -> bool:
    """count:numbers: exactly N runs of digits once punctuation is removed ("3.14" is one)."""
    return sum(1 for _ in _DIGIT_RUN.finditer(t.without_punctuation(text))) == N


def punctuation(text: str) -> bool:
    """count:punctuation: an interrobang ("?!", "!?" or "‽") and, apart from one "?!" (else one
    "!?") taken as the interrobang, each of . , ! ? ; : at least once."""
    if not ("!?" in text or "?!" in text or "‽" in text):
        return False
    rest = text.replace("?!", "", 1)
    if len(rest) == len(text):
        rest = text.replace("!?", "", 1)
    return MARKS <= set(rest)


def words_japanese(text: str, *, N) -> bool:
    """count:words_japanese: every N-th whitespace word (stripped of punctuation; empty and
    all-digit words exempt) holds a kana or CJK ideograph."""
    for position, word in enumerate(text.split(), start=1):
        word = word.strip(t.STRIP)
        if position % N == 0 and word and not word.isdigit() and not _JAPANESE.search(word):
            return False
    return True


def sentence_words(text: str) -> bool:
    """ratio:sentence_words: exactly three sentences of the same length in characters (the
    "all different words" part of the instruction is not checked)."""
    found = t.sentences(text)
    return len(found) == 3 and len({len(sentence.strip()) for sentence in found}) == 1


def pronouns(text: str, *, N) -> bool:
    """count:pronouns: at least N pronouns among the lower-cased NLTK word tokens, "/" read as a
    space ("she/her"). Tokens are read only until N are found."""
    count = 0
    for token in t.iter_word_tokens(text.replace("/", " ").lower()):
        if count >= N:  # enough already: the rest need not be tokenized
            break
        count += token in PRONOUNS
    return count >= N


def keywords_multiple(text: str, *, keyword1, keyword2, keyword3, keyword4, keyword5) -> bool:
    """count:keywords_multiple: the five keywords occur 1, 2, 3, 5 and 7 times, counted as
    non-overlapping substrings, case-insensitively (so "cat" counts in "category")."""
    lowered = text.lower()
    wanted = zip((keyword1, keyword2, keyword3, keyword4, keyword5), (1, 2, 3, 5, 7))
    return all(lowered.count(keyword.strip().lower()) == count for keyword, count in wanted)


CHECKERS = {
    "count:word_count_range": word_count_range,
    "count:unique_word_count": unique_word_count,
    "ratio:stop_words": stop_words,
    "ratio:sentence_type": sentence_type,
    "ratio:sentence_balance": sentence_balance,
    "count:conjunctions": conjunctions,
    "count:person_names": person_names,
    "ratio:overlap": overlap,
    "count:numbers": numbers,
    "count:punctuation": punctuation,
    "ratio:sentence_words": sentence_words,
    "count:words_japanese": words_japanese,
    "count:pronouns": pronouns,
    "count:keywords_multiple": keywords_multiple,
}
