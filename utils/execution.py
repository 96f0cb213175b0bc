"""Sandboxed, unforgeable execution of untrusted model code against trusted tests.

    verdicts = run_jobs([Job(program, test, entry_point, timeout=3.0, trusted_prelude=prompt)])

Design (three kinds of process per pool slot):

* trusted worker (forked from the caller by `bounded_map`): executes `trusted_prelude` (the
  dataset's prompt: imports and helpers the tests may call) and the `test` code itself, with
  `entry_point` bound to a *proxy*. Every call of the proxy sends its arguments, as plain data,
  to the candidate's process and gets back plain data (None, bool, int, float, str, bytes and
  lists / tuples / dicts / sets of those; exact types, size-capped). All comparisons happen
  here: nothing the candidate does can make an assertion pass. Data from the candidate is
  decoded from JSON by our own codec, never unpickled.
* zygote (one fresh interpreter per slot, `python -m evalpack.execution`): imports the
  standard modules candidates use, enters an empty network namespace once, and forks a
  candidate process per job. It never sees a test.
* candidate (forked from the zygote): new session, own mount namespace with fresh tmpfs over
  every world-writable directory (/tmp, /var/tmp, /run/lock, /dev/shm), its working directory
  inside that tmpfs (gone when it dies), resource limits (address space, CPU, file size, open
  files, processes), environment scrubbed, stdout/stderr to a capped pipe, then it drops to
  an unprivileged uid owned by this slot alone. It runs the program and serves calls.

At the end of every job all processes of the slot's uid are SIGKILLed (orphans, `setsid`
children, fork bombs), so nothing survives. The isolation needs root (Linux namespaces and
setuid); without it the executor still runs candidates in their own session with limits and a
closed socket layer, and `isolation()` says so. It is not a virtual machine: kernel exploits,
side channels and reading world-readable files are out of its scope.
"""

from __future__ import annotations

import builtins
import ctypes
import fcntl
import json
import math
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from evalpack.bounded import bounded_map

MAX_MESSAGE = 16 * 1024 * 1024  # bytes of one encoded call or result
OUTPUT_CAP = 64 * 1024  # bytes of stdout+stderr kept per job
MEMORY_LIMIT = 2 * 1024**3  # address space of a candidate
FILE_SIZE_LIMIT = 16 * 1024**2
OPEN_FILES_LIMIT = 64
PROCESS_LIMIT = 32  # per sandbox uid
TMPFS_SIZE = "64m"
UID_BASE = 61000  # sandbox uids UID_BASE .. UID_BASE + UID_SLOTS - 1, one per concurrent slot
UID_SLOTS = 256
WRITABLE_DIRS = ("/tmp", "/var/tmp", "/run/lock", "/dev/shm")
PRELOADED = ("math", "re", "collections", "itertools", "functools", "string", "typing",
             "heapq", "bisect", "hashlib", "statistics", "fractions", "decimal", "datetime",
             "random", "operator", "copy", "json")
CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000


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


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise EOFError("peer closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def receive_message(sock: socket.socket):
    size = int.from_bytes(_recv_exact(sock, 4), "big")
    if size > MAX_MESSAGE:
        raise NotPlainData(f"message of {size} bytes exceeds {MAX_MESSAGE}")
    return from_wire(_recv_exact(sock, size))


# ---------------------------------------------------------------- candidate side


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount(libc, source: str, target: str, fstype: str | None, flags: int, options: str) -> None:
    if libc.mount(source.encode(), target.encode(), fstype and fstype.encode(), flags,
                  options.encode() if options else None) != 0:
        raise OSError(ctypes.get_errno(), f"mount {source} on {target}")


def _isolate_filesystem() -> None:
    """Private mounts, fresh tmpfs over every world-writable directory, and the Python
    installation reachable by the unprivileged uid."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    _mount(libc, "none", "/", None, MS_REC | MS_PRIVATE, "")
    for directory in WRITABLE_DIRS:
        if os.path.isdir(directory):
            _mount(libc, "tmpfs", directory, "tmpfs", 0, f"size={TMPFS_SIZE},mode=1777")
    # The standard library must stay importable (lazy imports such as `_strptime`); a venv's
    # own site-packages are not needed by candidates.
    if not sys.base_prefix.startswith(tuple(d + "/" for d in WRITABLE_DIRS)):
        _expose(libc, sys.base_prefix, "/tmp/.python")


def _expose(libc, path: str, hold: str) -> None:
    """Make `path` traversable for other users when an ancestor (e.g. /root, mode 0700)
    is not: the ancestor is replaced, in this mount namespace only, by an empty tmpfs holding
    just the way to `path`. The rest of that ancestor's contents stays hidden."""
    parts = Path(path).parts
    for depth in range(2, len(parts)):
        blocked = Path(*parts[:depth])
        if os.stat(blocked).st_mode & 0o001:
            continue
        child = blocked / parts[depth]
        os.makedirs(hold)
        _mount(libc, str(child), hold, None, MS_BIND | MS_REC, "")
        _mount(libc, "tmpfs", str(blocked), "tmpfs", 0, "size=1m,mode=0755")
        os.makedirs(child)
        _mount(libc, hold, str(child), None, MS_BIND | MS_REC, "")
        return


def _limit_resources(cpu_seconds: int) -> None:
    for limit, value in ((resource.RLIMIT_AS, MEMORY_LIMIT), (resource.RLIMIT_CPU, cpu_seconds),
                         (resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT),
                         (resource.RLIMIT_NOFILE, OPEN_FILES_LIMIT),
                         (resource.RLIMIT_NPROC, PROCESS_LIMIT), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(limit, (value, value))


def _close_sockets_layer() -> None:
    """Fallback when no network namespace can be had: no new sockets from Python."""
    def refuse(*args, **kwargs):
        raise OSError("network access is disabled in the sandbox")

    socket.socket = refuse  # type: ignore[misc]
    socket.create_connection = refuse  # type: ignore[assignment]


def _enter_candidate(channel: socket.socket, output_fd: int, uid: int, cpu_seconds: int,
                     privileged: bool) -> None:
    os.setsid()
    workdir = "/tmp/work"
    if privileged:
        _isolate_filesystem()
    else:
        _close_sockets_layer()
        workdir = f"/tmp/evalpack-sandbox-{os.getpid()}"
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.closerange(3, channel.fileno())
    os.closerange(channel.fileno() + 1, 1 << 16)
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8"})
    if privileged:
        os.chown(workdir, uid, uid)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    _limit_resources(cpu_seconds)


def _serve_candidate(channel: socket.socket, program: str, entry_point: str) -> None:
    namespace = {"__name__": "__candidate__"}
    try:
        exec(compile(program, "<candidate>", "exec"), namespace)  # noqa: S102 (sandboxed)
        function = namespace[entry_point]
    except BaseException as exc:  # noqa: BLE001 (reported to the trusted side)
        channel.sendall(encode_message({"error": _describe(exc)}))
        return
    channel.sendall(encode_message({"ready": True}))
    while True:
        args, kwargs = receive_message(channel)
        try:
            reply = {"result": function(*args, **kwargs)}
            message = encode_message(reply)
        except BaseException as exc:  # noqa: BLE001 (SystemExit included: a failure)
            message = encode_message({"error": _describe(exc)})
        channel.sendall(message)


def _describe(exc: BaseException) -> list[str]:
    return [type(exc).__name__, str(exc)[:300]]


# ---------------------------------------------------------------- zygote


def zygote_main(control_fd: int, privileged: bool) -> None:
    """Fork one candidate process per request; report its pid. Runs in its own interpreter."""
    for module in PRELOADED:
        __import__(module)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # candidates are reaped automatically
    if privileged and _libc().unshare(CLONE_NEWNET) != 0:  # one empty netns for all jobs
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, MAX_MESSAGE, 2)
        except OSError:
            return
        if not message:
            return
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            channel = socket.socket(fileno=fds[0])
            try:
                _enter_candidate(channel, fds[1], request["uid"], request["cpu_seconds"],
                                 privileged)
                _serve_candidate(channel, request["program"], request["entry_point"])
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        control.sendall(json.dumps({"pid": pid}).encode())


# ---------------------------------------------------------------- trusted worker


@cache
def isolation() -> str:
    """What this machine allows: "namespaces+uid" (root: empty network namespace, private
    tmpfs, unprivileged uid per slot) or "session+limits" (no root: own session, resource
    limits, Python socket layer closed)."""
    if os.geteuid() != 0:
        return "session+limits"
    code = f"import ctypes,sys; sys.exit(ctypes.CDLL(None).unshare({CLONE_NEWNS | CLONE_NEWNET}))"
    probe = subprocess.run([sys.executable, "-c", code], check=False)
    return "namespaces+uid" if probe.returncode == 0 else "session+limits"


class _Slot:
    """Per trusted-worker state: its zygote and its sandbox uid (held by a lock file)."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.privileged = isolation() == "namespaces+uid"
        self.uid, self._lock = _claim_uid()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.control = ours
        self.zygote = subprocess.Popen(
            [sys.executable, "-m", "evalpack.execution", str(theirs.fileno()),
             "1" if self.privileged else "0"],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, close_fds=True,
        )
        theirs.close()

    def spawn(self, job: Job, channel_end: socket.socket, output_w: int) -> int:
        request = {"program": job.program, "entry_point": job.entry_point, "uid": self.uid,
                   "cpu_seconds": max(1, math.ceil(job.timeout) + 1)}
        socket.send_fds(self.control, [json.dumps(request).encode()],
                        [channel_end.fileno(), output_w])
        return json.loads(self.control.recv(4096))["pid"]

    def sweep(self, pid: int) -> None:
        """Kill the candidate and everything it started: its session, and (with root)
        every process of the slot's uid; return once none is left."""
        if not self.privileged:
            _kill(-pid)
            _kill(pid)
            return
        for attempt in range(2000):
            victims = [p for p in _processes_of_uid(self.uid) if _alive(p)]
            if not victims:
                return
            for victim in victims:
                _kill(victim)
            if attempt:
                time.sleep(0.0005)  # SIGKILLed processes take a moment to go
        raise RuntimeError(f"sandbox uid {self.uid}: processes survive SIGKILL")


def _claim_uid() -> tuple[int, int]:
    for slot in range(UID_SLOTS):
        fd = os.open(f"/tmp/evalpack-sandbox-uid-{slot}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return UID_BASE + slot, fd
        except OSError:
            os.close(fd)
    raise RuntimeError("no free sandbox uid")


def _processes_of_uid(uid: int) -> list[int]:
    return _processes_of_uids(range(uid, uid + 1))


def _processes_of_uids(uids: range) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid in uids:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def sandbox_processes() -> list[int]:
    """Live processes running under any sandbox uid (none, between jobs)."""
    pids = _processes_of_uids(range(UID_BASE, UID_BASE + UID_SLOTS))
    return [pid for pid in pids if _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


_SLOT: _Slot | None = None


def _slot() -> _Slot:
    global _SLOT
    if _SLOT is None or _SLOT.owner != os.getpid() or _SLOT.zygote.poll() is not None:
        _SLOT = _Slot()
    return _SLOT


class CandidateFailure(Exception):
    """The candidate raised, exited, sent something that is not plain data, or ran out of
    time; `outcome` says which."""

    def __init__(self, outcome: str, reason: str):
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason


class _Proxy:
    """Stands in for the candidate's function on the trusted side."""

    def __init__(self, channel: socket.socket, deadline: float):
        self.channel, self.deadline = channel, deadline

    def call(self, args, kwargs):
        try:
            self.channel.sendall(encode_message([list(args), kwargs]))
        except NotPlainData as exc:
            raise CandidateFailure("error", f"test passed non-plain data: {exc}") from None
        except OSError:
            raise CandidateFailure("killed", "candidate process is gone") from None
        reply = self.receive()
        if "error" in reply:
            name, text = reply["error"]
            raise _as_exception(name, text)
        return reply["result"]

    def receive(self) -> dict:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise CandidateFailure("timeout", "time limit")
        self.channel.settimeout(remaining)
        try:
            return receive_message(self.channel)
        except TimeoutError:
            raise CandidateFailure("timeout", "time limit") from None
        except EOFError:
            raise CandidateFailure("killed", "candidate process exited or was killed") from None
        except (NotPlainData, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise CandidateFailure("error", f"candidate sent non-plain data: {exc}") from None


def _as_exception(name: str, text: str) -> BaseException:
    """The candidate's exception, as a builtin exception of the same name where one exists
    (tests may expect e.g. ValueError), else a CandidateFailure."""
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        return builtin(f"[candidate] {text}")
    if name == "SystemExit":
        return CandidateFailure("error", "candidate raised SystemExit")
    return CandidateFailure("error", f"candidate raised {name}: {text}")


def _drain(fd: int, keep: bytearray) -> None:
    while chunk := os.read(fd, 1 << 16):
        if len(keep) < OUTPUT_CAP:
            keep += chunk[: OUTPUT_CAP - len(keep)]
    os.close(fd)


def run_job(job: Job) -> Verdict:
    """One job, in the calling (trusted worker) process. Prefer `run_jobs`."""
    slot = _slot()
    start = time.monotonic()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    output_r, output_w = os.pipe()
    output = bytearray()
    pid = slot.spawn(job, theirs, output_w)
    theirs.close()
    os.close(output_w)
    reader = threading.Thread(target=_drain, args=(output_r, output), daemon=True)
    reader.start()
    proxy = _Proxy(ours, start + job.timeout)
    try:
        verdict = _run_test(job, proxy)
    finally:
        slot.sweep(pid)
        ours.close()
        reader.join(1)
    verdict.seconds = time.monotonic() - start
    verdict.output = output.decode("utf-8", "replace")
    return verdict


def _run_test(job: Job, proxy: _Proxy) -> Verdict:
    try:
        ready = proxy.receive()
        if "error" in ready:
            name, text = ready["error"]
            return Verdict(False, "error", f"program failed to load: {name}: {text}", 0.0)
        namespace: dict = {"__name__": "__trusted_test__"}
        exec(compile(job.trusted_prelude, "<prelude>", "exec"), namespace)  # noqa: S102
        namespace[job.entry_point] = lambda *args, **kwargs: proxy.call(args, kwargs)
        exec(compile(job.test, "<test>", "exec"), namespace)  # noqa: S102 (trusted test)
    except CandidateFailure as exc:
        return Verdict(False, exc.outcome, exc.reason, 0.0)
    except AssertionError as exc:
        return Verdict(False, "failed", f"assertion failed {exc}".strip(), 0.0)
    except Exception as exc:  # noqa: BLE001 (the candidate's exception, re-raised by the proxy)
        return Verdict(False, "failed", f"{type(exc).__name__}: {str(exc)[:200]}", 0.0)
    return Verdict(True, "passed", "all assertions held", 0.0)


def run_jobs(jobs: list[Job], workers: int | None = None) -> list[Verdict]:
    """Verdicts for `jobs`, in order, run in parallel over all cores."""
    if not jobs:
        return []
    hard_bound = max(job.timeout for job in jobs) + 30.0
    verdicts = []
    for outcome in bounded_map(run_job, jobs, timeout=hard_bound, workers=workers):
        if outcome.status == "ok":
            verdicts.append(outcome.value)
        else:
            reason = outcome.error or "trusted worker exceeded the hard bound"
            verdicts.append(Verdict(False, "error", f"harness: {reason}", outcome.seconds))
    return verdicts


if __name__ == "__main__":
    zygote_main(int(sys.argv[1]), sys.argv[2] == "1")
