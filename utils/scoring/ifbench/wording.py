"""IFBench checkers of word choice and sentence shape: `words:*` and `sentence:*`.

Each checker takes the response and the instruction's arguments and says whether the response
follows the instruction, with the semantics of the authors' code (allenai/IFBench db69a6f).
"""

from __future__ import annotations

import itertools
import re
import string
from collections import Counter

import syllapy

from . import text as t

CONSONANTS = frozenset("bcdfghjklmnpqrstvwxyz")
# the primes up to 97, where the authors' list ends: a word of 101 characters fails
PRIMES = frozenset(n for n in range(2, 98) if all(n % d for d in range(2, n)))


def alphabet(text: str) -> bool:
    """words:alphabet: the words (punctuation removed) start with consecutive letters of the
    alphabet, "z" followed by "a"; the first must start with a letter a-z (any case)."""
    words = t.without_punctuation(text).strip(t.STRIP).split()
    if not words:
        return False
    letter = words[0][0].lower()
    if letter not in string.ascii_lowercase:
        return False
    for word in words[1:]:
        letter = string.ascii_lowercase[(string.ascii_lowercase.index(letter) + 1) % 26]
        if word.lower()[0] != letter:
            return False
    return True


def vowel(text: str) -> bool:
    """words:vowel: one line (no newline once stripped) using at most three of a, e, i, o, u."""
    lines = text.strip().split("\n")
    return len(lines) == 1 and len(set(lines[0].lower()) & set("aeiou")) <= 3


def _has_cluster(word: str) -> bool:
    return any(a in CONSONANTS and b in CONSONANTS for a, b in itertools.pairwise(word))


def consonants(text: str) -> bool:
    """words:consonants: every whitespace word (lower-cased, punctuation kept) has two ASCII
    consonants in a row ("y" is a consonant)."""
    return all(_has_cluster(word) for word in text.lower().split())


def palindrome(text: str) -> bool:
    """words:palindrome: at least 10 words (punctuation removed, lower-cased) of 5 or more
    characters that read the same backwards; repeats count."""
    words = t.without_punctuation(text).lower().split()
    return sum(1 for word in words if len(word) >= 5 and word == word[::-1]) >= 10


def prime_lengths(text: str) -> bool:
    """words:prime_lengths: every word (punctuation removed) has a prime number of characters,
    at most 97."""
    return all(len(word) in PRIMES for word in t.without_punctuation(text).split())


def start_verb(text: str) -> bool:
    """words:start_verb: NLTK's tagger tags the first word token as a verb (a VB* tag)."""
    tag = t.first_tag(text)
    return tag is not None and "VB" in tag


def repeats(text: str, *, small_n) -> bool:
    """words:repeats: no word (lower-cased, punctuation removed) occurs more than small_n times."""
    counts = Counter(t.without_punctuation(text.lower()).split())
    return all(count <= small_n for count in counts.values())


def odd_even_syllables(text: str) -> bool:
    """words:odd_even_syllables: consecutive words (punctuation removed) alternate between an
    odd and an even number of syllables, as `syllapy` counts them."""
    parities = [syllapy.count(word) % 2 for word in t.without_punctuation(text).lower().split()]
    return all(a != b for a, b in itertools.pairwise(parities))


def last_first(text: str) -> bool:
    """words:last_first: each sentence's last word (punctuation stripped) is the next one's
    first word, case-insensitively; a sentence with no word there fails."""
    found = t.sentences(text)
    for current, following in itertools.pairwise(found):
        last = current.rstrip(t.STRIP).split()
        first = following.lstrip(t.STRIP).split()
        if not last or not first or last[-1].lower() != first[0].lower():
            return False
    return True


def paragraph_last_first(text: str) -> bool:
    """words:paragraph_last_first: every non-empty line starts and ends with the same word
    (lower-cased; punctuation kept inside, stripped at the line's ends)."""
    for line in text.split("\n"):
        words = line.strip().lower().strip(t.STRIP).split()
        if words and words[0] != words[-1]:
            return False
    return True


