"""What the test suite costs in CPU, test by test: the suite run on one worker (`-n 0`), each
test charged the machine's busy CPU time (/proc/stat) between its start and its end, so that
the servers, Ray nodes, sandboxed jobs and boards it starts count too; printed: the files and
tests that cost most, the total, and the floor that total sets for `make test` on this
machine's cores (perfect packing, no waiting). Run it on a quiet machine: anything else running
is charged to the tests.

    .venv/bin/python benchmarks/suite_cpu.py [--top 20] [--log suite_cpu.tsv] [pytest args]

The same file is the pytest plugin that does the charging (`-p suite_cpu`).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import time
from pathlib import Path

LOG_ENV = "SUITE_CPU_LOG"
_started: dict[str, tuple[float, float]] = {}


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (every state but idle/iowait)."""
    with open("/proc/stat") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def pytest_runtest_logstart(nodeid, location):
    _started[nodeid] = (busy_seconds(), time.monotonic())


def pytest_runtest_logfinish(nodeid, location):
    cpu, wall = _started.pop(nodeid)
    with open(os.environ[LOG_ENV], "a") as log:
        log.write(f"{busy_seconds() - cpu:.2f}\t{time.monotonic() - wall:.2f}\t{nodeid}\n")


def report(rows: list[tuple[float, float, str]], top: int) -> None:
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for cpu, wall, nodeid in rows:
        by_file[nodeid.split("::")[0]][0] += cpu
        by_file[nodeid.split("::")[0]][1] += wall
    total = sum(cpu for cpu, _, _ in rows)
    cores = len(os.sched_getaffinity(0))
    print(f"{len(rows)} tests, {total:.0f} s of CPU, {sum(w for _, w, _ in rows):.0f} s of wall")
    print(f"floor on {cores} cores (perfect packing, no waiting): {total / cores:.0f} s")
    print("\nfiles (CPU s, wall s):")
    for path, (cpu, wall) in sorted(by_file.items(), key=lambda item: -item[1][0])[:top]:
        print(f"{cpu:7.1f} {wall:7.1f}  {path}")
    ranked = sorted(rows, key=lambda row: -row[0])
    print(
        f"\ntests (CPU s, wall s); the {top} costliest are {sum(r[0] for r in ranked[:top]):.0f} s:"
    )
    for cpu, wall, nodeid in ranked[:top]:
        print(f"{cpu:7.1f} {wall:7.1f}  {nodeid}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--log", default="suite_cpu.tsv", help="per-test rows (written anew)")
    args, pytest_args = parser.parse_known_args()
    log = Path(args.log).resolve()
    log.unlink(missing_ok=True)
    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, LOG_ENV: str(log), "PYTHONPATH": here}
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "suite_cpu", *pytest_args]
    subprocess.run(command, env=env, check=False)
    rows = []
    for line in log.read_text().splitlines():
        cpu, wall, nodeid = line.split("\t", 2)
        rows.append((float(cpu), float(wall), nodeid))
    report(rows, args.top)


if __name__ == "__main__":
    main()
