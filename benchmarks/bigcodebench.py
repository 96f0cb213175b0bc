"""BigCodeBench reference solutions: evalpack's sandbox vs a BigCodeBench-style runner.

The calibrated reference programs (code_prompt + "\\n    pass\\n" + code_prompt +
canonical_solution, as OLMES's calibration makes of a completion that is the whole solution)
of BigCodeBench-Hard (148) or the full set (1,140, --full), run with each task's unittest class:

- evalpack: one `run_jobs` batch (every sandbox layer this host allows: see the line printed);
- baseline: BigCodeBench's `untrusted_check` way, a process forked per program from a driver
  that has the benchmark's libraries on its path, one per core at a time, the same runner
  (`job/runner.py`, with its guard) inside, a wall-clock limit per program, no
  isolation.

Both print time, programs/s, pass rate and failures by cause, then the tasks that fail, with
the cause, in either. evalpack's programs that pass are then recorded, in a run of their test
without its answers, and replayed (`pass_at_1_replayed`, timed apart from the comparison): how
many pass again, the two batches' time, and the tasks that do not, with why. Needs BigCodeBench's libraries:

    python -m evalpack.hooks.bigcodebench.libs install
    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/bigcodebench.py [--full]

The tasks are split into rounds (--rounds); each round times evalpack, then the baseline, on
the same tasks, so that load from elsewhere on the machine falls on both alike. --every N
takes a sample (every N-th task).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from evalpack import execution
from evalpack.core import data
from evalpack.hooks.bigcodebench import libs as bigcodebench_libs
from evalpack.hooks.bigcodebench import sources as bigcodebench_sources
from evalpack.hooks.bigcodebench import task as bigcodebench
from evalpack.hooks.bigcodebench.trusted import check as trusted_check
from evalpack.sandbox import held

# The baseline's driver: a fresh interpreter with the benchmark's libraries first on its path;
# it forks one process per program (as BigCodeBench's untrusted_check) and prints one JSON
# report per program.
DRIVER = r"""
import json, multiprocessing, os, sys, time
from concurrent.futures import ThreadPoolExecutor
libs, runner, jobs_file, timeout = sys.argv[1:5]
sys.path.insert(0, libs)
source = open(runner).read()
jobs = json.load(open(jobs_file))
context = multiprocessing.get_context("fork")

def child(program, test, imports, connection):
    namespace = {"__name__": "__candidate__"}
    exec(compile(source, "runner", "exec"), namespace)
    namespace["CANDIDATE_CODE"] = program
    try:
        connection.send(namespace["run_bigcodebench"](test, float(timeout), "", "-", imports))
    except BaseException as exc:
        connection.send({"tests": {}, "failures": [], "error": f"{type(exc).__name__}: {exc}"})

def check(job):
    receive, send = context.Pipe(duplex=False)
    args = (job["program"], job["test"], job["imports"], send)
    process = context.Process(target=child, args=args)
    process.start()
    send.close()
    report = None
    if receive.poll(float(timeout) + 1):
        try:
            report = receive.recv()
        except EOFError:
            pass
    process.join(1)
    if process.is_alive():
        process.kill()
        process.join()
    return report or {"tests": {}, "failures": [], "error": "timeout or died"}

with ThreadPoolExecutor(os.cpu_count()) as pool:
    for report in pool.map(check, jobs):
        print(json.dumps(report), flush=True)
"""


def load(full: bool) -> list[dict]:
    if not os.environ.get(data.DATA_DIR_ENV):
        os.environ[data.DATA_DIR_ENV] = str(Path(__file__).resolve().parents[2] / "shared" / "data")
    path = "bigcode/bigcodebench" if full else "bigcode/bigcodebench-hard"
    return list(data.load_split(path, None, "v0.1.2"))


def program(doc: dict) -> str:
    return bigcodebench.calibrated_program(doc, doc["code_prompt"] + doc["canonical_solution"])


_NETWORK = trusted_check._NETWORK


def cause(passed: bool, reason: str) -> str:
    """A failure's cause, in a word or two, from the verdict's reason."""
    if passed:
        return "passed"
    if "needs the network" in reason or _NETWORK.search(reason):
        return "network"
    if "*****" in reason or "Resource" in reason and "not found" in reason:
        return "nltk data"  # nltk's LookupError banner: its data is downloaded, not installed
    if "No module named" in reason:
        return "library left out"
    if "Timed out" in reason or "time limit" in reason or "timeout" in reason:
        return "time limit"
    if "memory" in reason or "MemoryError" in reason:
        return "memory"
    match = re.search(r"(\w+(?:Error|Exception|Exit))", reason)
    return match.group(1) if match else "assertion"


def run_evalpack(docs: list[dict], timeout: float) -> tuple[float, list[tuple[bool, str]]]:
    """Seconds, and each program's (pass as BigCodeBench counts it, reason); the programs that
    pass so only on values they made are in MADE."""
    libs = str(bigcodebench_libs.folder())
    jobs = [bigcodebench.job({**d, "timeout": timeout}, program(d), libs) for d in docs]
    start = time.perf_counter()
    verdicts = execution.run_jobs(jobs)
    seconds = time.perf_counter() - start
    docs = [{**d, "timeout": timeout} for d in docs]
    replayed = bigcodebench.replay_verdicts(verdicts, docs, [program(d) for d in docs], libs)
    REPLAY["seconds"] += time.perf_counter() - start - seconds
    records = [bigcodebench.verdict_record(v, "", r) for v, r in zip(verdicts, replayed)]
    MADE.update({d["task_id"]: r["made_values"] for d, r in zip(docs, records) if r["made_values"]})
    for doc, record in zip(docs, records):
        if record["passed"]:
            REPLAY["tasks"][doc["task_id"]] = (record["passed_replayed"], record["replay_reason"])
    return seconds, [(r["passed"], r["reason"]) for r in records]


MADE: dict[str, str] = {}  # task: the first value of a class the program made (a pass)
# the replayed verdict of the programs that passed: its two batches' time (the answerless
# recording run, the replay), and per task (passed again, why not)
REPLAY: dict = {"seconds": 0.0, "tasks": {}}


def replay_cause(reason: str) -> str:
    """Why a passing program failed its replay, in a few words."""
    match = re.search(r"not replayable: call \d+: (a value of type [\w.]+|.{0,60})", reason)
    return match.group(1) if match else "the test failed on the replay"


def replay_summary() -> None:
    tasks = REPLAY["tasks"]
    failed = {task: reason for task, (ok, reason) in tasks.items() if not ok}
    causes = Counter(replay_cause(reason) for reason in failed.values())
    print(
        f"evalpack pass_at_1_replayed: {len(tasks) - len(failed)}/{len(tasks)} of the programs "
        f"that passed, recorded (the answerless run) and replayed in {REPLAY['seconds']:.1f} s; not replayed by cause: "
        f"{dict(causes.most_common())}"
    )
    for task, reason in sorted(failed.items(), key=lambda item: int(item[0].split("/")[1])):
        print(f"  {task}: {reason[:200]}")


def baseline_reason(report: dict, doc: dict) -> tuple[bool, str]:
    """The runner's report judged as the trusted check judges it (its seal aside)."""
    if report["error"]:
        return False, report["error"][-300:]
    if report["failures"]:
        return False, " | ".join(
            f"{name}: {trace.strip().splitlines()[-1]}" for name, trace in report["failures"]
        )[:300]
    names, _ = bigcodebench.test_plan(doc["test"])
    ran = report["tests"]
    ok = bool(names) and set(ran) == set(names) and set(ran.values()) == {"passed"}
    return ok, "" if ok else f"tests run and their outcomes: {ran}"[:300]


