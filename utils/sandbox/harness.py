"""The trusted side: jobs, the proxy that stands in for the candidate, time budgets, verdicts.

A trusted worker (forked from the caller by `bounded_map`) runs `trusted_prelude`, then `test` with
`entry_point` bound to a `_Proxy`. Each call of the proxy sends its arguments, as plain data
(`protocol`), to the candidate's process and gets back plain data. Every comparison happens here,
so nothing the candidate does can make an assertion pass; its exit, crash, hang or a non-plain
result fails the job even when the test catches exceptions. A test that never calls the candidate
is an error, not a pass.

Planned calls (`Job.calls`, `plans`): the candidate answers the calls a test should make without
waiting for each; a test that strays from the plan gets its job run again, call by call. Pure
functions (`Job.pure`, `memo`): a test's reference function is computed once per worker and
arguments, each use charged its time (`budget`). What a candidate observes (its calls, when it
is stopped) does not depend on the expected answers: `checks`, `_Proxy.drain`.

Time: with cgroups a job is judged by its own work, the CPU time of its candidate's group and of
this worker, against `timeout`; wall time (WALL_FACTOR * timeout + WALL_EXTRA) is only a backstop
for a job that waits. Without cgroups, `timeout` seconds of wall time. Both are checked every TICK
seconds, by a timer on the worker's main thread that interrupts whatever it is doing, waiting for
the candidate or running the test (off the main thread, waits wake every TICK instead), and while
the candidate's messages are decoded. `Verdict.limit` says which limit decided a verdict.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from functools import lru_cache

from ..core.bounded import bounded_map
from . import checks, fresh, held, pool, view
from .budget import Budget, CandidateFailure
from .errors import as_exception
from .jobs import Job, Verdict
from .limits import JOB_MEMORY_LIMIT, KILL_GRACE, MRO_SENT, OUTPUT_CAP, WALL_EXTRA, WALL_FACTOR
from .memo import Definitions, memo_for
from .messages import encode_message, message_size
from .plans import Plan, fingerprint, plan_for
from .protocol import NotPlainData, from_wire

TICK = 0.1  # seconds between two budget checks while the trusted test computes
LARGE = 1 << 16  # bytes from which a message is received in place
KEPT = "KEPT"  # what a test leaves under this name comes back as `Verdict.kept` (plain data)


class _Strayed(BaseException):
    """The test made a call its job's plan did not predict."""


