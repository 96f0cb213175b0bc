"""BBH extraction: OLMES's verdicts, per-family cases, real targets and real completions."""

import pytest

from conftest import DATA_DIR, OLMES_REF, OUTPUTS, read_jsonl, requires_shared
from evalpack.bbh_answers import (
    exact_match_cot_v1,
    exact_match_release,
    extract_cot_release,
    extract_cot_v1,
    score_bbh,
)


def _doc(docs, key):
    path, row = key.split("#")
    docs.setdefault(path, read_jsonl(DATA_DIR / f"{path}.jsonl"))
    return docs[path][int(row)]


@requires_shared
def test_every_olmes_verdict_on_the_adversarial_completions():
    completions = {r["id"]: r for r in read_jsonl(OUTPUTS / "bbh.jsonl")}
    verdicts = read_jsonl(OLMES_REF / "scores_dev_bbh.jsonl")
    docs, mismatches = {}, []
    for v in verdicts:
        subtask = v["key"].split("/")[1]
        record = score_bbh(completions[v["id"]]["completion"], _doc(docs, v["key"])["target"],
                           subtask)
        if (record["answer"], record["exact_match"]) != (v["model_answer"], v["exact_match"]):
            mismatches.append(v["id"])
    assert len(verdicts) == 333 and mismatches == []


@pytest.mark.parametrize("completion, expected", [
    ("So the answer is (B).", "(B)"),
    ("SO THE ANSWER IS (b).", "(b)"),
    ("Therefore, the answer is **(A)**.", "(A)"),
    ("The answer is (A). Wait: the answer is (B).", "(B)"),
    ("Options (A) and (C) fail. So the answer is D.", "(C)"),  # bare letter: OLMES misses D
    ("A", ""),
    ("I cannot tell.", ""),
])
def test_multiple_choice_faithful(completion, expected):
    assert extract_cot_v1(completion, "date_understanding") == expected


@pytest.mark.parametrize("completion, expected", [
    ("Options (A) and (C) fail. So the answer is D.", "(D)"),
    ("So the answer is **B**.", "(B)"),
    ("the answer is $C$", "(C)"),
    ("So the answer is (B).", "(B)"),
    ("I think it is plausible. So the answer is (A)", "(A)"),  # "I" is not an answer
])
def test_multiple_choice_flex(completion, expected):
    assert extract_cot_v1(completion, "snarks", flex=True) == expected


def test_bare_letter_scores_only_under_flex():
    record = score_bbh("So the answer is A.", "(A)", "hyperbaton")
    assert (record["exact_match"], record["exact_match_flex"]) == (0.0, 1.0)


@pytest.mark.parametrize("subtask, completion, target, expected", [
    ("boolean_expressions", "so the answer is true", "True", 1.0),
    ("boolean_expressions", "So the answer is False", "True", 0.0),
    ("web_of_lies", "So the answer is **Yes**.", "Yes", 1.0),
    ("formal_fallacies", "So the answer is invalid.", "invalid", 1.0),
    ("multistep_arithmetic_two", "So the answer is $-50$.", "-50", 1.0),
    # OLMES drops all punctuation before comparing, the minus sign included
    ("multistep_arithmetic_two", "So the answer is 50.", "-50", 1.0),
    ("multistep_arithmetic_two", "So the answer is 51.", "-50", 0.0),
    ("object_counting", "So the answer is 8 instruments.", "8", 1.0),
    ("word_sorting", "So the answer is apple banana cherry.", "apple banana cherry", 1.0),
    ("dyck_languages", "So the answer is ] } ].", "] } ]", 1.0),
    ("dyck_languages", "So the answer is ]}].", "] } ]", 0.0),  # spacing matters for dyck
])
def test_families(subtask, completion, target, expected):
    answer = extract_cot_v1(completion, subtask)
    assert exact_match_cot_v1(answer, target, subtask) == expected


def test_release_extractor():
    assert extract_cot_release("So the answer is (B).") == "(B)"
    assert extract_cot_release("So the answer is (B)") == "(B"  # last character dropped
    assert extract_cot_release("So The answer is (B).") == ""  # case-sensitive
    assert extract_cot_release("the answer is (A).\nthe answer is (B).") == "(A)"  # first
    assert exact_match_release("(B)", "(B)") == 1.0
    assert exact_match_release("no,", "no") == 0.0  # punctuation counts


# Real targets OLMES's patterns cannot read back: three multiple-choice docs whose target is
# the option's text, not its letter, and word lists with an apostrophe or "&".
TARGETS_NOT_AN_OPTION = {"movie_recommendation#163", "ruin_names#99", "ruin_names#144"}
WORDS_WITH_PUNCTUATION = {f"word_sorting#{i}" for i in
                          (1, 12, 18, 22, 73, 89, 93, 97, 107, 153, 187, 200, 203, 204, 245)}


@requires_shared
def test_all_real_targets_written_as_final_sentences():
    misses, flex_misses = set(), set()
    for folder in sorted((DATA_DIR / "lukaemon__bbh").iterdir()):
        for row, doc in enumerate(read_jsonl(folder / "test.jsonl")):
            record = score_bbh(f"So the answer is {doc['target']}.", doc["target"], folder.name)
            if record["exact_match"] != 1.0:
                misses.add(f"{folder.name}#{row}")
            if record["exact_match_flex"] != 1.0:
                flex_misses.add(f"{folder.name}#{row}")
    assert misses == TARGETS_NOT_AN_OPTION | WORDS_WITH_PUNCTUATION  # 6493 / 6511 faithful
    assert flex_misses == TARGETS_NOT_AN_OPTION  # 6508 / 6511


@requires_shared
def test_real_code_davinci_completions_score_plausibly():
    docs = {}
    real = [r for r in read_jsonl(OUTPUTS / "bbh.jsonl") if r["source"] != "synthetic"]
    scores = [score_bbh(r["completion"], _doc(docs, r["key"])["target"], r["key"].split("/")[1])
              for r in real]
    micro = sum(s["exact_match"] for s in scores) / len(scores)
    assert len(real) == 6511
    assert 0.65 < micro < 0.85
    assert sum(s["exact_match_flex"] for s in scores) >= sum(s["exact_match"] for s in scores)
