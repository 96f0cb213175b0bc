"""The wall-clock backstop counts time a job waits instead of computing, not time it waits
for a CPU: on a loaded machine an honest job is judged by its CPU time alone. Real processes
and the kernel's real schedstat counts: a spinner sharing one CPU with three others waits
about three quarters of the time; a sleeper waits for nothing."""

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from evalpack.sandbox.budget import Budget

SLOT = SimpleNamespace(  # no CPU time counted, no group
    cpu_clock=lambda: 0.0, worker_in_group=True, group=None, zygote=SimpleNamespace(pid=0)
)
SPIN = "while True: pass"
SLEEP = "import time; time.sleep(600)"


def started(code, cpu):
    process = subprocess.Popen([sys.executable, "-c", code])
    os.sched_setaffinity(process.pid, {cpu})
    return process


@pytest.fixture
def processes():
    started_here = []
    yield lambda code, cpu: started_here.append(started(code, cpu)) or started_here[-1]
    for process in started_here:
        process.kill()
        process.wait()


def past_the_backstop(budget, process):
    pidfd = os.pidfd_open(process.pid)
    budget.watch(pidfd)
    os.close(pidfd)
    time.sleep(budget.wall_limit + 1.0)
    return budget.exceeded()


def test_time_spent_waiting_for_a_cpu_is_not_held_against_a_job(processes):
    cpu = min(os.sched_getaffinity(0))
    for _ in range(3):
        processes(SPIN, cpu)
    job = processes(SPIN, cpu)  # runs about a quarter of the time: waits the rest
    budget = Budget(0.1, SLOT)  # backstop 2.3 s
    assert past_the_backstop(budget, job) is None
    assert budget.cpu_waits() > 1.0


def test_a_job_that_sleeps_still_meets_the_backstop(processes):
    budget = Budget(0.1, SLOT)
    failure = past_the_backstop(budget, processes(SLEEP, min(os.sched_getaffinity(0))))
    assert failure.outcome == "timeout" and failure.limit == "wall", failure.reason
    assert "backstop of 2.3 s" in failure.reason
