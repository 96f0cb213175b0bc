"""A job's time budget: CPU time of its slot's group (and of its trusted worker where that is
outside the group) against the job's limit, with a wall-clock backstop; without cgroups, wall
time. Memoized results (see `memo`) are charged the time their first computation took.

The backstop is for jobs that wait instead of computing (a sleep, a blocked read). Time the
job's threads spent runnable but waiting for a CPU (the kernel's schedstat: every thread of
every process in the slot's group, and the trusted worker's) does not count towards it: on a
loaded machine an honest job that computes is judged by its CPU time alone, whatever else the
machine runs, in whichever thread it computes. A candidate cannot make that time grow without
the machine's load: its own threads share one core, whose time counts against the limit, and
it cannot lower its own scheduling class or priority (seccomp). A thread that ended before
the backstop is read no longer counts (the count errs towards the limit).
"""

from __future__ import annotations

import os
import threading
import time

from . import cgroups, pool
from .limits import WALL_EXTRA, WALL_FACTOR

CPU_SLACK = 0.15  # seconds a group may run ahead of its one-core quota (one CFS period, and more)


class CandidateFailure(BaseException):
    """The candidate raised SystemExit, died, hung, or sent something that is not plain data;
    `outcome` says which. A BaseException, so a test's `except Exception` cannot swallow it."""

    def __init__(self, outcome: str, reason: str, limit: str = ""):
        super().__init__(reason)
        self.outcome, self.reason, self.limit = outcome, reason, limit


class Budget:
    """A job's time limit, measured from before its candidate is forked."""

    def __init__(self, timeout: float, slot: pool.Slot):
        """CPU time from the slot's cgroup, plus this worker's own where it is not in it."""
        self.timeout, self.clock = timeout, slot.cpu_clock
        self.own_time = time.process_time if not slot.worker_in_group else (lambda: 0.0)
        # how fast the job's CPU time can grow: the group's one core, and the worker outside it
        self.cores = 1 if slot.worker_in_group else 2
        self.start = time.monotonic()
        self.charged = 0.0  # seconds charged for memoized results (`charge`)
        # schedstat file -> its wait at the start: this thread now; the candidate's main
        # thread once forked, or, where the slot has a group, every thread that is in it when
        # the waits are read, but the zygote's (`cpu_waits`)
        worker = _schedstat(threading.get_native_id())
        self.waits = {worker: _cpu_wait(worker)}
        self.group, self.zygote = slot.group, slot.zygote.pid
        self.seen: dict[str, float] = {}  # schedstat file -> its wait when last read
        if self.clock is None:
            self.wall_limit = timeout
        else:
            self.wall_limit = WALL_FACTOR * timeout + WALL_EXTRA
            self.cpu_start = self.clock() + self.own_time()

    def watch(self, pidfd: int) -> None:
        """Count the candidate's waits for a CPU too (`pidfd`: its pidfd)."""
        path = _candidate_schedstat(pidfd) if not self.group else ""
        if path:
            self.waits[path] = 0.0  # (a new process: it waited nothing before)

    def cpu_waits(self) -> float:
        """Seconds the job's threads have waited, runnable, for a CPU since the start: each
        as last read (`exceeded` reads them at every check in the backstop's second half, so
        a thread that ended since keeps what it had; without a group, the worker's and the
        candidate's main thread)."""
        paths = dict.fromkeys(self.waits, 0.0)
        if self.group:
            try:
                idle = {int(tid) for tid in os.listdir(f"/proc/{self.zygote}/task")}
            except OSError:
                idle = set()
            paths.update((_schedstat(tid), 0.0) for tid in set(cgroups.threads(self.group)) - idle)
        for path in paths:
            self.seen[path] = max(self.seen.get(path, 0.0), _cpu_wait(path))
        return sum(max(0.0, wait - self.waits.get(path, 0.0)) for path, wait in self.seen.items())

    def charge(self, seconds: float) -> None:
        """Count `seconds` as spent (a memoized result's first computation took them)."""
        self.charged += seconds

    def cpu(self) -> float | None:
        if self.clock is None:
            return None
        return self.clock() + self.own_time() - self.cpu_start + self.charged

    def cpu_left(self) -> float | None:
        """CPU seconds left, or a lower bound of it while the job is too young to have used
        them all (read without touching the cgroup: most jobs never read it but twice)."""
        if self.clock is None:
            return None
        young = (
            self.timeout - CPU_SLACK - self.charged - (time.monotonic() - self.start) * self.cores
        )
        return young if young > 0 else self.timeout - self.cpu()

    def exceeded(self) -> CandidateFailure | None:
        left = self.cpu_left()
        if left is not None and left < 0:
            return CandidateFailure(
                "timeout",
                f"time limit: {self.timeout - left:.2f} s of CPU time (limit {self.timeout:g} s)",
                "cpu",
            )
        wall = time.monotonic() - self.start + self.charged
        if wall <= self.wall_limit:
            if self.group and wall > self.wall_limit / 2:
                self.cpu_waits()  # (each thread's waits, before it may end)
            return None
        if self.clock is None:
            return CandidateFailure(
                "timeout", f"time limit: wall-clock limit of {self.wall_limit:g} s", "wall"
            )
        waits = self.cpu_waits()  # read only late in the job: most jobs never get here
        if wall - waits <= self.wall_limit:
            return None
        return CandidateFailure(
            "timeout",
            f"time limit: wall-clock backstop of {self.wall_limit:g} s "
            f"(not counting {waits:.2f} s spent waiting for a CPU)",
            "wall",
        )


def _cpu_wait(schedstat: str) -> float:
    """Seconds the thread or process of a /proc schedstat file has spent runnable but not
    running; 0 once it is gone (or where the kernel keeps no such count)."""
    try:
        with open(schedstat, "rb") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _schedstat(tid: int) -> str:
    return f"/proc/{tid}/schedstat"


def _candidate_schedstat(pidfd: int) -> str:
    """The schedstat file of the process behind `pidfd`, by its pid in this process's PID
    namespace (the zygote's answer numbers it in the zygote's)."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Pid:"):
                    return f"/proc/{int(line.split()[1])}/schedstat"
    except (OSError, ValueError):
        pass
    return ""
