"""Hard time bounds for risky work (sympy, math-verify, anything that may not return).

Two layers:

* `time_limit(seconds)`: a soft bound for one call, raising `BoundExceeded` via SIGALRM. Signals
  only reach a process's main thread, so off the main thread it cannot interrupt anything; it
  then does nothing and the hard bound below is what protects the run.
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


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise `BoundExceeded` inside the block once `seconds` of wall time have passed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _expire(signum, frame):
        raise BoundExceeded(f"exceeded {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    """What became of one item: `status` is "ok" (then `value` holds the result), "timeout"
    (killed at the hard bound) or "error" (`error` holds the exception text)."""

    status: str
    value: Any = None
    error: str = ""
    seconds: float = 0.0


def _worker_loop(fn: Callable[[Any], Any], conn) -> None:
    while True:
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
    a key no other worker is on, else helps with any.
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
                    fresh = _replace(ctx, fn, worker)
                    pool[pool.index(worker)] = fresh
                    _assign(fresh, pending, items, pool)
    finally:
        for worker in pool:
            worker.kill()
    return results  # type: ignore[return-value]


def bounded_records(
    fn: Callable[[Any], dict], jobs: list, *, timeout: float,
    unscored: Callable[[Any, str], dict],
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
    item; without affinity, one key: first come, first served)."""

    def __init__(self, keys: list):
        self.keys = keys
        self.queues: OrderedDict[Hashable, deque[int]] = OrderedDict()
        for index, key in enumerate(keys):
            self.queues.setdefault(key, deque()).append(index)

    def take(self, key: Hashable, busy: set) -> int | None:
        """The next item of `key`; else of the first key not in `busy`; else of the first."""
        if key not in self.queues:
            free = (other for other in self.queues if other not in busy)
            key = next(free, next(iter(self.queues), _NONE_LEFT))
            if key is _NONE_LEFT:
                return None
        queue = self.queues[key]
        index = queue.popleft()
        if not queue:
            del self.queues[key]
        return index


_NONE_LEFT = object()


def _assign(worker: _Worker, pending: _Pending, items: list, pool: list[_Worker]) -> None:
    busy = {other.key for other in pool if other is not worker and other.index is not None}
    index = pending.take(worker.key, busy)
    if index is None:
        return
    worker.index, worker.key = index, pending.keys[index]
    worker.started = time.monotonic()
    worker.conn.send(items[index])


def _replace(ctx, fn, worker: _Worker) -> _Worker:
    worker.kill()
    return _Worker(ctx, fn)
