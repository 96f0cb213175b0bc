"""Reading the code out of long reasoning outputs, as the olmo3 code tasks (HumanEval+, MBPP+)
do before anything runs: per output of 130,000 characters (a 32k-token answer), the thinking
switch's split and OLMES's code answer (`evalpack.scoring.code_answers`), printing outputs/s and
the slowest output. Execution is measured by benchmarks/execution_plus.py.

    .venv/bin/python benchmarks/score_olmo3_code.py [--docs 1000]

The outputs are made of what OLMES's two regexes react to: fences with and without a closing
one, "Here is the completed function:" with and without a fence after it, `python` tags and
long runs of blank lines and spaces (quadratic for the regexes: `.*?` then `\\s*```` over a run
that no fence closes), in thinking that never ends half of the time.
"""

from __future__ import annotations

import argparse
import random
import time

from evalpack.scoring.code_answers import olmes_code_answer
from evalpack.scoring.thinking import split_r1_style

LENGTH = 130_000
PIECES = [
    "```",
    "```python\n",
    "Here is the completed function:\n\n",
    "def f(x):\n    return x\n",
    "word ",
    " ",
    "\n",
    "\t \n",
]


def output(rng: random.Random) -> str:
    body = []
    while sum(map(len, body)) < LENGTH:
        piece = rng.choice(PIECES)
        body.append(piece * (rng.randint(1, 3000) if piece.isspace() else rng.randint(1, 20)))
    text = "<think>\n" + "".join(body)
    if rng.random() < 0.5:
        cut = rng.randint(0, LENGTH)
        text = text[:cut] + "\n</think>\n" + text[cut:]
    return text[:LENGTH]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(45)
    outputs = [output(rng) for _ in range(args.docs)]
    slowest, formatted, start = 0.0, 0, time.perf_counter()
    for text in outputs:
        begin = time.perf_counter()
        answer = olmes_code_answer(split_r1_style(text).answer)
        slowest = max(slowest, time.perf_counter() - begin)
        formatted += answer.answer_format_correct == 1.0
    elapsed = time.perf_counter() - start
    print(
        f"code      {args.docs} outputs of {LENGTH:,} chars: {args.docs / elapsed:7.1f} outputs/s, "
        f"slowest {slowest * 1000:.1f} ms, {formatted} with the template's fence"
    )


if __name__ == "__main__":
    main()
