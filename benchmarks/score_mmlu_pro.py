"""MMLU-Pro answer extraction: the pack's cascade (`evalpack.scoring.mmlu_pro_answers`) against
OLMES's literal regexes on completions that reach the last rules (no "Therefore, the answer is
(X)", no "answer is"), one long line each, as a model that rambles until its token limit
writes them. Both sides run in the same process on the same texts; the answers are checked equal.

    .venv/bin/python benchmarks/score_mmlu_pro.py [--lengths 2000 8000 32000]

OLMES's rules 3 and 4 (`re.search(r".*[aA]nswer:\\s*([A-J])")`, `re.findall(".*\\b([A-J])\\b")`)
backtrack over the whole line from every start position: quadratic in the line's length.
"""

from __future__ import annotations

import argparse
import re
import time

from evalpack.scoring import mmlu_pro_answers as answers


def olmes_rules_3_and_4(text: str) -> str:
    match = re.search(r".*[aA]nswer:\s*([A-J])", text)
    if match:
        return match.group(1)
    letters = re.findall(".*\\b([A-J])\\b", text)
    return letters[-1] if letters else ""


def pack_rules_3_and_4(text: str) -> str:
    return answers.answer_colon(text) or answers.last_standalone_letter(text)


def rambling(length: int) -> str:
    """One line of lower-case reasoning ending in a bare letter."""
    words = "we compare the options and check each step carefully so that "
    return (words * (length // len(words) + 1))[:length] + " so it is C"


def timed(fn, text: str) -> tuple[str, float]:
    start = time.perf_counter()
    result = fn(text)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[2000, 8000, 32000])
    args = parser.parse_args()
    print(f"{'chars':>8} {'OLMES regexes (s)':>18} {'evalpack (s)':>13} {'ratio':>8}")
    for length in args.lengths:
        text = rambling(length)
        theirs, olmes_s = timed(olmes_rules_3_and_4, text)
        ours, pack_s = timed(pack_rules_3_and_4, text)
        assert theirs == ours == "C", (theirs, ours)
        print(f"{length:>8} {olmes_s:>18.4f} {pack_s:>13.6f} {olmes_s / pack_s:>8.0f}x")


if __name__ == "__main__":
    main()