def run_baseline(docs: list[dict], timeout: float, workdir: Path) -> tuple[float, list]:
    jobs_file, runner = workdir / "bigcodebench_jobs.json", workdir / "runner.py"
    runner.write_text(bigcodebench_sources.runner_source())
    jobs = [
        {"program": program(d), "test": d["test"], "imports": bigcodebench.test_plan(d["test"])[1]}
        for d in docs
    ]
    jobs_file.write_text(json.dumps(jobs))
    start = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            DRIVER,
            str(bigcodebench_libs.folder()),
            str(runner),
            str(jobs_file),
            str(timeout),
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=workdir,
        # the NLTK data the sandbox's runner gives its programs (job/runner.py)
        env={**os.environ, "TMPDIR": str(workdir), "NLTK_DATA": str(bigcodebench_libs.nltk_data())},
    )
    seconds = time.perf_counter() - start
    reports = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if len(reports) != len(docs):
        sys.exit(f"baseline driver failed: {out.stderr.strip().splitlines()[-1:]}")
    return seconds, [baseline_reason(r, d) for r, d in zip(reports, docs)]


def summary(name: str, seconds: float, results: list[tuple[bool, str]]) -> None:
    causes = Counter(cause(p, r) for p, r in results)
    passed = causes.pop("passed", 0)
    print(
        f"{name:9} {len(results)} programs in {seconds:7.1f} s = "
        f"{len(results) / seconds:6.2f} programs/s; passed {passed}/{len(results)} "
        f"({100 * passed / len(results):.1f}%); failures by cause: {dict(causes.most_common())}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full set (1,140), not Hard")
    parser.add_argument("--timeout", type=float, default=bigcodebench.DEFAULT_TIMEOUT)
    parser.add_argument("--every", type=int, default=1, help="only every N-th task (a sample)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="rounds, each timing evalpack then the baseline on its tasks",
    )
    args = parser.parse_args()
    if not bigcodebench_libs.installed():
        sys.exit(
            "install BigCodeBench's libraries first: "
            "python -m evalpack.hooks.bigcodebench.libs install"
        )
    docs = load(args.full)[:: args.every]
    print(
        f"{os.cpu_count()} cores; evalpack isolation: {execution.isolation()}, network: "
        f"{execution.network_isolation(full_runtime=True)}; {len(docs)} tasks, limit {args.timeout:g} s, "
        f"{args.rounds} rounds"
    )
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"bigcodebench-baseline-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    ours_seconds = base_seconds = 0.0
    ours, base = [], []
    try:
        for r in range(args.rounds):  # load from elsewhere falls on both alike
            part = docs[r :: args.rounds]
            seconds, results = run_evalpack(part, args.timeout)
            ours_seconds, ours = ours_seconds + seconds, ours + list(zip(part, results))
            seconds, results = run_baseline(part, args.timeout, workdir)
            base_seconds, base = base_seconds + seconds, base + list(zip(part, results))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summary("evalpack", ours_seconds, [result for _, result in ours])
    summary("baseline", base_seconds, [result for _, result in base])
    print(f"ratio (baseline time / evalpack time): {base_seconds / ours_seconds:.2f}x")
    passed = sum(p for _, (p, _) in ours)
    print(f"evalpack pass_at_1_real_values: {passed - len(MADE)}/{len(ours)}; on values the "
          f"program made: {MADE or 'none'}")  # fmt: skip
    replay_summary()
    print(f"{held.describe()} (the recording runs' and replays' runtime, in their time above)")
    for (doc, (p, r)), (_, (bp, br)) in zip(ours, base):
        if not (p and bp):
            print(
                f"  {doc['task_id']}: evalpack {cause(p, r)} ({r[:160]}) | baseline "
                f"{cause(bp, br)} ({br[:160]})"
            )


if __name__ == "__main__":
    main()
