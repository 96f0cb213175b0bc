"""Sandboxed, unforgeable execution of untrusted model code against trusted tests.

    verdicts = run_jobs([Job(program, test, entry_point, timeout=3.0, trusted_prelude=prompt)])

`Job(program, test, entry_point, timeout=3.0, trusted_prelude="")`: `program` is the untrusted
candidate module (for HumanEval: prompt + completion); `test` is trusted code that calls
`entry_point` (HumanEval: the dataset's `test` + `check(<entry_point>)`); `trusted_prelude` is
trusted code run before the test, so that helpers the test calls directly exist on the trusted
side (HumanEval: the dataset's prompt, e.g. `encode_cyclic`, `poly`). `run_jobs(jobs)` returns,
in order, one `Verdict(passed, outcome, reason, seconds, output)` per job, outcome one of
passed | failed | timeout | error | killed; both are dataclasses (`dataclasses.asdict` works).

Design (three kinds of process per pool slot; slots run in parallel, one per core):

* trusted worker (forked from the caller by `bounded_map`): runs `trusted_prelude`, then `test`
  with `entry_point` bound to a *proxy*. Each call of the proxy sends its arguments, as plain
  data, to the candidate's process and gets back plain data (None, bool, int, float, str, bytes
  and lists / tuples / dicts / sets of those; exact types, size-capped), decoded by our own JSON
  codec, never unpickled. Every comparison happens here, so nothing the candidate does can make
  an assertion pass; its exit, crash, hang or a non-plain result fails the job even when the test
  catches exceptions. A test that never calls the candidate is an error, not a pass.
* zygote (`evalpack.sandbox_zygote`, one warm interpreter per slot): pre-imports the standard
  modules candidates use, and once enters an empty network namespace, a private mount namespace
  and a minimal read-only root (see that module). It forks a candidate per job and never sees
  a test.
* candidate: init of its own PID and IPC namespaces, a fresh tmpfs /tmp as working area,
  no_new_privs, the slot's own unprivileged uid, resource limits, scrubbed environment,
  stdout/stderr into a memory file of which the first OUTPUT_CAP bytes are kept. At the end of the job the trusted worker SIGKILLs it through a pidfd and waits for it;
  the kernel kills everything else in its PID namespace first (orphans, `setsid` children,
  fork bombs), so nothing survives.

This needs root. Without it (or where the kernel refuses namespaces) candidates run in their
own session with limits and a closed Python socket layer, in a temporary directory removed
afterwards; `isolation()` says which: "namespaces+uid" or "session+limits".
It is not a virtual machine: kernel exploits and side channels are out of its scope.
"""

from __future__ import annotations

import builtins
import fcntl
import json
import math
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache

from evalpack.bounded import bounded_map

MAX_MESSAGE = 16 * 1024 * 1024  # bytes of one encoded call or result
OUTPUT_CAP = 64 * 1024  # bytes of stdout+stderr kept per job
MEMORY_LIMIT = 2 * 1024**3  # address space of a candidate
FILE_SIZE_LIMIT = 16 * 1024**2
OPEN_FILES_LIMIT = 64
PROCESS_LIMIT = 32  # per sandbox uid
SCRATCH_SIZE = "64m"  # the candidate's /tmp
UID_BASE = 61000  # sandbox uids UID_BASE .. UID_BASE + UID_SLOTS - 1, one per concurrent slot
UID_SLOTS = 256
KILL_GRACE = 30.0  # seconds a SIGKILLed candidate may take to be gone before the harness errs


@dataclass
class Job:
    program: str  # untrusted: the candidate's module source
    test: str  # trusted: code that calls `entry_point` (e.g. HumanEval `test` + `check(f)`)
    entry_point: str
    timeout: float = 3.0
    trusted_prelude: str = ""  # trusted: defined before the test runs (the prompt's helpers)


@dataclass
class Verdict:
    passed: bool
    outcome: str  # passed | failed | timeout | error | killed
    reason: str
    seconds: float
    output: str = ""  # the candidate's stdout+stderr, capped


# ---------------------------------------------------------------- plain-data codec


