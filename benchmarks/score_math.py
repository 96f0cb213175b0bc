"""Scoring speed on MATH: the 5000 reference solutions as completions, all three evalpack
metrics (parallel, bounded, inside the task's filter) vs lm-eval 0.4.13's own `minerva_math`
scoring (its `process_results`, one doc after another in the main process, as lm-eval runs it).

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/score_math.py [--limit N]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from evalpack.core import catalog, data
from evalpack.hooks import minerva_math as tasks_math

GROUP = "minerva_math_tulu"
SUBJECTS = [t.removeprefix(GROUP + "_") for t in catalog.members(catalog.task_config(GROUP))]


def load_docs(limit: int | None) -> list[dict]:
    docs = []
    for subject in SUBJECTS:
        docs += list(data.load_split("EleutherAI/hendrycks_math", subject, "test"))
    return docs[:limit]


def time_evalpack(docs: list[dict]) -> tuple[float, list[dict]]:
    start = time.perf_counter()
    records = tasks_math.score_docs([[d["solution"]] for d in docs], docs)
    return time.perf_counter() - start, records


def print_misses(docs: list[dict], records: list[dict]) -> None:
    """Every reference solution should be accepted by OLMES flex and math-verify (the full
    sweep the tests make on a slice): print each one that is not, and whether it timed out."""
    for metric in ("exact_match_flex", "math_verify"):
        misses = [(d["doc_key"], r) for d, r in zip(docs, records) if r.get(metric) != 1]
        print(f"{metric}: {len(docs) - len(misses)} of {len(docs)} reference solutions accepted")
        for key, record in misses:
            print(f"  {key}: timed out {bool(record.get('timeouts', {}).get(metric))}")


def time_lm_eval(docs: list[dict]) -> tuple[float, float]:
    from lm_eval.tasks.minerva_math import utils as minerva

    prepared = [
        {
            **d,
            "answer": minerva.normalize_final_answer(
                minerva.remove_boxed(minerva.last_boxed_only_string(d["solution"]))
            ),
        }
        for d in docs
    ]
    start = time.perf_counter()
    scores = [minerva.process_results(d, [d["solution"]]) for d in prepared]
    seconds = time.perf_counter() - start
    return seconds, sum(s["math_verify"] for s in scores) / len(scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="score only the first N docs")
    args = parser.parse_args()
    if not os.environ.get(data.DATA_DIR_ENV):
        default = Path(__file__).resolve().parents[2] / "shared" / "data"
        os.environ[data.DATA_DIR_ENV] = str(default)
    docs = load_docs(args.limit)
    ours, records = time_evalpack(docs)
    flex = sum(r["exact_match_flex"] for r in records) / len(records)
    theirs, mv = time_lm_eval(docs)
    print(f"docs scored: {len(docs)} on {os.cpu_count()} cores")
    print(
        f"evalpack (exact_match + exact_match_flex + math_verify, parallel): "
        f"{len(docs) / ours:8.1f} docs/s  ({ours:.1f} s; flex accuracy {flex:.4f})"
    )
    print(
        f"lm-eval minerva_math (exact_match + math_verify, sequential):      "
        f"{len(docs) / theirs:8.1f} docs/s  ({theirs:.1f} s; math_verify accuracy {mv:.4f})"
    )
    print(f"ratio evalpack / lm-eval: {theirs / ours:.2f}x")
    print_misses(docs, records)


if __name__ == "__main__":
    main()
