"""The thinking switch (OLMES's `process_output: "r1_style"`): the same split as OLMES's three
regular expressions on every case, in linear time on 130,000-character outputs."""

import random
import re

import pytest

from evalpack.scoring.thinking import Thought, split_r1_style

# OLMES's `extract_think_answer` (oe_eval/models/output_processors.py at 5a51f50), as the
# oracle for short texts (quadratic on long ones, which is why the pack does not use it).
OLMES_REASONING = re.compile(r"(?ms)^(?:\s*<think>\s*)?(.*)\s*</think>")


def olmes_split(text: str) -> tuple[str | None, str]:
    found = OLMES_REASONING.findall(text)
    answer = re.sub(r"(?ms).*</think>", "", text)
    answer = re.sub(r"(?ms)^\s*<answer>\s*", "", answer)
    answer = re.sub(r"(?ms)</answer>\s*$", "", answer)
    return (found[0] if found else None), answer


CASES = {
    "no thinking": ("The answer is 4.", Thought(None, "The answer is 4.", False)),
    "finished": (
        "<think>\nhmm\n</think>\n\nThe answer is 4.",
        Thought("hmm\n", "\n\nThe answer is 4.", True),
    ),
    "unfinished": ("<think>\nhmm, maybe 3", Thought(None, "<think>\nhmm, maybe 3", False)),
    "template opened it": ("hmm\n</think>4", Thought("hmm\n", "4", True)),
    "last close wins": ("<think>a</think>b</think>c", Thought("a</think>b", "c", True)),
    "answer tags": ("<think>r</think>\n<answer> 4 </answer>\n", Thought("r", "4 ", True)),
    "every line-start open goes": ("x\n<answer>y\n  <answer>z", Thought(None, "x\ny\nz", False)),
    "open inside a line stays": ("x <answer>y", Thought(None, "x <answer>y", False)),
    "close before a line end goes": (
        "a</answer>  \nb</answer> c",
        Thought(None, "a\nb</answer> c", False),
    ),
    "empty": ("", Thought(None, "", False)),
    "empty thinking": ("<think></think>", Thought("", "", True)),
}


@pytest.mark.parametrize("name", CASES)
def test_cases_match_olmes(name):
    text, expected = CASES[name]
    assert split_r1_style(text) == expected
    assert (expected.reasoning, expected.answer) == olmes_split(text)


def test_random_texts_match_olmes():
    """Short texts over the tags, whitespace of every kind (\\r, NBSP, \\x1c) and letters."""
    atoms = ["<think>", "</think>", "<answer>", "</answer>", "\n", " ", "\t", "\r", "\xa0"]
    atoms += ["\x1c", "x", "<", "\n\n"]
    rng = random.Random(45)
    for _ in range(20000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 12)))
        got = split_r1_style(text)
        assert (got.reasoning, got.answer) == olmes_split(text), repr(text)
        assert got.finished == ("</think>" in text)


LONG = 130_000
THINKING = "<think>" + "wait, " * (LONG // 6)
# (output, the answer OLMES's substitutions leave)
LONG_OUTPUTS = {
    "blank lines": ("\n" * LONG, "\n" * LONG),
    "opens": ("<answer>" * (LONG // 8), "<answer>" * (LONG // 8 - 1)),
    "line-start opens": ("\n <answer>x" * (LONG // 11), "x" + "\nx" * (LONG // 11 - 1)),
    # only the last close ends a line; `\s*` takes the newline too, as `$` matches at the end
    "closes": ("</answer> " * (LONG // 10) + "\n", "</answer> " * (LONG // 10 - 1)),
    "unfinished thinking": (THINKING, THINKING),
    "spaces then an open": (" " * LONG + "<answer>4", "4"),
}


@pytest.mark.parametrize("name", LONG_OUTPUTS)
def test_long_outputs_split_like_olmes(name):
    """OLMES's patterns take quadratic time on these outputs; the split gives OLMES's strings
    (its own patterns checked on a hundredth, where they finish in moments) on the full length."""
    text, answer = LONG_OUTPUTS[name]
    short = text[: len(text) // 100]
    got = split_r1_style(short)
    assert (got.reasoning, got.answer) == olmes_split(short)
    assert split_r1_style(text) == Thought(None, answer, False)