class NotPlainData(TypeError):
    """A value outside the plain-data types crossed the sandbox boundary."""


def _encode(value):
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return value if abs(value) < 2**53 else {"$int": str(value)}
    if kind is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if kind is bytes:
        return {"$bytes": value.hex()}
    if kind is list:
        return [_encode(v) for v in value]
    if kind is tuple:
        return {"$tuple": [_encode(v) for v in value]}
    if kind in (set, frozenset):
        return {"$set" if kind is set else "$frozenset": [_encode(v) for v in value]}
    if kind is dict:
        return {"$dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    raise NotPlainData(f"{kind.__name__} is not plain data")


_DECODERS = {
    "$int": int, "$float": float, "$bytes": bytes.fromhex,
    "$tuple": lambda items: tuple(_decode(v) for v in items),
    "$set": lambda items: {_decode(v) for v in items},
    "$frozenset": lambda items: frozenset(_decode(v) for v in items),
    "$dict": lambda pairs: {_decode(k): _decode(v) for k, v in pairs},
}


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        ((tag, payload),) = value.items()
        return _DECODERS[tag](payload)
    return value


def to_wire(value) -> str:
    """Plain data as JSON text (`NotPlainData` for anything else)."""
    return json.dumps(_encode(value), separators=(",", ":"))


def from_wire(text: str | bytes):
    return _decode(json.loads(text))


def encode_message(obj) -> bytes:
    data = to_wire(obj).encode()
    if len(data) > MAX_MESSAGE:
        raise NotPlainData(f"message of {len(data)} bytes exceeds {MAX_MESSAGE}")
    return len(data).to_bytes(4, "big") + data


def _arm_deadline(sock: socket.socket, deadline: float) -> None:
    """Let the socket's next operation wait only until `deadline` (time.monotonic());
    TimeoutError if it has passed already."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("deadline passed")
    sock.settimeout(remaining)


def _recv_exact(sock: socket.socket, n: int, deadline: float | None = None) -> bytes:
    """`n` bytes; with a `deadline`, TimeoutError once it has passed, however slowly the peer
    trickles its bytes in."""
    chunks = []
    while n:
        if deadline is not None:
            _arm_deadline(sock, deadline)
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise EOFError("peer closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def receive_message(sock: socket.socket, deadline: float | None = None):
    size = int.from_bytes(_recv_exact(sock, 4, deadline), "big")
    if size > MAX_MESSAGE:
        raise NotPlainData(f"message of {size} bytes exceeds {MAX_MESSAGE}")
    return from_wire(_recv_exact(sock, size, deadline))

# ---------------------------------------------------------------- pool slot (trusted worker)


@cache
def isolation() -> str:
    """What this host allows: "namespaces+uid" (root: empty network namespace, read-only minimal
    root, PID namespace and unprivileged uid per candidate) or "session+limits" (own session,
    resource limits, Python socket layer closed). Found by running the zygote's own set-up;
    EVALPACK_SANDBOX=session+limits forces the latter."""
    probe = subprocess.run([sys.executable, "-m", "evalpack.sandbox_zygote", "probe"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        raise RuntimeError(f"sandbox set-up failed: {probe.stderr.strip()[-500:]}")
    return probe.stdout.strip()


def network_isolation() -> str:
    """How candidates are kept off the network on this host: "empty network namespace" (no
    interface at all, loopback included) or "closed socket layer" (Python's socket constructors
    refuse; code that reaches the C library through ctypes is not stopped)."""
    return "empty network namespace" if isolation() == "namespaces+uid" else "closed socket layer"


class _Slot:
    """Per trusted-worker state: its zygote and its sandbox uid (held by a lock file)."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.uid, self._lock = _claim_uid()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.control = ours
        self.zygote = subprocess.Popen(
            [sys.executable, "-m", "evalpack.sandbox_zygote", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, close_fds=True,
        )
        theirs.close()
        hello = self.control.recv(4096)
        if not hello:
            raise RuntimeError("the sandbox zygote failed to set up (its error is on stderr)")
        self.isolation = json.loads(hello)["isolation"]

    def spawn(self, job: Job, channel_end: socket.socket, output: int,
              workdir: str) -> tuple[int, int]:
        """Start a candidate for `job`; its pid and a pidfd for it. The descriptors travel
        with one marker byte, the request follows as a length-prefixed message."""
        request = {"program": job.program, "entry_point": job.entry_point, "uid": self.uid,
                   "cpu_seconds": max(1, math.ceil(job.timeout) + 1), "workdir": workdir}
        try:
            socket.send_fds(self.control, [b"\0"], [channel_end.fileno(), output])
            self.control.sendall(encode_message(request))
            message, fds, _, _ = socket.recv_fds(self.control, 4096, 1)
            return json.loads(message)["pid"], fds[0]
        except (OSError, ValueError, IndexError):  # the zygote is gone: replace it next job
            self.zygote.kill()
            self.zygote.wait()
            raise

    def kill(self, pid: int, pidfd: int) -> None:
        """SIGKILL the candidate and return once it is gone. With full isolation it is init of
        its PID namespace, so the kernel has killed all its descendants before that."""
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            if self.isolation != "namespaces+uid":
                os.killpg(pid, signal.SIGKILL)  # its session's group; `setsid` children escape
        except ProcessLookupError:
            pass
        readable, _, _ = select.select([pidfd], [], [], KILL_GRACE)
        os.close(pidfd)
        if not readable:
            raise RuntimeError(f"candidate {pid} survived SIGKILL for {KILL_GRACE:g}s")


def _claim_uid() -> tuple[int, int]:
    for slot in range(UID_SLOTS):
        fd = os.open(f"/tmp/evalpack-sandbox-uid-{slot}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return UID_BASE + slot, fd
        except OSError:
            os.close(fd)
    raise RuntimeError("no free sandbox uid")


def sandbox_processes() -> list[int]:
    """Live processes running under any sandbox uid (there are none between jobs)."""
    uids = range(UID_BASE, UID_BASE + UID_SLOTS)
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid in uids and _alive(entry):
                found.append(int(entry))
        except OSError:
            continue
    return found


def _alive(pid: str) -> bool:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"


_SLOT: _Slot | None = None


def _slot() -> _Slot:
    global _SLOT
    if _SLOT is None or _SLOT.owner != os.getpid() or _SLOT.zygote.poll() is not None:
        _SLOT = _Slot()
    return _SLOT


class CandidateFailure(BaseException):
    """The candidate raised SystemExit, died, hung, or sent something that is not plain data;
    `outcome` says which. A BaseException, so a test's `except Exception` cannot swallow it."""

    def __init__(self, outcome: str, reason: str):
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason


class _Proxy:
    """Stands in for the candidate's function on the trusted side. Remembers the first
    failure, which decides the verdict whatever the test does with the exception."""

    def __init__(self, channel: socket.socket, deadline: float):
        self.channel, self.deadline = channel, deadline
        self.calls = 0
        self.failure: CandidateFailure | None = None

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.failure is not None:
            raise self.failure
        try:
            return self._call(args, kwargs)
        except CandidateFailure as failure:
            self.failure = failure
            raise

    def _call(self, args, kwargs):
        try:
            _arm_deadline(self.channel, self.deadline)  # a candidate that never reads cannot stall us
            self.channel.sendall(encode_message([list(args), kwargs]))
        except NotPlainData as exc:
            raise CandidateFailure("error", f"test passed non-plain data: {exc}") from None
        except TimeoutError:
            raise CandidateFailure("timeout", "time limit") from None
        except OSError:
            raise CandidateFailure("killed", "candidate process is gone") from None
        reply = self.receive(expected="result")
        if "error" in reply:
            name, text = reply["error"]
            raise _as_exception(name, text)
        return reply["result"]

    def receive(self, expected: str) -> dict:
        """The candidate's next message: {expected: value} or {"error": [name, text]}."""
        try:
            message = receive_message(self.channel, self.deadline)
        except TimeoutError:
            raise CandidateFailure("timeout", "time limit") from None
        except (EOFError, ConnectionError):
            raise CandidateFailure("killed", "candidate process exited or was killed") from None
        except (NotPlainData, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise CandidateFailure("error", f"candidate sent non-plain data: {exc}") from None
        if not _well_formed(message, expected):
            raise CandidateFailure("error", "candidate sent a malformed message")
        return message


def _well_formed(message, expected: str) -> bool:
    if type(message) is not dict or len(message) != 1:
        return False
    ((key, value),) = message.items()
    if key == "error":
        return (type(value) is list and len(value) == 2
                and all(type(part) is str for part in value))
    return key == expected


def _as_exception(name: str, text: str) -> BaseException:
    """The candidate's exception, as a builtin exception of the same name where one exists
    (tests may expect e.g. ValueError), else a CandidateFailure."""
    builtin = getattr(builtins, name, None)
    # StopIteration raised into a test's generator or map() would end it early and silently
    if isinstance(builtin, type) and issubclass(builtin, Exception) and not issubclass(
            builtin, (StopIteration, StopAsyncIteration)):
        return builtin(f"[candidate] {text}")
    return CandidateFailure("error", f"candidate raised {name}: {text}")


def run_job(job: Job) -> Verdict:
    """One job, in the calling (trusted worker) process. Prefer `run_jobs`."""
    slot = _slot()
    start = time.monotonic()
    full = slot.isolation == "namespaces+uid"
    workdir = "" if full else tempfile.mkdtemp(prefix="evalpack-sandbox-")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    output = os.memfd_create("candidate-output")  # its stdout+stderr; no reader thread needed
    pid, pidfd = slot.spawn(job, theirs, output, workdir)
    theirs.close()
    proxy = _Proxy(ours, start + job.timeout)
    try:
        verdict = _run_test(job, proxy)
    finally:
        slot.kill(pid, pidfd)
        ours.close()
        verdict_output = os.pread(output, OUTPUT_CAP, 0)
        os.close(output)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    verdict.seconds = time.monotonic() - start
    verdict.output = verdict_output.decode("utf-8", "replace")
    return verdict


def _run_test(job: Job, proxy: _Proxy) -> Verdict:
    try:
        ready = proxy.receive(expected="ready")
        if "error" in ready:
            name, text = ready["error"]
            return Verdict(False, "error", f"program failed to load: {name}: {text}", 0.0)
        namespace: dict = {"__name__": "__trusted_test__"}
        exec(compile(job.trusted_prelude, "<prelude>", "exec"), namespace)  # noqa: S102
        namespace[job.entry_point] = proxy
        exec(compile(job.test, "<test>", "exec"), namespace)  # noqa: S102 (trusted test)
    except CandidateFailure as exc:
        return Verdict(False, exc.outcome, exc.reason, 0.0)
    except AssertionError as exc:
        verdict = Verdict(False, "failed", f"assertion failed {exc}".strip(), 0.0)
    except Exception as exc:  # noqa: BLE001 (the candidate's exception, re-raised by the proxy)
        verdict = Verdict(False, "failed", f"{type(exc).__name__}: {str(exc)[:200]}", 0.0)
    else:
        verdict = Verdict(True, "passed", "all assertions held", 0.0)
    if proxy.failure is not None:  # the test caught it; it still decides
        return Verdict(False, proxy.failure.outcome, proxy.failure.reason, 0.0)
    if proxy.calls == 0:
        return Verdict(False, "error", "the test never called the candidate", 0.0)
    return verdict


def run_jobs(jobs: list[Job], workers: int | None = None) -> list[Verdict]:
    """Verdicts for `jobs`, in order, run in parallel over all cores."""
    if not jobs:
        return []
    hard_bound = max(job.timeout for job in jobs) + KILL_GRACE + 30.0
    verdicts = []
    for outcome in bounded_map(run_job, jobs, timeout=hard_bound, workers=workers):
        if outcome.status == "ok":
            verdicts.append(outcome.value)
        else:
            reason = outcome.error or "trusted worker exceeded the hard bound"
            verdicts.append(Verdict(False, "error", f"harness: {reason}", outcome.seconds))
    return verdicts
