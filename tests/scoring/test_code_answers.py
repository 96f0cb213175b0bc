"""The code answer of OLMES's olmo3:adapt code tasks: the same answer and
`answer_format_correct` as OLMES's `extract_answer` with their regexes, on hand-written cases
and on random texts made of the pieces those regexes react to; long outputs that make the
regexes quadratic read in one pass."""

import random
import re

import pytest

from evalpack.scoring.code_answers import olmes_code_answer

# OLMES's metric_kwargs of codex_humanevalplus::olmo3:adapt and mbppplus::olmo3:adapt
FORMAT = re.compile(r"(?s)Here is the completed function:\n*```(?:python\n)?\n*(.*?)\s*```")
RAW = re.compile(r"(?s)```(?:python\n)?\n*(.*?)\s*```")
TEMPLATE = "Here is the completed function:"


def olmes(text: str) -> tuple[str, float]:
    """OLMES's extract_answer cascade for these two regexes (oe_eval/tasks/utils.py)."""
    found = FORMAT.findall(text)
    if found:
        return found[-1], 1.0
    found = RAW.findall(text)
    return (found[-1], 0.2) if found else ("", 0.0)


CASES = {
    "template": f"Reasoning.\n\n{TEMPLATE}\n\n```python\ndef f():\n    return 1\n```",
    "template_twice_last_wins": f"{TEMPLATE}\n```python\nA\n```\nthen {TEMPLATE}\n```\nB\n```",
    "template_without_fence": f"{TEMPLATE} def f(): pass",
    "fence_only": "```python\ndef f(): pass\n```\ntext\n```py\ng\n```",
    "language_other_than_python_kept": "```py\nx = 1\n```",
    "unclosed_fence": "```python\ndef f(): pass",
    "template_then_unclosed_raw": f"```\nA\n```\n{TEMPLATE}\n```python\nB",
    "empty_fence": "``````",
    "whitespace_before_close": "```python\n\n\ncode  \t\n\n   ```",
    "four_backticks": "````python\nx\n````",
    "unicode_space_before_close": "```\nx\u2028\xa0```",
    "empty": "",
    "answer_in_thinking_only": f"<think>{TEMPLATE}\n```python\nA\n```</think>\nno code",
}


@pytest.mark.parametrize("case", CASES)
def test_hand_written_cases_as_olmes(case):
    assert tuple(olmes_code_answer(CASES[case])) == olmes(CASES[case])


def test_random_texts_as_olmes():
    pieces = ["```", "`", "python\n", "python", "\n", " ", "\t", "\xa0", "x", TEMPLATE, "def f():"]
    rnd = random.Random(45)
    for _ in range(30000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 14)))
        assert tuple(olmes_code_answer(text)) == olmes(text), repr(text)


def test_long_outputs_read_in_one_pass():
    run = " \n" * 65000  # 130,000 characters of whitespace: quadratic for `.*?\s*```
    assert tuple(olmes_code_answer("```python\n" + run + "x")) == ("", 0.0)
    closed = f"{TEMPLATE}\n```python\ncode{run}```"
    assert tuple(olmes_code_answer(closed)) == ("code", 1.0)
    many = f"{TEMPLATE}\n```python\nx\n```" * 5000 + "```" + run
    assert tuple(olmes_code_answer(many)) == ("x", 1.0)
