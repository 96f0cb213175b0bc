"""BBH extraction: OLMES's verdicts, per-family cases, real targets and real completions."""

import re

import pytest

from evalpack.scoring.bbh_answers import (
    DELIMITERS,
    MULTIPLE_CHOICE,
    answer_pattern,
    exact_match_cot_v1,
    exact_match_release,
    extract_cot_release,
    extract_cot_v1,
    score_bbh,
)
from tests.conftest import DATA_DIR, OLMES_REF, OUTPUTS, read_jsonl, requires_shared

SUBTASKS = sorted(MULTIPLE_CHOICE) + [
    "boolean_expressions",
    "causal_judgement",
    "dyck_languages",
    "formal_fallacies",
    "multistep_arithmetic_two",
    "navigate",
    "object_counting",
    "sports_understanding",
    "web_of_lies",
    "word_sorting",
]


def _doc(docs, key):
    path, row = key.split("#")
    docs.setdefault(path, read_jsonl(DATA_DIR / f"{path}.jsonl"))
    return docs[path][int(row)]


def _subtask(key):
    return key.split("/")[1]


@requires_shared
def test_every_olmes_verdict_on_the_adversarial_completions():
    completions = {r["id"]: r["completion"] for r in read_jsonl(OUTPUTS / "bbh.jsonl")}
    verdicts = read_jsonl(OLMES_REF / "scores_dev_bbh.jsonl")
    docs, mismatches = {}, []
    for v in verdicts:
        record = score_bbh(completions[v["id"]], _doc(docs, v["key"])["target"], _subtask(v["key"]))
        if (record["answer"], record["exact_match"]) != (v["model_answer"], v["exact_match"]):
            mismatches.append(v["id"])
    assert len(verdicts) == 333 and len({_subtask(v["key"]) for v in verdicts}) == 27
    assert mismatches == []


def test_the_subtask_list_is_bbh():
    assert len(SUBTASKS) == len(set(SUBTASKS)) == 27 and len(MULTIPLE_CHOICE) == 17
    assert answer_pattern("snarks") == r"\([A-Z]\)"
    assert answer_pattern("navigate") == "[nN]o|[yY]es"
    with pytest.raises(KeyError):
        answer_pattern("not_a_subtask")


@pytest.mark.parametrize("subtask", SUBTASKS)
def test_no_answer_pattern_matches_a_left_delimiter(subtask):
    # OLMES skips a delimiter pair whose left side the answer pattern matches; for BBH that
    # never happens, which is why bbh_answers peels every pair.
    assert not any(re.match(answer_pattern(subtask), left) for left, _ in DELIMITERS)


@pytest.mark.parametrize(
    "completion, faithful, flex",
    [
        ("So the answer is (B).", "(B)", "(B)"),
        ("So the answer is (B)", "(B)", "(B)"),  # no trailing period
        ("SO THE ANSWER IS (b).", "(b)", "(b)"),  # any case; compared case-insensitively
        ("Therefore, the answer is **(A)**.", "(A)", "(A)"),  # bold
        ("The answer is (A). Wait: the answer is (B).", "(B)", "(B)"),  # last of several
        ("So the answer is (A).\nI mean, the answer is (C)", "(A)", "(A)"),  # first template wins
        ("Options (A) and (C) fail. So the answer is D.", "(C)", "(D)"),
        ("So the answer is B.", "", "(B)"),  # bare letter: OLMES's backspace template misses it
        ("the answer is **B**", "", "(B)"),
        ("Answer: $C$", "", "(C)"),
        ("So the answer is: B", "", "(B)"),
        ("So the answer is $\\boxed{A}$.", "", "(A)"),
        ("So the answer is [D].", "", "(D)"),
        ("B", "", "(B)"),  # a completion that is only a letter
        ("**E**.", "", "(E)"),
        ("I cannot determine which option is correct.", "", ""),  # "I" is not option (I)
        ("A man walks in. He is late.", "", ""),
        ("The answer is I think (B).", "(B)", "(B)"),
        ("the answer is a bit unclear", "", ""),
        ("So the answer is B because it fits.", "", "(B)"),  # a reason after the letter
        ("So the answer is option B.", "", "(B)"),
        ("The answer is Choice D", "", "(D)"),
        ("So the answer is A and B.", "", ""),  # two letters: no answer
        ("I am not sure, maybe (c).", "(c)", "(c)"),  # the case-insensitive last resort
        ("", "", ""),
    ],
)
def test_multiple_choice(completion, faithful, flex):
    assert extract_cot_v1(completion, "date_understanding") == faithful
    assert extract_cot_v1(completion, "date_understanding", flex=True) == flex