def no_consecutive(text: str) -> bool:
    """words:no_consecutive: no two neighbouring words (lower-cased, punctuation removed) start
    with the same character."""
    words = t.without_punctuation(text.lower()).split()
    return all(a[0] != b[0] for a, b in itertools.pairwise(words))


def keywords_specific_position(text: str, *, keyword, n, m) -> bool:
    """words:keywords_specific_position: the m-th word of the n-th sentence is the keyword,
    case-insensitively, counting NLTK word tokens that hold a letter or digit."""
    keyword, n, m = t.needed(keyword, "keyword").strip(), t.needed(n, "n"), t.needed(m, "m")
    found = t.sentences(text)
    if len(found) < n:
        return False
    words = [w for w in t.word_tokens(found[n - 1]) if any(ch.isalnum() for ch in w)]
    return len(words) >= m and words[m - 1].lower() == keyword.lower()


def words_position(text: str, *, keyword) -> bool:
    """words:words_position: the second word token and the second to last are the keyword,
    case-insensitively; when the last token is punctuation (any substring of
    `string.punctuation`, quirk) the third to last counts instead."""
    keyword = keyword.strip().lower()
    head = t.first_word_tokens(text, 3)
    if len(head) < 2:
        return False
    tail = t.last_word_tokens(text, 3) if len(head) == 3 else head
    if tail[-1] in string.punctuation:
        return len(tail) >= 3 and head[1].lower() == tail[-3].lower() == keyword
    return head[1].lower() == tail[-2].lower() == keyword


def _alliteration(sentence: str) -> int:
    """Words in runs of neighbours sharing a first character (punctuation stripped in front)."""
    heads = [w.lstrip(t.STRIP) for w in sentence.lower().split()]
    heads = [w for w in heads if w]
    total, in_run = 0, False
    for a, b in itertools.pairwise(heads):
        if a[0] == b[0]:
            total += 1 if in_run else 2
            in_run = True
        else:
            in_run = False
    return total


def alliteration_increment(text: str) -> bool:
    """sentence:alliteration_increment: each sentence has more alliterating words than the one
    before (the first needs none)."""
    previous = -1
    for sentence in t.sentences(text):
        current = _alliteration(sentence)
        if current <= previous:
            return False
        previous = current
    return True


def keyword(text: str, *, word, N) -> bool:
    """sentence:keyword: the keyword, as a whole word and case-insensitively, in the N-th
    sentence (N = 0 looks at the last sentence, as the authors' index does)."""
    word = t.needed(word, "word")
    found = t.sentences(text)
    if len(found) < N:
        return False
    return re.search(rf"\b{re.escape(word)}\b", found[int(N - 1)], re.IGNORECASE) is not None


def increment(text: str, *, small_n) -> bool:
    """sentence:increment: each sentence has exactly small_n more words (punctuation removed)
    than the one before. A response NLTK finds no sentence in raises, as the authors' does."""
    found = t.sentences(text)
    counts = [len(t.without_punctuation(sentence).split()) for sentence in found]
    if not counts:  # the authors index the first sentence unconditionally
        raise IndexError("sentence:increment: NLTK finds no sentence in the response")
    return all(b == a + small_n for a, b in itertools.pairwise(counts))


CHECKERS = {
    "words:alphabet": alphabet,
    "words:vowel": vowel,
    "words:consonants": consonants,
    "sentence:alliteration_increment": alliteration_increment,
    "words:palindrome": palindrome,
    "words:prime_lengths": prime_lengths,
    "words:start_verb": start_verb,
    "words:repeats": repeats,
    "sentence:keyword": keyword,
    "words:odd_even_syllables": odd_even_syllables,
    "words:last_first": last_first,
    "words:paragraph_last_first": paragraph_last_first,
    "sentence:increment": increment,
    "words:no_consecutive": no_consecutive,
    "words:keywords_specific_position": keywords_specific_position,
    "words:words_position": words_position,
}
