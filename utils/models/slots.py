"""One model's requests in flight, shared by every run that uses it at the same time.

A leaderboard worker that streams a checkpoint (`evalpack.leaderboard.stream`) runs its tasks side
by side against one served model. Each task's `generate_until` sends on its own threads, but
`Slots` holds the model's concurrency (`num_concurrent`) for all of them together: the server
gets that many requests at once, not that many per task, and a free slot goes to the waiting
request of a task whose scoring is heavy (its YAML's `scoring_cost: heavy`: MATH's sympy,
HumanEval+'s and BigCodeBench's programs), then to the task with the most generation ahead
of it (`stream_priority`): the slowly scored tasks finish generating first and are scored
while the others generate, and the stream ends on cheaply scored requests (a short tail after
the last answer); among equals the earliest task goes first.

The task's number is a per-thread setting (`running_as`), read by `generate_until` in the
thread that calls it; the same setting carries a callback for the first model call of a run
(`reached_model`), which the stream uses to start building the next task. Once a run's
generation is over (`generation_done`), its thread, and every process it starts from then on
(code execution, math-verify workers), runs at a lower CPU priority: scoring gets what CPU
the other tasks' requests leave, instead of delaying them on a busy machine (a whole
tulu_3_dev checkpoint on 2 cores: the server's busy fraction fell to 55% while HumanEval+
programs ran).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import threading
from collections.abc import Callable

_local = threading.local()
SCORING_NICENESS = 10  # added to a streamed run's thread once its generation is over
WAIT_STEP = 0.5  # seconds between checks that the waiting request's dispatch was stopped


@contextlib.contextmanager
def running_as(
    priority: int,
    on_model_call: Callable[[], None] | None = None,
    heavy_scoring: bool = False,
    on_model_done: Callable[[], None] | None = None,
):
    """Within: this thread's run is number `priority` of the stream (`stream_priority`), its
    task's scoring is heavy or not, `on_model_call` is called at its first model call and
    `on_model_done` after each model call returned."""
    _local.priority, _local.on_model_call, _local.streamed = priority, on_model_call, True
    _local.heavy_scoring, _local.on_model_done = heavy_scoring, on_model_done
    try:
        yield
    finally:
        _local.priority, _local.on_model_call, _local.streamed = 0, None, False
        _local.heavy_scoring, _local.on_model_done = False, None


def stream_priority(max_tokens: int) -> tuple[bool, int, int]:
    """The priority of this thread's requests (lowest first), for a run that asks for
    `max_tokens` new tokens at most over all its requests: heavy scoring first, then the most
    tokens, then the earliest run."""
    heavy = getattr(_local, "heavy_scoring", False)
    return not heavy, -max_tokens, getattr(_local, "priority", 0)


def reached_model() -> None:
    """Called by a model wrapper when a run's requests are about to go out."""
    callback = getattr(_local, "on_model_call", None)
    if callback:
        _local.on_model_call = None
        callback()


def generation_done() -> None:
    """Called by a model wrapper when a run's requests are answered: in a stream, this thread
    (and what it starts) is niced by `SCORING_NICENESS`, once (Linux; elsewhere nothing), and
    the run's `on_model_done` is called."""
    callback = getattr(_local, "on_model_done", None)
    if callback:
        callback()
    if not getattr(_local, "streamed", False) or getattr(_local, "niced", False):
        return
    _local.niced = True
    with contextlib.suppress(OSError, AttributeError):
        thread = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, now + SCORING_NICENESS))


class Slots:
    """At most `size` holders at a time; a freed slot goes to the waiter with the lowest
    (priority, arrival); priorities are any comparable values (the stream's are tuples)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.busy = 0
        self._lock = threading.Lock()
        self._waiting: list[tuple] = []  # (priority, arrival, event)
        self._arrivals = itertools.count()

    @contextlib.contextmanager
    def held(self, priority=0, stopped: Callable[[], bool] = lambda: False):
        """Hold a slot for the duration; yields True, or False without a slot when `stopped()`
        turned true while waiting (the caller then sends nothing)."""
        if not self._acquire(priority, stopped):
            yield False
            return
        try:
            yield True
        finally:
            self._release()

    def _acquire(self, priority, stopped: Callable[[], bool]) -> bool:
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