def test_bare_letter_scores_only_under_flex():
    record = score_bbh("So the answer is A.", "(A)", "hyperbaton")
    assert (record["answer"], record["exact_match"]) == ("", 0.0)
    assert (record["answer_flex"], record["exact_match_flex"]) == ("(A)", 1.0)


def test_letter_and_parenthesised_letter_compare_equal():
    assert exact_match_cot_v1("A", "(A)", "snarks") == 1.0
    assert exact_match_cot_v1("(a)", "(A)", "snarks") == 1.0
    assert exact_match_cot_v1("(B)", "(A)", "snarks") == 0.0


@pytest.mark.parametrize(
    "subtask, completion, target, answer, score",
    [
        ("boolean_expressions", "so the answer is true", "True", "true", 1.0),
        ("boolean_expressions", "So the answer is TRUE.", "True", "TRUE", 1.0),
        ("boolean_expressions", "So the answer is False", "True", "False", 0.0),
        (
            "boolean_expressions",
            "It is True. No wait, the answer is **False**.",
            "False",
            "False",
            1.0,
        ),
        ("causal_judgement", "So the answer is Yes.", "Yes", "Yes", 1.0),
        ("web_of_lies", "So the answer is **Yes**.", "Yes", "Yes", 1.0),
        ("web_of_lies", "I have no idea", "Yes", "no", 0.0),  # last resort reads "no"
        # no word boundary in OLMES's patterns: "Not sure" reads as "No"
        ("sports_understanding", "So the answer is Not sure.", "no", "No", 1.0),
        ("navigate", "Take 3 steps. So the answer is no", "No", "no", 1.0),
        ("formal_fallacies", "So the answer is invalid.", "invalid", "invalid", 1.0),
        ("formal_fallacies", "So the answer is Valid.", "invalid", "Valid", 0.0),
        ("multistep_arithmetic_two", "So the answer is $-50$.", "-50", "-50", 1.0),
        # punctuation is removed before comparing, the minus sign included
        ("multistep_arithmetic_two", "So the answer is 50.", "-50", "50", 1.0),
        ("multistep_arithmetic_two", "So the answer is 51.", "-50", "51", 0.0),
        ("multistep_arithmetic_two", "= 3 + 4 = 7", "7", "7", 1.0),
        ("object_counting", "So the answer is 8 instruments.", "8", "8", 1.0),
        ("object_counting", "There are none.", "0", "", 0.0),
        (
            "word_sorting",
            "So the answer is apple banana cherry.",
            "apple banana cherry",
            "apple banana cherry",
            1.0,
        ),
        ("word_sorting", "So the answer is Apple Banana.", "apple banana", "Apple Banana", 1.0),
        ("dyck_languages", "So the answer is ] } ].", "] } ]", "] } ]", 1.0),
        ("dyck_languages", "So the answer is ] } ]", "] } ]", "] } ]", 1.0),
        ("dyck_languages", "So the answer is ] } ] .", "] } ]", "] } ]", 1.0),
        ("dyck_languages", "So the answer is ]}].", "] } ]", "]}]", 0.0),  # spacing counts
        ("dyck_languages", "So the answer is ]  } ].", "] } ]", "]  } ]", 0.0),
        ("dyck_languages", "So the answer is `] } ]`.", "] } ]", "", 0.0),
    ],
)
def test_families(subtask, completion, target, answer, score):
    assert extract_cot_v1(completion, subtask) == answer
    assert exact_match_cot_v1(answer, target, subtask) == score
    assert extract_cot_v1(completion, subtask, flex=True) == answer  # flex: only MC, words


def test_dyck_keeps_punctuation_other_subtasks_drop_it():
    assert exact_match_cot_v1("] )", "] }", "dyck_languages") == 0.0
    assert exact_match_cot_v1("yes.", "Yes", "web_of_lies") == 1.0


