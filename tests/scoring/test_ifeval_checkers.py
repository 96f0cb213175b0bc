"""IFEval checkers as OLMES runs them: every instruction kind at its boundaries, OLMES's quirks,
seeded randomness and NLTK segmentation."""

import pytest

from evalpack.scoring.ifeval import checkers

END = "Is there anything else I can help with?"
AT_LEAST_3_CAPS = {"capital_relation": "at least", "capital_frequency": 3}
SECOND_STARTS_HELLO = {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "hello"}


def verdict(instruction_id, kwargs, response, prompt="", key=0):
    doc = {
        "key": key,
        "prompt": prompt,
        "instruction_id_list": [instruction_id],
        "kwargs": [kwargs],
    }
    record = checkers.score_response(doc, response)
    return record["strict"][0], record["loose"][0]


def words(n):
    return " ".join(["word"] * n)


# instruction id -> (kwargs, response, strict, loose): each checker kind at its boundaries.
BOUNDARIES = {
    "punctuation:no_comma": [
        ({}, "No commas here.", True, True),
        ({}, "One, two.", False, False),
        ({}, "Sure, here:\nNo commas here.", False, True),
    ],
    "detectable_format:number_highlighted_sections": [
        ({"num_highlights": 3}, "*one* and **two** and *three*", True, True),
        ({"num_highlights": 3}, "*one* and *two* and ** empty", False, False),
    ],
    "length_constraints:number_words": [
        ({"relation": "at least", "num_words": 300}, words(300), True, True),
        ({"relation": "at least", "num_words": 300}, words(299), False, False),
        ({"relation": "less than", "num_words": 300}, words(299), True, True),
        ({"relation": "less than", "num_words": 300}, words(300), False, False),
    ],
    "detectable_content:number_placeholders": [
        ({"num_placeholders": 3}, "Dear [name], at [address] on [date].", True, True),
        ({"num_placeholders": 3}, "Dear [name], at [address].", False, False),
    ],
    "combination:repeat_prompt": [
        ({"prompt_to_repeat": "Write a poem."}, "write a poem. Roses are red.", True, True),
        ({"prompt_to_repeat": "Write a poem."}, "Roses are red. Write a poem.", False, False),
    ],
    "detectable_format:title": [
        ({}, "<<My Title>>\nText.", True, True),
        ({}, "<< >>\nText.", False, False),
    ],
    "change_case:english_lowercase": [
        ({}, "this is an english sentence about cats.", True, True),
        ({}, "this is an English sentence about cats.", False, False),
    ],
    "change_case:english_capital": [
        ({}, "THIS IS AN ENGLISH SENTENCE ABOUT CATS.", True, True),
        ({}, "THIS IS AN ENGLISH SENTENCE ABOUT CATs.", False, False),
    ],
    "detectable_format:number_bullet_lists": [
        ({"num_bullets": 2}, "* one\n- two", True, True),
        # loose: without the first line, two bullets remain
        ({"num_bullets": 2}, "* one\n* two\n* three", False, True),
    ],
    "detectable_format:multiple_sections": [
        (
            {"section_spliter": "Section", "num_sections": 2},
            "Section 1\nintro\nSection 2\nbody",
            True,
            True,
        ),
        ({"section_spliter": "Section", "num_sections": 2}, "Section 1\nintro only", False, False),
    ],
    "change_case:capital_word_frequency": [
        (AT_LEAST_3_CAPS, "THE QUICK BROWN fox", True, True),
        (AT_LEAST_3_CAPS, "THE QUICK brown fox", False, False),
        (
            {"capital_relation": "less than", "capital_frequency": 3},
            "THE QUICK brown fox",
            True,
            True,
        ),
    ],
    "startend:quotation": [
        ({}, '"Wrapped in quotes."', True, True),
        ({}, 'Here you go:\n"Wrapped in quotes."', False, True),
    ],
    "keywords:existence": [
        ({"keywords": ["apple", "pear"]}, "An Apple and a pear.", True, True),
        # a substring counts: Google's checker has no word boundary here
        ({"keywords": ["apple", "pear"]}, "A pineapple and a pear.", True, True),
        ({"keywords": ["apple", "pear"]}, "An apple only.", False, False),
    ],
    "detectable_format:json_format": [
        ({}, '```json\n{"a": 1}\n```', True, True),
        ({}, '```\n{"a": [1, 2]}\n```', True, True),
        ({}, 'Here it is: {"a": 1}', False, False),
    ],
    "length_constraints:number_paragraphs": [
        ({"num_paragraphs": 2}, "One.\n***\nTwo.", True, True),
        # loose: without its first line, two paragraphs remain
        ({"num_paragraphs": 2}, "One.\n***\nTwo.\n***\nThree.", False, True),
    ],
    "combination:two_responses": [
        ({}, "First answer.\n******\nSecond answer.", True, True),
        ({}, "Same answer.\n******\nSame answer.", False, False),
    ],
    "language:response_language": [
        ({"language": "de"}, "Das ist ein kurzer Text, der eindeutig auf Deutsch ist.", True, True),
        ({"language": "de"}, "This is a short text that is clearly in English.", False, False),
    ],
    "keywords:letter_frequency": [
        ({"letter": "a", "let_relation": "at least", "let_frequency": 3}, "bAnana", True, True),
        ({"letter": "a", "let_relation": "at least", "let_frequency": 3}, "bana", False, False),
        ({"letter": "a", "let_relation": "less than", "let_frequency": 3}, "bana", True, True),
    ],
    "startend:end_checker": [
        ({"end_phrase": END}, f"Answer.\n{END}", True, True),
        ({"end_phrase": END}, f"Answer. {END} Bye.", False, False),
        ({"end_phrase": END}, f"Answer. {END}\nBye.", False, True),
    ],
    "keywords:forbidden_words": [
        ({"forbidden_words": ["bad"]}, "A badge is fine.", True, True),
        ({"forbidden_words": ["bad"]}, "This is Bad.", False, False),
    ],
    "keywords:frequency": [
        (
            {"keyword": "cat", "relation": "at least", "frequency": 2},
            "A cat and a Cat.",
            True,
            True,
        ),
        ({"keyword": "cat", "relation": "at least", "frequency": 2}, "A cat.", False, False),
        ({"keyword": "cat", "relation": "less than", "frequency": 2}, "A cat.", True, True),
    ],
    "length_constraints:number_sentences": [
        (
            {"relation": "less than", "num_sentences": 3},
            "Mr. Smith came at 5 p.m. today. He left.",
            True,
            True,
        ),
        ({"relation": "less than", "num_sentences": 3}, "One. Two. Three.", False, False),
        ({"relation": "at least", "num_sentences": 3}, "One. Two. Three.", True, True),
    ],
    "detectable_content:postscript": [
        ({"postscript_marker": "P.S."}, "Hi.\n\nP.S. Bye.", True, True),
        ({"postscript_marker": "P.S."}, "Hi. Bye.", False, False),
        ({"postscript_marker": "P.P.S"}, "Hi.\nP.P.S Bye.", True, True),
    ],
    "length_constraints:nth_paragraph_first_word": [
        (SECOND_STARTS_HELLO, "First part.\n\nHello, second part.", True, True),
        (SECOND_STARTS_HELLO, "First part.\n\nGoodbye.", False, False),
        # three paragraphs; loose: without the last line, two
        (SECOND_STARTS_HELLO, "First part.\n\nHello.\n\nThird.", False, True),
    ],
    "detectable_format:constrained_response": [
        ({}, "My answer is yes.", True, True),
        ({}, "Yes.", False, False),
    ],
}
CASES = [(iid, *case) for iid, cases in BOUNDARIES.items() for case in cases]


