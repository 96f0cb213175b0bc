"""MATH's "Final Answer" line (OLMES strict, `minerva_math_tulu` and the olmo3 MATH tasks): the
pack's one-pass scan gives exactly what lm-eval's `get_unnormalized_answer` (the regular
expression OLMES calls) gives, on generated adversarial and ordinary texts short enough for the
regular expression, and on every real completion in ../shared."""

import random

import pytest
from lm_eval.tasks.minerva_math.utils import get_unnormalized_answer

from evalpack.scoring.math_extract import (
    FINAL_CLOSING,
    FINAL_OPENING,
    INVALID_ANSWER,
    strict_answer,
)
from tests.conftest import OLMES_REF, OUTPUTS, read_jsonl, requires_shared

# The pieces the pattern turns on: the opening and closing phrases whole, cut short and run
# together, the characters its wildcards accept or refuse (`\n`, and `\r`, which `.` accepts),
# the sentence lm-eval appends, and plain text around them.
PIECES = [
    FINAL_OPENING,
    FINAL_OPENING + " ",
    FINAL_OPENING[:-1],
    "Final Answer:",
    FINAL_CLOSING,
    FINAL_CLOSING[:-1],
    ". I hope it is correct.",
    "I hope it is correct.",
    "I hope it is correct",
    "\n",
    "\r",
    ".",
    " ",
    "x",
    "$2$",
    "\\boxed{3}",
]


@pytest.mark.parametrize("seed", range(4))
def test_scan_equals_the_regular_expression_on_generated_texts(seed):
    rng = random.Random(seed)
    found = 0
    for _ in range(10_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        expected = get_unnormalized_answer(text)
        assert strict_answer(text) == expected, repr(text)
        found += expected != INVALID_ANSWER
    assert found > 1_000  # the generator reaches matches, not only failures


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"{FINAL_OPENING} $4$. I hope it is correct.", "$4$"),
        (f"{FINAL_OPENING} 4. ", "4"),  # the appended sentence completes the line
        (f"{FINAL_OPENING} 4", INVALID_ANSWER),  # "4I hope": no character and space before it
        (f"{FINAL_OPENING} 4.", INVALID_ANSWER),
        (f"{FINAL_OPENING} 4\n", INVALID_ANSWER),  # then the appended sentence is on a new line
        (f"{FINAL_OPENING}\n{FINAL_OPENING} 5. I hope it is correct.\n", "5"),
        (f"{FINAL_OPENING} 4 {FINAL_OPENING} 5. I hope it is correct.", f"4 {FINAL_OPENING} 5"),
        (f"{FINAL_OPENING}{FINAL_CLOSING}.", INVALID_ANSWER),  # the group needs one character
        (f"{FINAL_OPENING}x{FINAL_CLOSING}.", ""),
        (f"{FINAL_OPENING} 16 I hope it is correct.\n", "1"),  # the `.` takes the 6
        (f"{FINAL_OPENING} 6. I hope it is correct\n7", INVALID_ANSWER),
        (f"{FINAL_OPENING} 6\r. I hope it is correct.", "6"),
    ],
)
def test_scan_on_the_pattern_edges(text, expected):
    assert get_unnormalized_answer(text) == expected
    assert strict_answer(text) == expected


def test_long_adversarial_lines_give_the_same_answer():
    """Openings run together on lines without the closing sentence (quadratic for the regular
    expression): a size it still answers quickly, and the answer after them."""
    for line in (FINAL_OPENING * 60, (FINAL_OPENING + " ") * 60, "x" + FINAL_OPENING * 59):
        for text in (
            line + "\n",
            line + "\n" + line + "\n" + FINAL_OPENING + " 9. I hope it is correct.",
            line + "\n" + FINAL_CLOSING * 3,
        ):
            assert strict_answer(text) == get_unnormalized_answer(text), text[-60:]
    assert strict_answer((FINAL_OPENING * 4_000) + "\n" + FINAL_OPENING + " 9. ") == "9"


@requires_shared
def test_scan_equals_the_regular_expression_on_every_real_completion():
    rows = read_jsonl(OLMES_REF / "scores_dev_olmo3.jsonl")
    for name in ("math.jsonl", "math500.jsonl", "gsm8k.jsonl", "bbh.jsonl"):
        rows += read_jsonl(OUTPUTS / name)
    answered = 0
    for row in rows:
        expected = get_unnormalized_answer(row["completion"])
        assert strict_answer(row["completion"]) == expected, row["id"]
        answered += expected != INVALID_ANSWER
    assert answered >= 200  # the real outputs that write the line (MATH's few-shot style)