class _Proxy:
    """Stands in for the candidate's function on the trusted side. Remembers the first
    failure, which decides the verdict whatever the test does with the exception."""

    def __init__(
        self,
        channel: socket.socket,
        budget: Budget,
        planned: tuple[bytes | None, ...] = (),
        max_result: int = 0,
    ):
        self.channel, self.budget = channel, budget
        self.max_result = max_result  # bytes of one message it receives (0: MAX_MESSAGE)
        self.planned = planned  # each planned call's `plans.fingerprint`, in order
        self.calls = 0
        self.strayed = False
        self.failure: CandidateFailure | None = None
        self.waiting = False  # for the answer to a call the test made
        self.failed_waiting = False  # whether the failure came while waiting so
        self.buffer = bytearray()  # what the candidate sent: read from `offset` on
        self.offset = 0
        self.kept = None  # what the test left as KEPT (`Verdict.kept`)
        self.checks = checks.Recorder(self.check)  # the test's failed assertions
        self.draining = False  # failures no longer decide anything (`drain`)
        self.candidate_ended = False  # the test ended on an exception the candidate raised
        # Waits are bounded by the budget: on the main thread the watchdog's ticks interrupt a
        # blocked call; elsewhere the channel wakes every TICK to check it.
        main = threading.current_thread() is threading.main_thread()
        channel.settimeout(None if main else TICK)

    def __call__(self, *args, **kwargs):
        if self.checks.replaying:  # a failed check's message: from memory (`checks`)
            return self.checks.replay(args, kwargs)
        self.calls += 1
        if self.failure is not None:
            raise self.failure
        if self.calls <= len(self.planned) and not self._as_planned(args, kwargs):
            self.strayed = True
            raise _Strayed
        try:
            if self.calls > len(self.planned):
                self._ask(args, kwargs)
            self.waiting = True
            try:
                return self.checks.answered(self._answer, args, kwargs)
            finally:
                self.waiting = False
        except CandidateFailure as failure:
            raise self.fail(failure) from None

    def fail(self, failure: CandidateFailure) -> CandidateFailure:
        """Record `failure` unless an earlier one decides the verdict; the deciding one."""
        if self.failure is None and not self.draining:
            self.failure, self.failed_waiting = failure, self.waiting
        return self.failure or failure

    def worked_ahead(self) -> bool:
        """Whether, when the job failed, the candidate may have been working on planned calls
        the test had not asked for (so its time limit may have counted work the test never
        asked for): not while the test waited for an answer it asked for."""
        return self.calls < len(self.planned) and not self.failed_waiting

    def _as_planned(self, args: tuple, kwargs: dict) -> bool:
        planned = self.planned[self.calls - 1]
        return not kwargs and planned is not None and fingerprint(args) == planned

    def check(self) -> None:
        """Raise the time-limit failure once the budget is spent."""
        failure = self.budget.exceeded()
        if failure is not None:
            raise self.fail(failure)

    def _ask(self, args, kwargs) -> None:
        try:
            message = encode_message([list(args), kwargs])
        except NotPlainData as exc:
            raise CandidateFailure("error", f"test passed non-plain data: {exc}") from None
        self._send(message)

    def _answer(self):
        reply = self.receive(expected="result")
        if "error" in reply:
            raise as_exception(reply["error"])
        return reply["result"]

    def drain(self) -> None:
        """After a test that ended short of its planned calls not by the candidate's doing (a
        failure, `candidate_ended`): the rest's answers, unread, as the test would have taken
        them, until all are in or the candidate raises, fails or spends its budget."""
        if self.failure or self.candidate_ended or self.calls >= len(self.planned):
            return
        self.draining = True
        self.channel.settimeout(TICK)  # (the watchdog's timer is stopped)
        try:
            for _ in range(len(self.planned) - self.calls):
                if "error" in self.receive(expected="result"):
                    return
        except CandidateFailure:
            pass

    def _send(self, message: bytes) -> None:
        view = memoryview(message)
        while view:  # a candidate that never reads cannot stall us
            try:
                view = view[self.channel.send(view) :]
            except TimeoutError:
                self.check()
            except OSError:
                raise CandidateFailure("killed", "candidate process is gone") from None

    def _take(self, n: int) -> bytes | bytearray:
        """The next `n` bytes, however slowly the candidate trickles them in (or however
        many answers to planned calls it sends at once)."""
        if n >= LARGE and len(self.buffer) - self.offset < n:
            return self._take_large(n)
        while len(self.buffer) - self.offset < n:
            del self.buffer[: self.offset]  # what was read already, once per receive
            self.offset = 0
            self.buffer += self._receive_into(bytearray(1 << 16))
        self.offset += n
        return bytes(self.buffer[self.offset - n : self.offset])

    def _take_large(self, n: int) -> bytearray:
        """A large message, received in place (what is buffered is its beginning)."""
        data = bytearray(n)
        have = len(self.buffer) - self.offset
        data[:have] = self.buffer[self.offset :]
        self.buffer.clear()
        self.offset = 0
        with memoryview(data) as view:
            while have < n:
                have += len(self._receive_into(view[have:]))
        return data

    def _receive_into(self, space):
        """What one receive writes into `space` (a slice of it), waiting within the budget."""
        while True:
            try:
                got = self.channel.recv_into(space)
            except TimeoutError:
                self.check()
                continue
            except OSError:
                got = 0
            if not got:
                raise CandidateFailure("killed", "candidate process exited or was killed")
            return space[:got]

    def receive(self, expected: str) -> dict:
        """The candidate's next message: {expected: value} or {"error": [name, text]}."""
        try:
            size = message_size(self._take(4), self.max_result)  # before the body
            message = from_wire(self._take(size), self.check)
        except NotPlainData as exc:
            raise CandidateFailure("error", f"candidate sent non-plain data: {exc}") from None
        if not _well_formed(message, expected):
            raise CandidateFailure("error", "candidate sent a malformed message")
        return message


