"""OLMES's verdicts for mmlu_pro_cot_tulu and mmlu_pro_cot_llama3 (`evalpack.scoring.
mmlu_pro_answers`): on OLMES's own scored rows, on adversarial completions for every rule of
each answer cascade, and the linear rules against OLMES's literal regexes. Requests and runs:
test_mmlu_pro.py."""

import hashlib
import random
import re

import pytest

from evalpack.scoring import mmlu_pro_answers as answers
from evalpack.scoring.mmlu_pro_answers import LLAMA31_FORMAT, TULU3_FORMAT
from tests.conftest import OLMES_REF, read_jsonl, requires_shared

FORMATS = {"0shot_cot::tulu3": TULU3_FORMAT, "cot::llama3.1": LLAMA31_FORMAT}
VERDICT_FIELDS = ("exact_match", "exact_match_simple", "answer_format_correct", "model_answer")


@requires_shared
def test_olmes_verdicts_on_every_mmlu_pro_row():
    rows = [
        r
        for r in read_jsonl(OLMES_REF / "scores_dev_unseen.jsonl")
        if r["task"].startswith("mmlu_pro_")
    ]
    assert len(rows) == 10
    for row in rows:
        assert hashlib.sha256(row["completion"].encode()).hexdigest() == row["sha256"]
        got = answers.score(row["completion"], row["label"], FORMATS[row["task"].split(":", 1)[1]])
        assert got == {k: row[k] for k in VERDICT_FIELDS}, row["id"]
    assert {r["answer_format_correct"] for r in rows} == {0.0, 0.5, 1.0}


@pytest.mark.parametrize(
    "text, label, answer, fmt, em, simple",
    [
        # 1. the exact phrase, case-sensitive, LAST occurrence
        ("Therefore, the answer is (H).", "H", "H", 1.0, 1.0, 1.0),
        (
            "Therefore, the answer is (A). Re-checking: Therefore, the answer is (H)",
            "H",
            "H",
            1.0,
            1,
            1,
        ),
        ("Therefore, the answer is (J)", "J", "J", 1.0, 1.0, 1.0),  # ten options: A-J
        # 2. no exact phrase: 0.5 and the FIRST case-insensitive "answer is"
        ("therefore, the answer is (H).", "H", "H", 0.5, 1.0, 1.0),  # lower-case "therefore"
        ("Therefore, the answer is H.", "H", "H", 0.5, 1.0, 1.0),  # no parentheses
        ("The answer is: (H)", "H", "H", 0.5, 1.0, 1.0),
        ("First the answer is (A); no, the answer is (H).", "H", "A", 0.5, 0.0, 0.0),
        ("The answer is definitely (B).", "D", "d", 0.5, 1.0, 0.0),  # "definitely" reads as d
        ("Therefore, the answer is (H )", "H", "H", 0.5, 1.0, 1.0),
        # 3. then `.*[aA]nswer:\s*X`: the last "answer:" on the first line with one
        ("Answer: B", "B", "B", 0.5, 1.0, 1.0),
        ("Answer: A, or Answer: B\nAnswer: C", "C", "B", 0.5, 0.0, 0.0),
        ("Final answer:\n\n  C", "C", "C", 0.5, 1.0, 1.0),  # \s crosses newlines
        ("Answer: Answer: B", "B", "B", 0.5, 1.0, 1.0),  # overlapping starts
        ("Answer: c", "C", "", 0.0, 0.0, 0.0),  # [A-J] is upper case here
        # 4. then 0 and the last standalone capital A-J anywhere (or "")
        ("Options A and H both fit.\nI think H.", "H", "H", 0.0, 1.0, 1.0),
        ("It is H, I guess", "H", "I", 0.0, 0.0, 0.0),  # the pronoun is option I
        ("Therefore, the answer is **(H)**.", "H", "H", 0.0, 1.0, 1.0),
        ("Therefore, the answer is (K).", "K", "", 0.0, 0.0, 0.0),  # K is out of range
        ("", "A", "", 0.0, 0.0, 0.0),
    ],
)
def test_tulu3_cascade(text, label, answer, fmt, em, simple):
    assert answers.score(text, label, TULU3_FORMAT) == {
        "exact_match": em,
        "exact_match_simple": simple,
        "answer_format_correct": fmt,
        "model_answer": answer,
    }


@pytest.mark.parametrize(
    "text, answer, fmt",
    [
        ("The answer is H.", "H", 1.0),
        ("The answer is (H).", "H", 1.0),
        ("The answer is: H", "H", 1.0),
        ("The answer is A. No wait. The answer is H.", "H", 1.0),  # last
        ("The answer is Hydrogen; The answer is (B)", "B", 1.0),  # \b skips the first
        ("The answer is Hydrogen", "H", 0.5),
        ("the answer is H", "H", 0.5),  # lower-case "the"
        ("So the answer is definitely B", "d", 0.5),
        ("Therefore, the answer is (H).", "H", 0.5),  # the tulu3 phrase is not it
        ("Answer: H", "H", 0.5),
        ("The answer is (K).", "", 0.0),
    ],
)
def test_llama31_cascade(text, answer, fmt):
    assert answers.extract_answer(text, LLAMA31_FORMAT) == {
        "answer": answer,
        "answer_format_correct": fmt,
    }


def test_linear_rules_equal_olmes_literal_regexes():
    """Rules 3 and 4 are computed without OLMES's backtracking regexes: same answers on
    random texts made of the pieces that matter."""
    pieces = [
        "Answer:",
        "answer:",
        "nswer:",
        "Answer: ",
        " ",
        "\n",
        "\t",
        "(",
        ")",
        "A",
        "B",
        "J",
        "K",
        "c",
        "I",
        "x",
        "AB",
        ".",
        "Answer:\n",
        "\r",
        "_",
        "é",
    ]
    rnd = random.Random(29)
    for _ in range(4000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 14)))
        match = re.search(r".*[aA]nswer:\s*([A-J])", text)
        assert answers.answer_colon(text) == (match.group(1) if match else None), repr(text)
        letters = re.findall(".*\\b([A-J])\\b", text)
        assert answers.last_standalone_letter(text) == (letters[-1] if letters else ""), text
