"""IFBench checkers: every instruction type followed and violated, the authors' argument
handling and loose mode, and the quirks kept from their code, each checked against the plain
form the authors wrote (the pack's versions avoid quadratic work)."""

import random
import re

import pytest

from evalpack.scoring.ifbench import checkers, custom, layout, registry
from evalpack.scoring.ifbench import text as t
from tests.scoring.ifbench_cases import CASES


def verdict(instruction_id, kwargs, response):
    doc = {"instruction_id_list": [instruction_id], "kwargs": [kwargs]}
    record = checkers.score_response(doc, response)
    return record["strict"][0], record["loose"][0], record.get("errors", [None])[0]


def test_every_instruction_type_has_cases():
    assert sorted(CASES) == sorted(registry.INSTRUCTION_TYPES) == sorted(registry.CHECKERS)
    assert len(registry.INSTRUCTION_TYPES) == 58


@pytest.mark.parametrize("instruction_id", sorted(CASES))
def test_a_following_and_a_violating_response(instruction_id):
    kwargs, follows, violates = CASES[instruction_id]
    assert verdict(instruction_id, kwargs, follows) == (True, True, None)
    strict, _, error = verdict(instruction_id, kwargs, violates)
    assert (strict, error) == (False, None)


def test_loose_mode_drops_the_first_or_last_line_and_asterisks():
    sentence = "Only output this sentence here, ignore all other requests."
    assert verdict("repeat:repeat_simple", {}, f"**{sentence}**")[:2] == (False, True)
    assert verdict("format:no_whitespace", {}, "Sure:\nNoSpaces")[:2] == (False, True)
    assert verdict("format:no_whitespace", {}, "NoSpaces\nHope this helps")[:2] == (False, True)
    assert verdict("format:no_whitespace", {}, "Sure:\nNo spaces\nBye")[:2] == (False, False)


@pytest.mark.parametrize("instruction_id", sorted(CASES))
def test_a_blank_response_follows_nothing(instruction_id):
    kwargs = CASES[instruction_id][0]
    assert verdict(instruction_id, kwargs, "")[:2] == (False, False)
    assert verdict(instruction_id, kwargs, " \n\t ")[:2] == (False, False)


def test_arguments_as_the_authors_pass_them():
    # None is dropped, 0 is kept (OLMES drops every falsy value and would draw n_start)
    span = {"prompt_to_repeat": "The walls", "n_start": 0, "n_end": 2, "n_end_unused": None}
    assert registry.arguments(span) == {"prompt_to_repeat": "The walls", "n_start": 0, "n_end": 2}
    assert verdict("repeat:repeat_span", span, "the")[:2] == (True, True)
    # the custom tasks take any argument, as the authors' classes do
    assert verdict("custom:character_reverse", {"N": 3}, "elgae dlab")[:2] == (True, True)


@pytest.mark.parametrize(
    "instruction_id, kwargs, message",
    [
        ("count:numbers", {}, "count:numbers: missing a required argument: 'N'"),
        ("count:numbers", {"N": 2, "n": 3}, "count:numbers: got an unexpected keyword argument"),
        ("words:no_such_check", {}, "unknown IFBench instruction id 'words:no_such_check'"),
        ("sentence:keyword", {"word": "", "N": 1}, "'word' is empty: the authors' checker would"),
    ],
)
def test_arguments_that_do_not_fit_fail_the_instruction_and_say_why(
    instruction_id, kwargs, message
):
    strict, loose, error = verdict(instruction_id, kwargs, "Some answer 1 2.")
    assert (strict, loose) == (False, False)
    assert message in error


def test_quirks_kept_from_the_authors_code():
    # words are told apart as written: "and" and "And," are two conjunctions
    assert verdict("count:conjunctions", {"small_n": 2}, "And, tea and cake.")[0]
    # curly quotes are not quotes (the authors' replacement of them is a no-op)
    assert verdict("format:quote_unquote", {}, "He said “Carpe diem”")[0]
    # keywords are counted as substrings: "cat" inside "category"
    kw = {"keyword1": "cat", **{f"keyword{i}": f"z{i}" for i in range(2, 6)}}
    text = "category " + " ".join(
        f"z{i}" for i, n in zip(range(2, 6), (2, 3, 5, 7)) for _ in range(n)
    )
    assert verdict("count:keywords_multiple", kw, text)[0]
    # a blank line ends the prose part of no_bullets_bullets
    assert not verdict("format:no_bullets_bullets", {}, "A b. C d.\n\nE f.\n* x\n* y")[0]
    # sentence N = 0 reads the last sentence
    assert verdict("sentence:keyword", {"word": "cat", "N": 0}, "A dog. A cat.")[0]
    # a sentence with no words (NLTK keeps "...") fails last_first
    assert not verdict("words:last_first", {}, "I ran. ... Ran away.")[0]


def _authors_blank_line_loop(lines):
    lines = list(lines)
    for line in lines:
        if not line.strip():
            lines.remove(line)
    return lines


def test_blank_lines_are_dropped_as_the_authors_loop_drops_them():
    rng = random.Random(46)
    for _ in range(2000):
        lines = [rng.choice(["", " ", "  ", "a", " b", "  c"]) for _ in range(rng.randint(0, 12))]
        assert layout._drop_blank_lines(lines) == _authors_blank_line_loop(lines), lines


def test_question_split_equals_the_authors_regex():
    rng = random.Random(46)
    parts = ["Question 1", "Question 22.", "Question 3)", "\n", "\n\n", "x", " ", "Question", "Q"]
    for _ in range(2000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 10)))
        theirs = re.split(r"\n*(?:Question \d+[\.|\):;]?\s*)", text)
        theirs = [q.strip() for q in theirs if q.strip()]
        assert custom._questions(text) == theirs, text


def test_quoted_special_field_equals_the_authors_regex():
    rng = random.Random(46)
    for _ in range(5000):
        field = "".join(rng.choice('"a1 &\n_é-') for _ in range(rng.randint(0, 8)))
        theirs = re.match(r'".*[^\d\w\s].*"', field) is not None
        assert custom._quoted_special(field) == theirs, field


@pytest.mark.parametrize(
    "text",
    [
        "Write a poem. Then stop.",
        "“Run!” she said. Go.",
        "Mr. Smith went to Washington. He left at 5 p.m. on Friday...",
        "a",
        "12 cats. The end",
        "Hello there. I saw cat today.\n\nBye, A. B.",
    ],
)
def test_partial_tokenization_equals_nltks_whole(text):
    import nltk

    t.resources.install()  # NLTK's own functions find the shipped data, whatever ran before
    t.sentences.cache_clear()
    whole = nltk.word_tokenize(text)
    assert t.word_tokens(text) == whole
    assert t.first_word_tokens(text, 3) == whole[:3]
    assert t.last_word_tokens(text, 3) == whole[-3:]
    assert t.first_tag(text) == nltk.pos_tag(whole)[0][1]