def _well_formed(message, expected: str) -> bool:
    if type(message) is not dict or len(message) != 1:
        return False
    ((key, value),) = message.items()
    if key == "error":  # [name, text, "module:qualname" of each class of its MRO ...]
        return (
            type(value) is list
            and 2 <= len(value) <= 2 + MRO_SENT
            and all(type(part) is str for part in value)
        )
    return key == expected


def run_job(job: Job) -> Verdict:
    """One job, in the calling process, which becomes a slot's trusted worker: it starts a
    zygote and joins the slot's CPU group until `pool.close()`. Use `run_jobs`."""
    plan = plan_for(job.calls)
    verdict = _attempt(job, plan) if plan else None
    return verdict or _attempt(job, None)


def _attempt(job: Job, plan: Plan | None) -> Verdict | None:
    """The job, its candidate answering `plan`'s calls ahead; None if the test strayed from
    the plan (or the plan could not be sent)."""
    slot = pool.current(job.zygote_prelude, job.held_runtime)
    fresh.restore((job.trusted_prelude, job.test))  # as in a freshly forked worker
    budget = Budget(job.timeout, slot)
    workdir = "" if slot.full else tempfile.mkdtemp(prefix="evalpack-sandbox-")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    # its stdout+stderr, no reader thread needed; made on the slot's CPU, which the zygote's
    # probe of the shmem inode counter expects (`counters.WORKER_SHMEM`)
    output = os.memfd_create("candidate-output")
    request = {
        "program": job.program,
        "entry_point": job.entry_point,
        "uid": slot.uid,
        "cpu_seconds": max(1, int(job.timeout) + 2),
        "workdir": workdir,
        "full_runtime": job.full_runtime,
    }
    try:
        try:
            pid, pidfd = slot.spawn(request, theirs, output, plan and (plan.key, plan.arguments))
        except NotPlainData as exc:
            seconds = time.monotonic() - budget.start
            return None if plan else Verdict(False, "error", f"program not sent: {exc}", seconds)
        theirs.close()
        budget.watch(pidfd)
        proxy = _Proxy(ours, budget, plan.fingerprints if plan else (), job.max_result)
        try:
            verdict = _run_test(job, proxy)
            if verdict is not None:  # as it ended: what the candidate does next decides nothing
                memory_killed = slot.memory_killed()
                proxy.drain()
        finally:
            slot.kill(pid, pidfd)
        slot.memory_killed()  # an OOM kill of this attempt (or while draining) is not the next's
        if verdict is None:
            return None
        verdict.output = os.pread(output, OUTPUT_CAP, 0).decode("utf-8", "replace")
        verdict.kept = proxy.kept
    finally:
        for sock in (ours, theirs):
            sock.close()
        os.close(output)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    verdict.seconds, verdict.cpu_seconds = time.monotonic() - budget.start, budget.cpu()
    verdict.memo_seconds = budget.charged
    if memory_killed:
        verdict.limit = "memory"
        verdict.reason += f" (the job reached its memory limit, {JOB_MEMORY_LIMIT / 2**30:g} GiB)"
    return verdict


