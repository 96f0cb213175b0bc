"""Scoring of the rule-scored olmo3 tasks on long reasoning outputs: per family, `--docs` outputs
of 130,000 characters (a 32k-token answer) through the task's own filter (the thinking switch
on, each doc in a worker under its hard bound), printing docs/s, the slowest doc and how many
hit the bound (none should): first the scoring each worker does, doc by doc in this process,
then the task's filter over all docs (forked workers, the hard bound around each doc).

    .venv/bin/python benchmarks/score_olmo3.py [--docs 1000] [--families mmlu,bbh,...]

The outputs are shaped against each family's patterns: thinking that never ends or a long
`<think>` block followed by the answer, runs of words and letters (template 11's `.*` and the
"X is correct" template backtrack over them), numbers with an unclosed `\\boxed{` (GSM8K's lazy
boxed pattern), unbalanced `\\boxed{` and `$` (MATH, whose extracted answers then go to sympy
under its 5 s limit per comparison). AIME is MATH's reading on 32 shorter samples.
"""

from __future__ import annotations

import argparse
import random
import time

from evalpack.hooks import olmo3_rules
from evalpack.scoring import math_extract

LENGTH = 130_000
DOCS = {
    "mmlu": {"answer": 1},
    "agi_eval": {"label": "B"},
    "gpqa": {"label": "C"},
    "bbh": {"target": "apple zebra", "doc_key": "lukaemon__bbh/word_sorting/test#0"},
    "gsm8k": {"answer": "#### 18"},
    "minerva_math": {"solution": "So it is $\\boxed{\\frac{1}{2}}$."},
}
PIECES = {
    "mmlu": ["word ", "A ", "(B) ", "the answer is ", "\n"],
    "agi_eval": ["(", "word ", "Therefore, the answer is ", "\n"],
    "gpqa": ["word ", "(C)", "The correct answer is: ", " is correct", "\n"],
    "bbh": ["zebra ", "apple ", "So the answer is ", "\n", " is correct"],
    "gsm8k": ["1 ", "2,000 ", "\\boxed{", "$", "the answer is ", "\n"],
    "minerva_math": ["x ", "\\boxed{", "}", "$", "Final Answer: The final answer is ", "\n"],
}


def output(family: str, rng: random.Random) -> str:
    """One 130,000-character output: a thinking block of the family's pieces (closed in half of
    the outputs), then an answer of the same pieces."""
    pieces = PIECES[family]
    body = []
    while sum(map(len, body)) < LENGTH - 20:
        body.append(rng.choice(pieces) * rng.randint(1, 2000))
    text = "<think>\n" + "".join(body)[: LENGTH - 20]
    if rng.random() < 0.5:
        cut = rng.randint(0, len(text))
        text = text[:cut] + "\n</think>\n" + text[cut:]
    return text[:LENGTH]


def bench(family: str, docs: int) -> None:
    """The scoring each worker does, doc by doc in this process (docs/s, the slowest doc), then
    the filter itself over all docs (workers, each doc under the hard bound)."""
    rng = random.Random(45)
    samples = [[output(family, rng)] for _ in range(docs)]
    stamped = [{**DOCS[family], "process_output": "r1_style"}] * docs
    slowest = 0.0
    start = time.perf_counter()
    for sample, doc in zip(samples, stamped):
        begin = time.perf_counter()
        olmo3_rules._score_job({"family": family, "sample": sample[0], "doc": doc})
        slowest = max(slowest, time.perf_counter() - begin)
    in_process = docs / (time.perf_counter() - start)
    start = time.perf_counter()
    records = olmo3_rules.score_docs(family, samples, stamped)
    filtered = docs / (time.perf_counter() - start)
    cut_off = sum("scoring_failure" in r for r in records)
    print(
        f"{family:12s} {docs} docs of {LENGTH:,} chars: {in_process:7.1f} docs/s scored, "
        f"{filtered:7.1f} docs/s through the filter; slowest doc {slowest:.2f} s "
        f"(bound {olmo3_rules.DOC_TIMEOUTS.get(family, olmo3_rules.DOC_TIMEOUT):g} s); "
        f"cut off {cut_off}",
        flush=True,
    )


def final_answer_line() -> None:
    """MATH's "Final Answer" line on its worst shape, 130,000 characters of the opening phrase
    run together on one line without the closing sentence, then more lines: the pack's scan vs
    the regular expression lm-eval and OLMES search with (quadratic: each opening's lazy group
    runs to the line's end), the same answer from both."""
    from lm_eval.tasks.minerva_math.utils import get_unnormalized_answer

    opening = math_extract.FINAL_OPENING
    text = opening * (LENGTH // len(opening)) + "\nno answer here\n"
    timings = {}
    for name, read in (
        ("evalpack", math_extract.strict_answer),
        ("regex", get_unnormalized_answer),
    ):
        begin = time.perf_counter()
        timings[name] = (read(text), time.perf_counter() - begin)
    (ours, our_s), (theirs, their_s) = timings["evalpack"], timings["regex"]
    print(
        f"MATH Final Answer line, {len(text):,} chars of run-together openings: evalpack "
        f"{our_s * 1000:.2f} ms, lm-eval's regex {their_s:.2f} s; same answer {ours == theirs}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--families", default=",".join(DOCS))
    args = parser.parse_args()
    for family in args.families.split(","):
        bench(family, args.docs)
    if "minerva_math" in args.families.split(","):
        final_answer_line()


if __name__ == "__main__":
    main()
