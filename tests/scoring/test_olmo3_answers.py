"""OLMES's olmo3 answer cascade: each extraction rule on hand-written completions, and the
linear-time cascade equal to the plain cascade (every template, OLMES's lazy boxed pattern,
`findall` over the rest) on many random short completions."""

import random
import re

import pytest

from evalpack.scoring import line_scans
from evalpack.scoring import olmo3_answers as o


def plain_cascade(text, answer_regexes, format_regex=None, templates=(), prefixes=()):
    """The cascade exactly as OLMES runs it (quadratic on long texts; fine on short ones)."""
    answer, fmt = "", 0.0
    if format_regex and re.findall(format_regex, text):
        answer, fmt = re.findall(format_regex, text)[-1], 1.0
    if answer == "":
        for index, template in enumerate(templates):
            for regex in answer_regexes:
                found = list(re.finditer(template.replace("$ANS$", regex), text))
                if found:
                    groups = found[-1].groups()
                    answer = next((g for g in reversed(groups) if g), groups[0])
                    if answer != "":
                        fmt = 1.0 if index == 0 else 0.5
                        break
            if answer != "":
                break
    if answer == "":
        for index, prefix in enumerate(prefixes):
            found = list(re.finditer(prefix, text))
            if found:
                rest = text[found[-1].end() :].strip().strip(".")
                hits = re.findall("(" + "|".join(answer_regexes) + ")", rest)
                if hits:
                    answer = hits[0][0]
                    for group in hits[0][1:]:
                        if group != "":
                            answer = group
                    if answer != "":
                        fmt = 1.0 if index == 0 else 0.5
                        break
    if answer == "":
        for index, regex in enumerate(answer_regexes):
            hits = re.findall(regex, text)
            if hits:
                answer, fmt = hits[-1], 0.2 if index == 0 else 0.1
                break
    return {"answer": answer, "answer_format_correct": fmt}


def plain_gsm8k_text(text):
    """GSM8K's preprocessing with OLMES's own substitutions."""
    out = re.sub(r"(\d),(\d)", r"\1\2", text)
    out = re.sub(r"\.\s*$", "", out).strip()
    for left, right in o.GSM8K_DELIMITERS:
        out = re.sub(f"{re.escape(left)}(.*){re.escape(right)}", r"\1", out).strip()
    return out


FAMILIES = {
    "mmlu": ([o.LETTERS_AD], None, o.OLMO3_TEMPLATES, ()),
    "agi_eval": ([o.LETTERS_AF], o.AGIEVAL_FORMAT, o.OLMO3_TEMPLATES, ()),
    "gsm8k": (list(o.GSM8K_ANSWERS), o.GSM8K_FORMAT, (), o.GSM8K_PREFIXES),
}
ATOMS = [
    "Therefore, the answer is ", "the answer is ", "So the answer is ", "The correct answer is: ",
    "A: ", "Answer: ", " is correct", "(B)", "(F)", "C", "b", "a", " ", "\n", ".", "\\boxed{",
    "}", "18", "1,200", "$", "**", "\\(", "\\)", "Therefore, the final answer is \\boxed{", "x",
    "\\[", "\\]", "\\[\n", "\n\\]", "***", "2.5",
]  # fmt: skip


@pytest.mark.parametrize("family", FAMILIES)
def test_the_linear_cascade_equals_the_plain_one_on_random_completions(family):
    regexes, fmt, templates, prefixes = FAMILIES[family]
    rng = random.Random(45)
    for _ in range(3000):
        text = "".join(rng.choice(ATOMS) for _ in range(rng.randint(0, 14)))
        expected = plain_cascade(text, regexes, fmt, templates, prefixes)
        if family == "gsm8k":
            assert o.extract_gsm8k(text) == plain_cascade(
                plain_gsm8k_text(text), regexes, fmt, templates, prefixes
            ), repr(text)
        elif family == "mmlu":
            assert o.extract_mmlu(text) == expected, repr(text)
        else:
            found = o.extract_agi_eval(text)
            assert found["answer"] == expected["answer"].replace("(", "").replace(")", "")
            assert found["answer_format_correct"] == expected["answer_format_correct"]


@pytest.mark.parametrize(
    "text, answer, fmt",
    [
        ("Therefore, the answer is: B", "B", 1.0),  # template 1
        ("therefore the answer is (c) because", "c", 1.0),  # case-insensitive, lower kept
        ("So the answer is D.", "D", 0.5),  # template 2
        ("The correct answer is: A", "A", 0.5),
        ("A: C", "C", 0.5),  # template 5 ("a:" then the letter)
        ("Option B is correct", "B", 0.5),  # template 7
        ("I like (D) more than (A)", "A", 0.5),  # template 8: the LAST parenthesised letter
        ("Between A and B", "B", 0.5),  # template 9: the last standalone letter
        ("It is a cat", "a", 0.5),  # the article reads as A (OLMES's quirk)
        ("Therefore, the answer is: A. Later: Therefore, the answer is: B", "B", 1.0),
        ("nothing here", "", 0.0),
    ],
)
def test_mmlu_rules(text, answer, fmt):
    assert o.extract_mmlu(text) == {"answer": answer, "answer_format_correct": fmt}


