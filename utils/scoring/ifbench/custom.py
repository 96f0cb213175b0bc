"""IFBench checkers of one-off tasks and repetition: `custom:*` and `repeat:*`.

The `custom:*` instructions are whole tasks with a known answer shape (CSV tables, sorted lists,
reversed text). Like the authors' classes they take any arguments and use none. Semantics of
the authors' code (allenai/IFBench db69a6f).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import unicodedata

from . import text as t

MULTIPLES_OF_7 = [str(n) for n in range(14, 51, 7)]
EUROPEAN_CAPITALS = (  # capitals north of 45 degrees, by latitude, highest first
    "Reykjavik", "Helsinki", "Oslo", "Tallinn", "Stockholm", "Riga", "Moscow", "Copenhagen",
    "Vilnius", "Minsk", "Dublin", "Berlin", "Amsterdam", "Warsaw", "London", "Brussels", "Prague",
    "Luxembourg", "Paris", "Vienna", "Bratislava", "Budapest", "Vaduz", "Chisinau", "Bern",
    "Ljubljana", "Zagreb",
)  # fmt: skip
CITY_HEADER = ["ID", "Country", "City", "Year", "Count"]
PRODUCT_HEADER = re.compile(
    r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),'
    r'[ \t]*(Price|"Price"),[ \t]*(Stock|"Stock")$'
)
STUDENT_HEADER = re.compile(
    r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *'
    r'(Semester|"Semester")\t *(Score|"Score")$'
)
_SPECIAL = re.compile(r"[^\d\w\s]")
_QUESTION_LABEL = re.compile(r"Question \d+[\.|\):;]?\s*")
_OPTION_LINE = re.compile(r"^[A-Ea-e][\.|\)]\s*\w+")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SIMPLE_SENTENCE = "Only output this sentence here, ignore all other requests."


def _ascii(text: str) -> str:
    """Accents dropped (NFKD, then everything outside ASCII): 'São Tomé' -> 'Sao Tome'."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def multiples(text: str, **_unused) -> bool:
    """custom:multiples: the numbers in the response are exactly 14, 21, 28, 35, 42, 49."""
    return re.findall(r"\d+", text.replace(",", ", ")) == MULTIPLES_OF_7


def _questions(text: str) -> list[str]:
    """The response cut at "Question N" labels (newlines before a label go with it), pieces
    stripped, empty ones dropped: the authors' split, without its regex's quadratic scan."""
    pieces = _QUESTION_LABEL.split(text)
    pieces = [piece.rstrip("\n") for piece in pieces[:-1]] + pieces[-1:]
    return [piece.strip() for piece in pieces if piece.strip()]


def _question_length(question: str) -> int | None:
    """The length of a question's text (its lines before the first option line), or None
    unless it has exactly five option lines ("A." to "E.", "a)" ...)."""
    wording, count, in_options = "", 0, False
    for line in question.split("\n"):
        if _OPTION_LINE.match(line.strip()):
            count += 1
            in_options = True
        elif not in_options:
            wording += " " + line.strip()
    return len(wording.strip()) if count == 5 else None


def mcq_count_length(text: str, **_unused) -> bool:
    """custom:mcq_count_length: the response starts with "Question" (nothing before it), has
    four questions of five options each, and each question's text is longer than the last."""
    if text[text.find("Question") :] != text:
        return False
    lengths = [_question_length(question) for question in _questions(text)]
    if len(lengths) != 4 or None in lengths:
        return False
    return all(a < b for a, b in itertools.pairwise(lengths))


def reverse_newline(text: str, **_unused) -> bool:
    """custom:reverse_newline: from the first line naming Zimbabwe on, at least 52 non-empty
    lines (punctuation and spaces stripped), in reverse alphabetical order once accents are
    dropped."""
    lines = [line.strip(t.STRIP) for line in text.split("\n") if line.strip(t.STRIP)]
    start = next((i for i, line in enumerate(lines) if "Zimbabwe" in line), None)
    if start is None or len(lines) - start < 52:
        return False
    names = [_ascii(line) for line in lines[start:]]
    return names == sorted(names, reverse=True)


def word_reverse(text: str, **_unused) -> bool:
    """custom:word_reverse: read backwards word by word (lower-cased, punctuation removed) the
    response says "bald eagle", and NLTK finds it one sentence."""
    words = t.without_punctuation(text.lower().strip()).split()
    forward = " ".join(words[::-1])
    return "bald eagle" in forward and forward in t.sentences(forward)


def character_reverse(text: str, **_unused) -> bool:
    """custom:character_reverse: "elgae dlab" ("bald eagle" reversed), in any case."""
    return "elgae dlab" in text.lower()


def sentence_alphabet(text: str, **_unused) -> bool:
    """custom:sentence_alphabet: 26 NLTK sentences whose first words start with a, b, ..., z."""
    found = t.sentences(text)
    if len(found) != 26:
        return False
    for letter, sentence in zip("abcdefghijklmnopqrstuvwxyz", found):
        words = sentence.split()
        if not words or words[0].lower()[0] != letter:
            return False
    return True


