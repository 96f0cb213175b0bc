"""One model's requests in flight, shared by every run that uses it at the same time.

A leaderboard worker that streams a checkpoint (`evalpack.commands.stream`) runs its tasks side
by side against one served model. Each task's `generate_until` sends on its own threads, but
`Slots` holds the model's concurrency (`num_concurrent`) for all of them together: the server
gets that many requests at once, not that many per task, and a free slot goes to the waiting
request of the earliest task (its `priority`), so tasks finish in order and each is scored
while the later ones are still generating.

The priority is a per-thread setting (`running_as`), read by `generate_until` in the thread
that calls it; the same setting carries a callback for the first model call of a run
(`reached_model`), which the stream uses to start building the next task.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
from collections.abc import Callable

_local = threading.local()
WAIT_STEP = 0.5  # seconds between checks that the waiting request's dispatch was stopped


@contextlib.contextmanager
def running_as(priority: int, on_model_call: Callable[[], None] | None = None):
    """Within: this thread's requests wait with `priority` (lower goes first), and
    `on_model_call` is called at its first call to the model."""
    _local.priority, _local.on_model_call = priority, on_model_call
    try:
        yield
    finally:
        _local.priority, _local.on_model_call = 0, None


def current_priority() -> int:
    return getattr(_local, "priority", 0)


def reached_model() -> None:
    """Called by a model wrapper when a run's requests are about to go out."""
    callback = getattr(_local, "on_model_call", None)
    if callback:
        _local.on_model_call = None
        callback()


class Slots:
    """At most `size` holders at a time; a freed slot goes to the waiter with the lowest
    (priority, arrival)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.busy = 0
        self._lock = threading.Lock()
        self._waiting: list[tuple[int, int, threading.Event]] = []
        self._arrivals = itertools.count()

    @contextlib.contextmanager
    def held(self, priority: int = 0, stopped: Callable[[], bool] = lambda: False):
        """Hold a slot for the duration; yields True, or False without a slot when `stopped()`
        turned true while waiting (the caller then sends nothing)."""
        if not self._acquire(priority, stopped):
            yield False
            return
        try:
            yield True
        finally:
            self._release()

    def _acquire(self, priority: int, stopped: Callable[[], bool]) -> bool:
        with self._lock:
            if self.busy < self.size and not self._waiting:
                self.busy += 1
                return True
            turn = (priority, next(self._arrivals), threading.Event())
            heapq.heappush(self._waiting, turn)
        while not turn[2].wait(WAIT_STEP):
            if stopped():
                with self._lock:
                    if turn in self._waiting:
                        self._waiting.remove(turn)
                        heapq.heapify(self._waiting)
                        return False
                break  # handed a slot while giving up: take it
        return True

    def _release(self) -> None:
        with self._lock:
            if self._waiting:
                heapq.heappop(self._waiting)[2].set()  # the slot passes on, still busy
            else:
                self.busy -= 1