def test_every_instruction_type_has_boundary_cases():
    assert {case[0] for case in CASES} == set(checkers.INSTRUCTION_TYPES)
    assert len(checkers.INSTRUCTION_TYPES) == 25


@pytest.mark.parametrize("instruction_id, kwargs, response, strict, loose", CASES)
def test_checker_boundaries(instruction_id, kwargs, response, strict, loose):
    assert verdict(instruction_id, kwargs, response) == (strict, loose)


def test_loose_tries_olmes_eight_variants_in_order():
    assert checkers.loose_variants("Sure!\n*Hi* there\nBye*") == [
        "Sure!\n*Hi* there\nBye*",
        "Sure!\nHi there\nBye",
        "*Hi* there\nBye*",
        "Sure!\n*Hi* there",
        "*Hi* there",
        "Hi there\nBye",
        "Sure!\nHi there",
        "Hi there",
    ]


def test_a_blank_response_fails_every_instruction():
    # both checkers would accept a blank text; OLMES fails it before asking them
    assert verdict("punctuation:no_comma", {}, " \n\t") == (False, False)
    assert verdict("keywords:forbidden_words", {"forbidden_words": ["x"]}, "   ") == (False, False)


def test_falsy_kwargs_are_dropped_as_olmes_does():
    kwargs = {"a": 0, "b": "", "c": [], "d": None, "e": 2, "f": "x"}
    assert checkers.olmes_kwargs(kwargs) == {"e": 2, "f": "x"}
    # num_words 0 is dropped: the checker draws its own limit, seeded, so the same every time
    args = [
        checkers.build_checker(
            "length_constraints:number_words",
            {"relation": "at least", "num_words": 0},
            "",
            "ifeval:1:0",
        ).get_instruction_args()
        for _ in range(2)
    ]
    assert args[0] == args[1] and args[0]["num_words"] > 0


