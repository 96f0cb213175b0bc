"""IFBench checkers of layout and markup: `format:*`.

Each checker takes the response and the instruction's arguments and says whether the response
follows the instruction, with the semantics of the authors' code (allenai/IFBench db69a6f).
"""

from __future__ import annotations

import itertools
import re
import string
from collections import defaultdict, deque

import emoji

from . import text as t

OPENERS = {")": "(", "]": "[", "}": "{"}
_CHOICE_LETTERS = re.compile(r"\W*[aA]\W*[bB]\W*[cC]\W*")
DIGITS_AND_MARKS = string.digits + string.punctuation.replace('"', "")


def parentheses(text: str) -> bool:
    """format:parentheses: brackets ( [ { nested 5 deep and then one closed; a closer that does
    not match the innermost opener starts the count afresh."""
    open_, deepest = [], 0
    for ch in text:
        if ch in "([{":
            open_.append(ch)
            deepest = max(deepest, len(open_))
        elif ch in OPENERS:
            if open_ and open_[-1] == OPENERS[ch]:
                open_.pop()
                if deepest >= 5:
                    return True
            else:
                open_, deepest = [], 0
    return False


def quotes(text: str) -> bool:
    """format:quotes: quote marks (" and ') nested 3 deep: a mark equal to the innermost open
    one closes it, any other opens a level; passes once the deepest level reached is 3 above
    the level a closing mark leaves."""
    open_, deepest = [], 0
    for ch in text:
        if open_ and ch == open_[-1]:
            open_.pop()
            if deepest - len(open_) >= 3:
                return True
        elif ch in "\"'":
            open_.append(ch)
            deepest = max(deepest, len(open_))
    return False


def options(text: str, *, options) -> bool:
    """format:options: the response is one of the options. Options are split at "/", else at
    "or" (even inside a word), else at ","; lettered choices ("a), b), c)") must be matched
    exactly, others after stripping punctuation and spaces, case-insensitively."""
    exact = _CHOICE_LETTERS.match(options) is not None
    separator = "/" if "/" in options else "or" if "or" in options else ","
    choices = [choice.strip() for choice in options.split(separator)]
    if exact:
        return text in choices
    answer = text.strip(t.STRIP).lower()
    return any(choice.strip(t.STRIP).lower() == answer for choice in choices)


def newline(text: str) -> bool:
    """format:newline: one word per line: as many non-empty lines as words, punctuation removed
    (a line of spaces counts as a line)."""
    bare = t.without_punctuation(text).strip()
    lines = [line for line in bare.split("\n") if line != ""]
    return len(lines) == len(bare.split())


def _ends_with_emoji(piece: str) -> bool:
    return emoji.is_emoji(piece[-1]) or emoji.is_emoji(piece[-2] if len(piece) > 1 else piece[-1])


def emoji_sentences(text: str) -> bool:
    """format:emoji: every sentence (punctuation removed) ends with an emoji in its last two
    characters, or, but for the last sentence, the next one starts with one (NLTK's splitter
    often puts a sentence's emoji at the start of the next)."""
    found = t.sentences(text)
    for i, sentence in enumerate(found):
        bare = t.without_punctuation(sentence).strip()
        if not bare:
            return False
        if _ends_with_emoji(bare):
            continue
        if i == len(found) - 1:
            return False
        following = t.without_punctuation(found[i + 1]).strip()
        if not following or not emoji.is_emoji(following[0]):
            return False
    return True


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _drop_blank_lines(lines: list[str]) -> list[str]:
    """What the authors' `for line in lines: if not line.strip(): lines.remove(line)` leaves,
    in linear time: after each removal the loop skips the next line, and `remove` takes the
    first line still there that equals the blank one (perhaps an earlier, skipped one)."""
    removed, waiting = set(), defaultdict(deque)
    position, skip = 0, False
    for position, line in enumerate(lines):
        blank = not line.strip()
        if blank:
            waiting[line].append(position)
        if skip:
            skip = False
        elif blank:
            removed.add(waiting[line].popleft())
            skip = True
    return [line for position, line in enumerate(lines) if position not in removed]