def test_word_sorting_flex_reads_apostrophes_and_ampersands():
    completion = "So the answer is pathetic r&d shouldn't talon."
    target = "pathetic r&d shouldn't talon"
    assert extract_cot_v1(completion, "word_sorting") == "pathetic r"
    assert extract_cot_v1(completion, "word_sorting", flex=True) == target
    record = score_bbh(completion, target, "word_sorting")
    assert (record["exact_match"], record["exact_match_flex"]) == (0.0, 1.0)


def test_release_extractor():
    assert extract_cot_release("So the answer is (B).") == "(B)"
    assert extract_cot_release("So the answer is (B)") == "(B"  # the last character goes
    assert extract_cot_release("So the answer is (B).\nMore text.") == "(B)"  # that line only
    assert extract_cot_release("So The answer is (B).") == ""  # case-sensitive
    assert extract_cot_release("the answer is (A).\nthe answer is (B).") == "(A)"  # first
    assert extract_cot_release("the answer is ...yes..") == "yes"  # periods, both ends
    assert extract_cot_release("No answer here.") == ""


def test_release_comparison_is_plain_string_equality():
    assert exact_match_release("(B)", "(B)") == 1.0
    assert exact_match_release("no,", "no") == 0.0  # punctuation counts
    assert exact_match_release("Yes", "yes") == 0.0  # case counts
    assert exact_match_release(" (B)", "(B)") == 0.0  # spacing counts


def test_score_record():
    assert score_bbh("Clearly, the answer is **B**.", "(B)", "snarks") == {
        "answer": "",
        "exact_match": 0.0,
        "answer_flex": "(B)",
        "exact_match_flex": 1.0,
        "answer_release": "**B**",
        "exact_match_release": 0.0,
    }


# Real targets OLMES's patterns cannot read back: three multiple-choice docs whose target is
# the option's text, not its letter (the dataset split an option at its commas), and word lists
# with an apostrophe or "&", which `[a-z ]+` cuts short.
TARGETS_NOT_AN_OPTION = {"movie_recommendation#163", "ruin_names#99", "ruin_names#144"}
WORDS_WITH_PUNCTUATION = {
    f"word_sorting#{i}" for i in (1, 12, 18, 22, 73, 89, 93, 97, 107, 153, 187, 200, 203, 204, 245)
}


@requires_shared
def test_all_real_targets_written_as_final_sentences():
    misses, flex_misses, count = set(), set(), 0
    for folder in sorted((DATA_DIR / "lukaemon__bbh").iterdir()):
        for row, doc in enumerate(read_jsonl(folder / "test.jsonl")):
            count += 1
            completion, target = f"So the answer is {doc['target']}.", doc["target"]
            answer = extract_cot_v1(completion, folder.name)
            flex = extract_cot_v1(completion, folder.name, flex=True)
            if exact_match_cot_v1(answer, target, folder.name) != 1.0:
                misses.add(f"{folder.name}#{row}")
            if exact_match_cot_v1(flex, target, folder.name) != 1.0:
                flex_misses.add(f"{folder.name}#{row}")
            if exact_match_release(extract_cot_release(completion), target) != 1.0:
                misses.add(f"release {folder.name}#{row}")
    assert count == 6511
    assert misses == TARGETS_NOT_AN_OPTION | WORDS_WITH_PUNCTUATION  # 6493 / 6511 faithful
    assert flex_misses == TARGETS_NOT_AN_OPTION  # 6508 / 6511 flex; release reads all


@requires_shared
def test_real_code_davinci_completions():
    docs = {}
    real = [r for r in read_jsonl(OUTPUTS / "bbh.jsonl") if not r["id"].startswith("synthetic/")]
    scores = [
        score_bbh(r["completion"], _doc(docs, r["key"])["target"], _subtask(r["key"])) for r in real
    ]
    assert len(real) == 6511
    total = {
        k: sum(s[k] for s in scores)
        for k in ("exact_match", "exact_match_flex", "exact_match_release")
    }
    assert total["exact_match"] == 4838  # micro 0.7431
    # this model always writes "(X)": flex gains only the word lists with "'" or "&"
    assert total["exact_match_flex"] == 4842
    assert total["exact_match_release"] == 4813  # 0.7392
    assert all(s["exact_match_flex"] >= s["exact_match"] for s in scores)