def test_a_checker_that_raises_counts_as_not_followed():
    # an unknown language code makes the checker's construction raise KeyError
    doc = {
        "key": 1,
        "prompt": "p",
        "kwargs": [{"language": "xx"}, {}],
        "instruction_id_list": ["language:response_language", "punctuation:no_comma"],
    }
    record = checkers.score_response(doc, "Plain text")
    assert record["strict"] == [False, True] and record["loose"] == [False, True]
    assert record["errors"][0].startswith("KeyError") and record["errors"][1] is None
    # lm-eval's built-in ifeval lets the same exception stop the run
    from lm_eval.tasks.ifeval import utils as lm_eval_ifeval

    with pytest.raises(KeyError):
        lm_eval_ifeval.process_results(doc, ["Plain text"])


def test_language_detection_is_seeded(monkeypatch):
    import langdetect
    from langdetect import DetectorFactory

    checkers.registry()
    assert DetectorFactory.seed == checkers.LANGDETECT_SEED == 0
    with monkeypatch.context() as unseeded:
        unseeded.setattr(DetectorFactory, "seed", None)
        assert len({langdetect.detect("x y z") for _ in range(100)}) > 1  # random unseeded
    verdicts = {
        verdict("language:response_language", {"language": "es"}, "x y z") for _ in range(30)
    }
    assert verdicts == {(False, False)}  # seeded: always "so" for this text


def test_a_non_letter_gets_a_seeded_stand_in_letter():
    import random

    state = random.getstate()
    letters = [
        checkers.build_checker(
            "keywords:letter_frequency", kwargs, "", checkers.instruction_seed(key, index)
        ).get_instruction_args()["letter"]
        for key, index, kwargs in [
            (1122, 1, {"letter": "#", "let_relation": "at least", "let_frequency": 4}),
            (1129, 0, {"letter": "!", "let_relation": "at least", "let_frequency": 6}),
        ]
    ]
    assert letters == ["t", "s"]
    assert random.getstate() == state  # the global generator is left as it was


def test_segmentation_is_that_of_olmes_nltk_3_8_1():
    # nltk 3.10.4 splits the first text in 2 and both words at the apostrophe, 3.9.4+ the
    # en dash; OLMES's nltk 3.8.1 (with the old pickle) and 3.9.1 (punkt_tab) do not
    import nltk

    checkers.registry()
    from lm_eval.tasks.ifeval import instructions_util

    quoted = (
        "Is it true that the first song ever sung in outer space is “Happy Birthday.”\n\n"
        "Your answer must contain one of the following phrases:\nMy answer is yes."
    )
    assert instructions_util.count_sentences(quoted) == 1
    assert (
        instructions_util.count_sentences(
            "Mr. Smith went to Washington. He arrived at 5 p.m. on Monday. Then he left!"
        )
        == 3
    )
    assert nltk.word_tokenize("They are 'bad' people") == ["They", "are", "'bad", "'", "people"]
    assert nltk.word_tokenize("CAUCHY–SCHWARZ holds") == ["CAUCHY–SCHWARZ", "holds"]
