"""Hard time bounds for risky work (sympy, math-verify, anything that may not return).

Two layers:

* `time_limit(seconds)`: a soft bound for one call, raising `BoundExceeded` once the call has used
  `seconds` of CPU time (SIGPROF). Signals only reach a process's main thread, so off the main
  thread it cannot interrupt anything; it then does nothing and the hard bound below is what
  protects the run.
* `bounded_map(fn, items, timeout=...)`: applies `fn` to every item in forked worker processes
  (whose main thread runs `fn`, so `time_limit` works inside them). A worker that overruns its
  item's wall-clock budget is killed and replaced; the item gets a `timeout` outcome. This works
  from any thread of the caller, and nothing `fn` does can stall the caller.
* `bounded_records(fn, jobs, timeout=..., unscored=...)`: the same for scorers, one record per
  job, a stand-in record for a job that ran out of time or failed.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
import traceback
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


class BoundExceeded(TimeoutError):
    """A call ran past its time bound."""


REARM_SECONDS = 0.05  # how often `time_limit` raises again after its bound, until the block ends


@dataclass
class Expiry:
    """What `time_limit` yields: whether its bound expired inside the block (true even where
    the code inside caught `BoundExceeded` and went on to return)."""

    expired: bool = False


@contextmanager
def time_limit(seconds: float) -> Iterator[Expiry]:
    """Raise `BoundExceeded` inside the block once it has used `seconds` of CPU time (the
    process's, user and system: SIGPROF). CPU time, not wall time, so that the work a call
    needs decides whether it runs out, never how busy the machine is: a scorer gives the
    verdicts of a quiet machine on a loaded one. Work that waits without computing is stopped
    by `bounded_map`'s wall-clock bound instead. The `Expiry` it yields says whether the bound
    expired, so that a caller records the timeout of code that swallows the exception."""
    expiry = Expiry()
    if threading.current_thread() is not threading.main_thread():
        yield expiry
        return

    def _expire(signum, frame):
        expiry.expired = True
        raise BoundExceeded(f"exceeded {seconds:g}s")

    previous = signal.signal(signal.SIGPROF, _expire)
    # Once expired, the timer repeats until the block ends: code that swallows `BoundExceeded`
    # and goes on (math-verify catches every exception, then tries its next candidate) is
    # interrupted again, so the bound holds for the whole block, not only its first call.
    signal.setitimer(signal.ITIMER_PROF, seconds, REARM_SECONDS)
    try:
        yield expiry
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@dataclass
class Outcome:
    """What became of one item: `status` is "ok" (then `value` holds the result), "timeout"
    (killed at the hard bound) or "error" (`error` holds the exception text)."""

    status: str
    value: Any = None
    error: str = ""
    seconds: float = 0.0


PARENT_CHECK = 1.0  # seconds between a waiting worker's checks that its parent is alive


def _worker_loop(fn: Callable[[Any], Any], conn) -> None:
    parent = os.getppid()
    while True:
        # A worker's siblings inherit the parent's end of its pipe, so a parent killed outright
        # (kill -9) gives it no EOF: it stops once it has been handed to another parent.
        while not conn.poll(PARENT_CHECK):
            if os.getppid() != parent:
                return
        try:
            item = conn.recv()
        except EOFError:
            return
        start = time.monotonic()
        try:
            outcome = Outcome("ok", fn(item))
        except BaseException as exc:  # noqa: BLE001 (report everything; the parent decides)
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            outcome = Outcome("error", error=last)
        outcome.seconds = time.monotonic() - start
        try:
            conn.send(outcome)
        except Exception as exc:  # noqa: BLE001 (an unpicklable result fails the item only)
            conn.send(Outcome("error", error=f"result not transferable: {exc!r}"))


class _Worker:
    def __init__(self, ctx, fn):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_loop, args=(fn, child), daemon=True)
        self.proc.start()
        child.close()
        self.index: int | None = None
        self.key: Hashable = None  # the affinity key of its last item
        self.started = 0.0

    def kill(self) -> None:
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.join()
        self.conn.close()


def bounded_map(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    timeout: float,
    workers: int | None = None,
    affinity: Callable[[Any], Hashable] | None = None,
) -> list[Outcome]:
    """Apply `fn` to each item with a hard wall-clock bound of `timeout` seconds per item.

    Results keep the order of `items`. `fn` must be a module-level function or closure that
    is valid in a forked child; items and results must pickle. With `affinity`, items of one
    key go to the worker already on that key while any are left (what it prepared for the
    first, it keeps for the next: HumanEval+'s compiled tests); a worker with none left takes
    the key with the most work left by what its items took so far, which may be another
    worker's (see `_Pending`).
    """
    items = list(items)
    if not items:
        return []
    ctx = multiprocessing.get_context("fork")
    n_workers = max(1, min(workers or os.cpu_count() or 1, len(items)))
    pool = [_Worker(ctx, fn) for _ in range(n_workers)]
    results: list[Outcome | None] = [None] * len(items)
    pending = _Pending([affinity(item) for item in items] if affinity else [None] * len(items))
    try:
        for worker in pool:
            _assign(worker, pending, items, pool)
        while any(w.index is not None for w in pool):
            busy = {w.conn: w for w in pool if w.index is not None}
            now = time.monotonic()
            wait_for = max(0.0, min(w.started + timeout for w in busy.values()) - now)
            for conn in multiprocessing.connection.wait(list(busy), timeout=wait_for):
                worker = busy[conn]
                try:
                    results[worker.index] = conn.recv()
                    pending.done(worker.key, results[worker.index].seconds)
                except (EOFError, OSError):
                    worker.proc.join(1)
                    code = worker.proc.exitcode
                    results[worker.index] = Outcome("error", error=f"worker died (exit {code})")
                    pool[pool.index(worker)] = worker = _replace(ctx, fn, worker)
                worker.index = None
                _assign(worker, pending, items, pool)
            now = time.monotonic()
            for worker in list(pool):
                if worker.index is not None and now - worker.started >= timeout:
                    results[worker.index] = Outcome("timeout", seconds=now - worker.started)
                    pending.done(worker.key, now - worker.started)
                    fresh = _replace(ctx, fn, worker)
                    pool[pool.index(worker)] = fresh
                    _assign(fresh, pending, items, pool)
    finally:
        for worker in pool:
            worker.kill()
    return results  # type: ignore[return-value]


def bounded_records(
    fn: Callable[[Any], dict], jobs: list, *, timeout: float, unscored: Callable[[Any, str], dict]
) -> list[dict]:
    """`fn`'s record for each job, through `bounded_map`; a job that ran out of time or failed
    gets `unscored(job, reason)` instead (the reason says which), so no doc is lost."""
    records = []
    for job, outcome in zip(jobs, bounded_map(fn, jobs, timeout=timeout)):
        if outcome.status == "ok":
            records.append(outcome.value)
        elif outcome.status == "timeout":
            records.append(unscored(job, f"hard time bound {timeout:g}s"))
        else:
            records.append(unscored(job, outcome.error))
    return records


class _Pending:
    """Indices of the items not yet given out, by affinity key (keys in order of their first
    item; without affinity, one key: first come, first served), and how long each key's items
    took so far."""

    def __init__(self, keys: list):
        self.keys = keys
        self.queues: OrderedDict[Hashable, deque[int]] = OrderedDict()
        for index, key in enumerate(keys):
            self.queues.setdefault(key, deque()).append(index)
        self.seconds: dict[Hashable, list[float]] = {}  # key: [seconds in all, items done]
        self.all_seconds = [0.0, 0]  # the same over all keys

    def done(self, key: Hashable, seconds: float) -> None:
        for spent in (self.seconds.setdefault(key, [0.0, 0]), self.all_seconds):
            spent[0] += seconds
            spent[1] += 1

    def take(self, key: Hashable, busy: dict[Hashable, float]) -> int | None:
        """The next item of `key`; else of the key with the most work left (`_work_left`), a
        key no other worker is on first among equals, then the first. `busy`: the keys other
        workers are on, each with how long its item there has been running."""
        if key not in self.queues:
            if not self.queues:
                return None
            mean = _mean(self.all_seconds)
            key = max(
                self.queues,
                key=lambda other: (
                    self._work_left(other, max(mean, busy.get(other, 0.0))),
                    other not in busy,
                ),
            )
        queue = self.queues[key]
        index = queue.popleft()
        if not queue:
            del self.queues[key]
        return index

    def _work_left(self, key: Hashable, guess: float) -> float:
        """Seconds a key's items left should take, by the key's items done so far (`guess` for
        a key none of whose items is done: the mean over all keys, or how long its item running
        has taken, if longer). Taking the most first, the long keys are shared by the workers
        early and the run ends on short items, not on one worker's long one while the others
        wait."""
        spent = self.seconds.get(key)
        return len(self.queues[key]) * (_mean(spent) if spent else guess)


def _mean(spent: list[float]) -> float:
    """Mean seconds an item took, from [seconds in all, items done] (0 for none done)."""
    return spent[0] / spent[1] if spent[1] else 0.0


def _assign(worker: _Worker, pending: _Pending, items: list, pool: list[_Worker]) -> None:
    now = time.monotonic()
    busy = {
        other.key: now - other.started
        for other in pool
        if other is not worker and other.index is not None
    }
    index = pending.take(worker.key, busy)
    if index is None:
        return
    worker.index, worker.key = index, pending.keys[index]
    worker.started = time.monotonic()
    worker.conn.send(items[index])


def _replace(ctx, fn, worker: _Worker) -> _Worker:
    worker.kill()
    return _Worker(ctx, fn)
