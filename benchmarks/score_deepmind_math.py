"""Scoring DeepMind Mathematics: the 5,600 reference answers of OLMES's sample, each wrapped in
OLMES's closing phrase ("Therefore, the final answer is {answer}. I hope it is correct."), scored
by the task's filter (parallel workers, each doc bounded) and, for comparison, by the same scorer
one doc after another in this process (as OLMES scores). Lists every answer OLMES's own rules
reject and counts docs that reached a time bound (there should be none). `--no_spaces` scores
the answers with their spaces removed instead ("x**2 + 1" -> "x**2+1"), which sends every one
that is not a bare number through sympy.

    .venv/bin/python benchmarks/score_deepmind_math.py [--limit N]
"""

from __future__ import annotations

import argparse
import os
import time

from evalpack.core.data import with_keys
from evalpack.hooks import deepmind_math
from evalpack.scoring.deepmind_answers import score_deepmind

CLOSING = "Therefore, the final answer is {}. I hope it is correct."


def load_docs(limit: int | None) -> list[dict]:
    from evalpack.core import catalog

    group = "deepmind_math_cot_tulu"
    docs = []
    for task in catalog.members(catalog.task_config(group)):
        category = task.removeprefix(group + "_")
        docs += with_keys(
            deepmind_math.read_sample(category), deepmind_math.DATASET, category, "test"
        )
    return docs[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="score only the first N docs")
    parser.add_argument("--no_spaces", action="store_true", help="answers without spaces")
    args = parser.parse_args()
    docs = load_docs(args.limit)
    answers = [d["answer"].replace(" ", "") if args.no_spaces else d["answer"] for d in docs]
    completions = [[CLOSING.format(answer)] for answer in answers]

    start = time.perf_counter()
    records = deepmind_math.score_docs(completions, docs)
    parallel = time.perf_counter() - start
    start = time.perf_counter()
    sequential = [
        {**score_deepmind(c[0], d["answer"], seed=deepmind_math.doc_seed(d)), "gold": d["answer"]}
        for c, d in zip(completions, docs)
    ]
    in_process = time.perf_counter() - start

    wrong = [(d, r) for d, r in zip(docs, records) if not r["exact_match"]]
    print(f"docs scored: {len(docs)} on {os.cpu_count()} cores")
    print(
        f"filter (parallel, each doc bounded): {parallel:.1f} s; "
        f"same scorer sequentially in-process: {in_process:.1f} s"
    )
    print(
        f"exact_match: {sum(r['exact_match'] for r in records)}/{len(records)}; "
        f"verdicts equal in both runs: {records == sequential}"
    )
    print(
        f"docs at a time bound: sympy {sum('timeout' in r for r in records)}, hard "
        f"{sum('scoring_failure' in r for r in records)}; refused by the guard: "
        f"{sum('refused' in r for r in records)}"
    )
    print(f"reference answers OLMES's rules reject ({len(wrong)}):")
    for doc, record in wrong:
        print(
            f"  {doc['doc_key']}: gold {doc['answer']!r} -> model_answer "
            f"{record['model_answer']!r}, parse error {record['answer_parse_error']}"
        )


if __name__ == "__main__":
    main()