@pytest.mark.parametrize(
    "text, answer, fmt",
    [
        ("Therefore, the answer is (E)", "E", 1.0),  # the exact phrase
        ("Therefore, the answer is (F)", "F", 1.0),  # F is in the class
        ("therefore, the answer is (b)", "b", 1.0),  # the phrase is case-sensitive: template 1
        ("(A) or (C)?", "C", 0.5),
    ],
)
def test_agi_eval_rules(text, answer, fmt):
    assert o.extract_agi_eval(text) == {"answer": answer, "answer_format_correct": fmt}


@pytest.mark.parametrize(
    "text, answer, fmt",
    [
        ("Therefore, the final answer is \\boxed{1,200}.", "1200", 1.0),  # commas between digits
        ("Therefore, the final answer is \\boxed{3}. Also \\boxed{4}.", "3}. Also \\boxed{4", 1.0),
        ("The answer is $18$.", "18", 0.5),  # delimiters peeled, prefix 4
        ("Therefore, the final answer is 7", "7", 1.0),  # prefix 1, no box
        ("I think \\boxed{12} works", "12", 0.2),  # bare answers: the boxed regex first
        ("numbers 3 and 5", "5", 0.1),  # then the last number (under the 0.4 cutoff)
        ("words only", "", 0.1),  # then `(.*)\.?`, whose LAST match is the empty one at the end
        ("", "", 0.1),  # `(.*)\.?` matches the empty text
    ],
)
def test_gsm8k_rules(text, answer, fmt):
    assert o.extract_gsm8k(text) == {"answer": answer, "answer_format_correct": fmt}


@pytest.mark.parametrize(
    "subtask, text, answer",
    [
        ("date_understanding", "Therefore, the answer is (B) here", "(B)"),
        ("date_understanding", "So the answer is B.", ""),  # MC needs "(B)"; bare letter: none
        ("date_understanding", "So the answer is (b).", "(b)"),
        ("boolean_expressions", "so the answer is true.", "true"),
        ("word_sorting", "The answer is apple zebra.", "apple zebra"),
        ("dyck_languages", "So the answer is ] ).", "] )"),
        ("object_counting", "so the answer is 7 and then 9", "7"),  # template 2 before 9
    ],
)
def test_bbh_rules(subtask, text, answer):
    assert o.extract_bbh(text, subtask) == answer


def test_word_sorting_is_correct_equals_the_regex_on_random_texts():
    """Template 7 with word_sorting's pattern, read in linear time, equals OLMES's regex."""
    template = o.SEARCHED_TEMPLATES[6].replace("$ANS$", "[a-z ]+")
    atoms = ["is", " ", "correct", "\n", ")", "a", "Z", "x y", "_", "1", ".", "\t", "\u017f"]
    atoms += ["\xe9", "IS CORRECT", " is correct"]
    rng = random.Random(45)
    for _ in range(20000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 12)))
        assert o.word_list_is_correct(text) == re.findall(template, text), repr(text)
    assert o.extract_bbh("apple zebra is correct", "word_sorting") == "apple zebra"


def test_line_scans_equal_the_regexes_on_random_lines():
    atoms = ["\\boxed{", "}", "{", "\n", "x", "$", "\\(", "\\)", "**", "*", "\\[", "\\]", " "]
    atoms.append(o.FORMAT_OPENING)
    pairs = [(left, right) for left, right in o.GSM8K_DELIMITERS if "\n" not in left]
    pairs.append((o.FORMAT_OPENING, "}"))
    rng = random.Random(45)
    for _ in range(20000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 12)))
        boxed = [(m.start(), m.end(), m.group(1)) for m in re.finditer(r"\\boxed\{(.*?)\}", text)]
        assert list(line_scans.boxed_matches(text)) == boxed, repr(text)
        lazy = re.findall(o.GSM8K_BOXED_LAZY, text)
        assert lazy == [content for _, _, content in boxed], repr(text)
        for left, right in pairs:
            pattern = f"{re.escape(left)}(.*){re.escape(right)}"
            found = [(m.start(), m.end(), m.group(1)) for m in re.finditer(pattern, text)]
            assert list(line_scans.greedy_matches(text, left, right)) == found, repr(text)
            assert line_scans.peel(text, left, right) == re.sub(pattern, r"\1", text)


LONG = 130_000
PHRASE = "Therefore, the final answer is \\boxed{"


@pytest.mark.parametrize(
    "text, answer, fmt",
    [
        ("\\boxed{" * (LONG // 7), "", 0.1),  # no "}": OLMES's lazy boxed regex is quadratic
        ("\\(" * (LONG // 2) + "1", "1", 0.1),  # no "\)": its `\\\((.*)\\\)` peel likewise
        (PHRASE * (LONG // len(PHRASE)) + "7", "\\boxed{7", 1.0),  # the phrase, never closed
        ("12, " * (LONG // 4) + "\\boxed{5}", "5", 0.2),
    ],
)
def test_gsm8k_on_130000_characters(text, answer, fmt):
    """Shapes on which OLMES's patterns take quadratic time; OLMES's answer, read linearly."""
    assert o.extract_gsm8k(text) == {"answer": answer, "answer_format_correct": fmt}
