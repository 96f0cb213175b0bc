"""A job's time budget: CPU time of its slot's group (and of its trusted worker where that is
outside the group) against the job's limit, with a wall-clock backstop; without cgroups, wall
time. Memoized results (see `memo`) are charged the time their first computation took.
"""

from __future__ import annotations

import time

from . import pool
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
        if self.clock is None:
            self.wall_limit = timeout
        else:
            self.wall_limit = WALL_FACTOR * timeout + WALL_EXTRA
            self.cpu_start = self.clock() + self.own_time()

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
        if time.monotonic() - self.start + self.charged > self.wall_limit:
            what = "wall-clock backstop" if self.clock else "wall-clock limit"
            return CandidateFailure(
                "timeout", f"time limit: {what} of {self.wall_limit:g} s", "wall"
            )
        return None
