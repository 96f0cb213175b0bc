"""Requests sent on a few daemon threads, results taken in arrival order, and a stop that works.

`concurrent.futures` suits a run that finishes; an interrupted one needs more: Ctrl-C must stop
new requests at once (a pool keeps starting every queued one), the answers still in flight may
be collected for a few seconds, and the process must then exit without waiting for requests
that hang (a pool's threads are joined at exit; these are daemon threads).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass


class Stopped(Exception):
    """Raised inside `work` (by `Dispatch.check`) when the dispatch was stopped."""


@dataclass
class Failed:
    """An item whose work raised one of the `expected` exceptions."""

    error: Exception


class Dispatch:
    """Runs `work(item, dispatch)` for each item on `threads` daemon threads. `results()` yields
    `(item, result or Failed)` as they arrive; `stop()` starts nothing new (work that calls
    `check()` or `sleep()` ends early); a second `results(timeout=...)` collects what was in
    flight. Exceptions other than `expected` ones are raised again in the caller."""

    def __init__(
        self, work: Callable, items: Iterable, threads: int, expected: tuple[type[Exception], ...]
    ) -> None:
        self._work = work
        self._expected = expected
        self._todo: queue.SimpleQueue = queue.SimpleQueue()
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._stop = threading.Event()
        self.waiting = 0  # items whose result was not yet taken
        for item in items:
            self._todo.put(item)
            self.waiting += 1
        self.running = 0  # items started but not yet finished (in flight)
        self._lock = threading.Lock()
        for _ in range(max(1, min(threads, self.waiting))):
            threading.Thread(target=self._worker, daemon=True).start()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()

    def check(self) -> None:
        if self._stop.is_set():
            raise Stopped

    def sleep(self, seconds: float) -> None:
        """Sleep, cut short (raising `Stopped`) by `stop()`."""
        if self._stop.wait(max(0.0, seconds)):
            raise Stopped

    def results(self, timeout: float | None = None) -> Iterator[tuple[object, object]]:
        """(item, result or Failed) in arrival order, until every started item is taken (after
        `stop()`, only those in flight) or `timeout` seconds pass."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.waiting and not (self.stopped and self._in_flight_taken()):
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                return
            try:
                item, outcome = self._done.get(timeout=left)
            except queue.Empty:
                continue
            self.waiting -= 1
            if isinstance(outcome, BaseException):
                raise outcome
            yield item, outcome

    def _in_flight_taken(self) -> bool:
        with self._lock:
            return self.running == 0 and self._done.empty()

    def _worker(self) -> None:
        while not self._stop.is_set():
            try:
                item = self._todo.get_nowait()
            except queue.Empty:
                return
            with self._lock:
                self.running += 1
            try:
                outcome = self._work(item, self)
            except Stopped:
                outcome = None
            except self._expected as exc:
                outcome = Failed(exc)
            except Exception as exc:  # noqa: BLE001  (a bug: handed to the caller, raised there)
                outcome = exc
            with self._lock:
                self.running -= 1
                if outcome is not None:
                    self._done.put((item, outcome))