def _run_test(job: Job, proxy: _Proxy) -> Verdict | None:
    """The verdict, or None if the test strayed from the job's plan, or if a planned job
    failed while its candidate may have been working on calls the test never asked for
    (then it is run again call by call: only work the test asked for decides a verdict)."""
    try:
        not_loaded = _watched(job, proxy)
    except CandidateFailure as exc:
        proxy.fail(exc)
    except _Strayed:
        return None
    except Exception as exc:  # noqa: BLE001 (an assertion, or the candidate's exception)
        verdict = checks.failed(exc)
        proxy.candidate_ended = proxy.checks.raised(exc)
    else:
        if not_loaded is not None:
            return not_loaded
        verdict = Verdict(True, "passed", "all assertions held", 0.0)
    if proxy.strayed:  # whatever the test did with it
        return None
    failure = proxy.failure or proxy.budget.exceeded()
    if failure is not None:
        failure = proxy.fail(failure)
    if failure is not None and failure.outcome == "killed":  # e.g. by its own CPU rlimit
        failure = proxy.budget.exceeded() or failure
    if failure is not None and proxy.worked_ahead():  # (whether or not a check failed)
        return None
    if proxy.checks.first is not None:  # it came first: the test stopped there in one process
        return checks.failed(proxy.checks.first)
    if failure is not None:  # it decides, whatever the test did with it
        return Verdict(False, failure.outcome, failure.reason, 0.0, limit=failure.limit)
    if proxy.calls == 0:
        return Verdict(False, "error", "the test never called the candidate", 0.0)
    return verdict


def _watched(job: Job, proxy: _Proxy) -> Verdict | None:
    """Run the test; a timer interrupting the main thread checks the budget every TICK seconds
    while it computes (elsewhere the waits and the decoder check; bounded_map's hard bound
    remains). None once it has run (a Verdict if the program did not load). The timer stops
    first on the way out, or a pending tick would raise this job's failure in the next job."""
    watching, previous = [False], None

    def tick(signum, frame):
        if watching[0]:
            proxy.check()

    try:
        if threading.current_thread() is threading.main_thread():
            watching[0] = True
            previous = signal.signal(signal.SIGALRM, tick)
            signal.setitimer(signal.ITIMER_REAL, TICK, TICK)
        proxy.waiting = True  # (the candidate works on no planned call before it is ready)
        ready = proxy.receive(expected="ready")
        proxy.waiting = False
        if "error" in ready:
            name, text = ready["error"][:2]
            return Verdict(False, "error", f"program failed to load: {name}: {text}", 0.0)
        namespace: dict = {"__name__": "__trusted_test__"}
        exec(_compiled(job.trusted_prelude, "<prelude>"), namespace)  # noqa: S102
        namespace[job.entry_point], namespace[checks.NAME] = proxy, proxy.checks
        definitions = _definitions(job, namespace, proxy)
        try:
            exec(checks.compiled(job.test), namespace, definitions)  # noqa: S102 (trusted)
        finally:  # (kept whether or not the test passed)
            proxy.kept = namespace.get(KEPT)
        return None
    finally:
        watching[0] = False  # first: no call (where a pending tick could run) before it
        if previous is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _definitions(job: Job, namespace: dict, proxy: _Proxy) -> dict:
    """The test's local namespace: its globals, or one that memoizes `job.pure` functions."""
    if not job.pure:
        return namespace
    memo = memo_for(job.trusted_prelude, job.test)
    return Definitions(namespace, job.pure, memo, proxy.budget.charge, lambda: proxy.calls)


@lru_cache(maxsize=256)
def _compiled(source: str, name: str):
    """Trusted code, compiled once per worker (the samples of a problem share it)."""
    return compile(source, name, "exec")


def run_jobs(jobs: list[Job], workers: int | None = None) -> list[Verdict]:
    """Verdicts for `jobs`, in order, run in parallel over all cores."""
    if not jobs:
        return []
    view.prepare()  # once per process: what candidates read, held in memory
    for folders in dict.fromkeys(job.held_runtime for job in jobs if job.held_runtime):
        held.prepare(folders)  # once per process and folders: a full runtime, in memory
    longest = max(job.timeout for job in jobs)
    hard_bound = WALL_FACTOR * longest + WALL_EXTRA + KILL_GRACE + 30.0
    verdicts = []
    # a worker keeps the jobs of one test while there are any: it compiled the test once
    for outcome in bounded_map(
        run_job,
        jobs,
        timeout=hard_bound,
        workers=workers,
        affinity=lambda job: (job.test, job.calls),
    ):
        if outcome.status == "ok":
            verdicts.append(outcome.value)
        else:
            reason = outcome.error or "trusted worker exceeded the hard bound"
            verdicts.append(Verdict(False, "error", f"harness: {reason}", outcome.seconds))
    return verdicts