def line_indent(text: str) -> bool:
    """format:line_indent: each line indented by more spaces than the one before, blank lines
    dropped (the authors' loop drops them while iterating, so a blank line right after a
    dropped one stays, and then breaks the stairs)."""
    lines = _drop_blank_lines(text.split("\n"))
    return all(_indent(b) > _indent(a) for a, b in itertools.pairwise(lines))


def quote_unquote(text: str) -> bool:
    """format:quote_unquote: whitespace removed, no two straight double quotes in a row and the
    text (digits and other punctuation stripped at its ends) does not end with one. Curly
    quotes are not quotes here (the authors' normalisation of them is a no-op)."""
    squeezed = "".join(text.replace("'\"'", "").split())
    if '""' in squeezed:
        return False
    stripped = squeezed.strip(DIGITS_AND_MARKS)
    return not (stripped and stripped[-1] == '"')


def special_list(text: str, *, sep) -> bool:
    """format:list: the separator occurs at least twice (anywhere, not only at line starts)."""
    return text.count(sep) >= 2


def thesis(text: str) -> bool:
    """format:thesis: an HTML italic (<i>...</i>, else <em>...</em>) with text in it and text
    after it. Quirks kept: the span starts 3 characters after the tag and the rest 4 after the
    closing tag's start, whichever tag was found."""
    start = text.find("<i>")
    if start == -1:
        start = text.find("<em>")
        if start == -1:
            return False
    rest = text[start:]
    end = rest.find("</i>")
    if end == -1:
        end = rest.find("</em>")
        if end == -1:
            return False
    return rest[3:end].strip() != "" and rest[end + 4 :].strip() != ""


def sub_bullets(text: str) -> bool:
    """format:sub-bullets: every piece after a "*" holds a "-" before the next "*" (a text
    with no "*" passes)."""
    return all("-" in piece for piece in text.split("*")[1:])


def no_bullets_bullets(text: str) -> bool:
    """format:no_bullets_bullets: lines of prose with at least two NLTK sentences, then at least
    two lines starting with "*" and nothing else. Quirk kept: a prose line with no sentence (a
    blank line) ends the prose, so prose after it fails."""
    prose, sentence_count, bullets = True, 0, 0
    for line in text.split("\n"):
        if line.strip().startswith("*"):
            prose = False
            if sentence_count < 2:
                return False
            bullets += 1
        elif prose:
            found = t.sentences(line.strip())
            prose = bool(found)
            sentence_count += len(found)
        else:
            return False
    return bullets >= 2


def title_case(text: str) -> bool:
    """format:title_case: no NLTK word token starting with a letter is all lower case or
    lower-then-upper ("iPHONE"); one-letter tokens must be upper case; mixed tokens pass."""
    for word in t.iter_word_tokens(text):
        if not word or not word[0].isalpha():
            continue
        if len(word) == 1:
            if word.islower():
                return False
            continue
        if word[0].islower() and (word[1:].isupper() or word[1:].islower()):
            return False
    return True


def output_template(text: str) -> bool:
    """format:output_template: "My Answer:", "My Conclusion:" and "Future Outlook:" all appear."""
    return all(label in text for label in ("My Answer:", "My Conclusion:", "Future Outlook:"))


def no_whitespace(text: str) -> bool:
    """format:no_whitespace: no whitespace character at all."""
    return not any(ch.isspace() for ch in text)


CHECKERS = {
    "format:parentheses": parentheses,
    "format:quotes": quotes,
    "format:options": options,
    "format:newline": newline,
    "format:emoji": emoji_sentences,
    "format:line_indent": line_indent,
    "format:quote_unquote": quote_unquote,
    "format:list": special_list,
    "format:thesis": thesis,
    "format:sub-bullets": sub_bullets,
    "format:no_bullets_bullets": no_bullets_bullets,
    "format:title_case": title_case,
    "format:output_template": output_template,
    "format:no_whitespace": no_whitespace,
}