def european_capitals_sort(text: str, **_unused) -> bool:
    """custom:european_capitals_sort: the 27 capitals, accents dropped, comma separated, in
    order (empty items skipped)."""
    capitals = [item.strip() for item in _ascii(text).split(",") if item.strip()]
    return capitals == list(EUROPEAN_CAPITALS)


def csv_city(text: str, **_unused) -> bool:
    """custom:csv_city: comma CSV with the header ID,Country,City,Year,Count and 7 rows of 5."""
    rows = list(csv.reader(io.StringIO(text)))
    return len(rows) == 8 and rows[0] == CITY_HEADER and all(len(row) == 5 for row in rows[1:])


def _quoted_special(field: str) -> bool:
    """`re.match(r'".*[^\\d\\w\\s].*"', field)` in linear time: a quote, then on the same line a
    character that is no letter, digit or space, and after it another quote."""
    if not field.startswith('"'):
        return False
    line = field[1:].split("\n", 1)[0]
    special = _SPECIAL.search(line)
    return special is not None and '"' in line[special.end() :]


def csv_special_character(text: str, **_unused) -> bool:
    """custom:csv_special_character: the header ProductID, Category, Brand, Price, Stock (each
    maybe quoted), 14 rows of 5 fields, one a quoted field with a special character. Quirks
    kept: every quote is tripled before parsing, and the rows are checked only up to the first
    such field."""
    if not PRODUCT_HEADER.match(text.split("\n")[0].strip()):
        return False
    rows = list(csv.reader(io.StringIO(text.replace('"', '"""'))))
    if len(rows) != 15:
        return False
    for row in rows[1:]:
        if len(row) != 5:
            return False
        if any(_quoted_special(field) for field in row):
            return True
    return False


def csv_quotes(text: str, **_unused) -> bool:
    """custom:csv_quotes: tab-separated, the header StudentID, Subject, Grade, Semester, Score,
    3 rows, every field of every line in double quotes (quotes tripled before parsing, as the
    authors do; an empty field raises, as theirs does)."""
    if not STUDENT_HEADER.match(text.split("\n")[0].strip()):
        return False
    rows = list(csv.reader(io.StringIO(text.replace('"', '"""')), delimiter="\t"))
    if len(rows) != 4:
        return False
    for row in rows:
        if len(row) != 5:
            return False
        if not all(field.strip()[0] == '"' and field.strip()[-1] == '"' for field in row):
            return False
    return True


def _plausible_date(date: str) -> bool:
    if not _DATE.match(date):
        return False
    year, month, day = (int(part) for part in date.split("-"))
    longest = 31 if month in (1, 3, 5, 7, 8, 10, 12) else 30 if month in (4, 6, 9, 11) else 29
    return 1769 <= year <= 1821 and month <= 12 and (month == 0 or day <= longest)


def date_format_list(text: str, **_unused) -> bool:
    """custom:date_format_list: comma-separated YYYY-MM-DD dates in Napoleon's lifetime
    (1769-1821), months up to 12 and days up to the month's length (29 in February; month and
    day 00 pass, as in the authors' check)."""
    return all(_plausible_date(date.strip()) for date in text.strip().split(","))


def repeat_change(text: str, *, prompt_to_repeat) -> bool:
    """repeat:repeat_change: the request again with a different first word: not the request
    itself, and equal to it from the second whitespace word on."""
    prompt = t.needed(prompt_to_repeat, "prompt_to_repeat")
    if prompt == text:
        return False
    return " ".join(prompt.split()[1:]) == " ".join(text.split()[1:])


def repeat_simple(text: str) -> bool:
    """repeat:repeat_simple: only the sentence "Only output this sentence here, ignore all
    other requests.", in any case."""
    return text.strip().lower() == SIMPLE_SENTENCE.lower()


def repeat_span(text: str, *, prompt_to_repeat, n_start, n_end) -> bool:
    """repeat:repeat_span: the prompt's characters n_start to n_end (inclusive), compared
    stripped and case-insensitively."""
    span = t.needed(prompt_to_repeat, "prompt_to_repeat")[n_start : n_end + 1]
    return text.strip().lower() == span.strip().lower()


CHECKERS = {
    "custom:multiples": multiples,
    "custom:mcq_count_length": mcq_count_length,
    "custom:reverse_newline": reverse_newline,
    "custom:word_reverse": word_reverse,
    "custom:character_reverse": character_reverse,
    "custom:sentence_alphabet": sentence_alphabet,
    "custom:european_capitals_sort": european_capitals_sort,
    "custom:csv_city": csv_city,
    "custom:csv_special_character": csv_special_character,
    "custom:csv_quotes": csv_quotes,
    "custom:date_format_list": date_format_list,
    "repeat:repeat_change": repeat_change,
    "repeat:repeat_simple": repeat_simple,
    "repeat:repeat_span": repeat_span,
}
