"""Scoring speed of the reasoning tasks (math-verify, majority grouping, hard time bounds).

Two workloads built from real data: AIME 2024, 30 problems x 64 samples, and MATH-500, 500
problems x 16 samples. Samples are the real solution plus perturbed copies (a wrong boxed value,
the answer inside a closed or an unclosed <think>, no box, an equivalent rewrite). Prints
answers/second for the tasks' filter, the worst single-sample scoring time and how many samples
hit the time bound.

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/score_reasoning.py
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from evalpack.core import data
from evalpack.core.bounded import bounded_map
from evalpack.hooks import reasoning_math as tasks_reasoning


def perturbations(solution: str, answer: str) -> list[str]:
    """One real solution and its perturbed copies (8 shapes)."""
    return [
        solution,
        f"<think>{solution}</think>The answer is $\\boxed{{{answer}}}$.",
        f"<think>{solution} and then the budget ran out",
        f"{solution}\n\nActually, the answer is $\\boxed{{{answer}+1}}$.",
        solution.replace("\\boxed", "") + f" So {answer}.",
        f"Therefore $\\boxed{{{answer} }}$.",
        f"The answer is $\\boxed{{2{answer}}}$.",
        f"<think>try \\boxed{{0}}</think>Final: \\boxed{{{answer}}}",
    ]


def workload(path: str, split: str, samples_per_doc: int) -> tuple[list[list[str]], list[dict]]:
    docs = [
        {"answer": str(r["answer"]), "solution": r["solution"]}
        for r in data.load_split(path, None, split)
    ]
    resps = []
    for doc in docs:
        shapes = perturbations(doc["solution"], doc["answer"])
        resps.append([shapes[i % len(shapes)] for i in range(samples_per_doc)])
    return resps, docs


def measure(name: str, resps: list[list[str]], docs: list[dict], integer: bool) -> None:
    """Score every doc's samples as the tasks' filter does (one bounded job per doc)."""
    jobs = [
        {"samples": samples, "gold": d["answer"], "integer": integer}
        for samples, d in zip(resps, docs)
    ]
    n_answers = sum(map(len, resps))
    start = time.perf_counter()
    outcomes = bounded_map(tasks_reasoning._score_doc, jobs, timeout=tasks_reasoning.DOC_TIMEOUT)
    seconds = time.perf_counter() - start
    timeouts = sum(o.value["timeouts"] for o in outcomes if o.status == "ok")
    cut_off = sum(o.status != "ok" for o in outcomes)
    singles = [{**job, "samples": [s]} for job in jobs for s in job["samples"][:8]]
    worst = max(
        o.seconds
        for o in bounded_map(
            tasks_reasoning._score_doc, singles, timeout=tasks_reasoning.DOC_TIMEOUT
        )
    )
    mode = "integer comparison" if integer else "math-verify"
    print(
        f"{name} ({mode}): {n_answers} answers in {seconds:.1f} s = "
        f"{n_answers / seconds:.1f} answers/s; worst single sample {worst:.2f} s; "
        f"comparisons at the {tasks_reasoning.VERIFY_TIMEOUT:g} s bound: {timeouts}; "
        f"docs cut off at the {tasks_reasoning.DOC_TIMEOUT:g} s bound: {cut_off}"
    )


def main() -> None:
    if not os.environ.get(data.DATA_DIR_ENV):
        os.environ[data.DATA_DIR_ENV] = str(Path(__file__).resolve().parents[2] / "shared" / "data")
    print(f"{os.cpu_count()} cores")
    aime = workload("HuggingFaceH4/aime_2024", "train", 64)
    measure("AIME 2024, 30 x 64", *aime, integer=True)  # what the aime tasks do
    measure("AIME 2024, 30 x 64", *aime, integer=False)
    measure("MATH-500, 500 x 16", *workload("HuggingFaceH4/MATH-500", "test", 16), integer=False)


if __name__ == "__main__":
    main()
