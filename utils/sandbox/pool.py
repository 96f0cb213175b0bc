"""One pool slot per trusted worker process: its zygote, its sandbox uid and its cgroup. The
slot's worker, its zygote and their candidates share one CPU (they take turns: a test waits
for its candidate's answers), so that handing a message over never wakes another CPU.

A slot is replaced, zygote and all, whenever anything goes wrong between it and its zygote
(a failed send, a malformed answer, a dead zygote), so a half-used zygote never serves another
job. A request is encoded and size-checked before any byte of it is sent. A slot's zygote runs
its jobs' `zygote_prelude` (trusted) once, at set-up: a job with another prelude gets a new slot.
"""

from __future__ import annotations

import fcntl
import json
import marshal
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
from collections import OrderedDict

from . import cgroups, counters, held, view
from .limits import CANDIDATE_ENV, KILL_GRACE, LEVEL_ENV, MAX_MESSAGE, UID_BASE, UID_SLOTS
from .messages import encode_message, remember
from .protocol import NotPlainData, to_wire

# The zygote loads evalpack from the folder this process loaded it from, however it was found
# (installed, editable, or through PYTHONPATH, which `python -I` and its fresh environment drop).
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_BOOT = """import importlib.util, runpy, sys
where = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location(
    "evalpack", where + "/__init__.py", submodule_search_locations=[where])
sys.modules["evalpack"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sys.modules["evalpack"])
runpy.run_module("evalpack.sandbox.zygote", run_name="__main__", alter_sys=True)
"""


def _zygote(*args: str) -> list[str]:
    """The zygote's command line; EVALPACK_SANDBOX travels as an argument (its environment is
    CANDIDATE_ENV, built fresh: nothing of the user's reaches it)."""
    level = os.environ.get(LEVEL_ENV, "auto")
    return [sys.executable, "-I", "-c", _BOOT, PACKAGE, level, *args]


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][-300:] if lines else "no error message"


def probe() -> str:
    """The isolation the zygote's own set-up reaches on this host (see `zygote.State`)."""
    result = subprocess.run(
        _zygote("probe"), capture_output=True, text=True, check=False, env=dict(CANDIDATE_ENV)
    )
    if result.returncode != 0:
        raise RuntimeError(f"sandbox set-up failed: {_last_line(result.stderr)}")
    return result.stdout.strip()


class Slot:
    """A zygote serving this process, with the slot's uid (held by a lock file), that ran
    `prelude` at set-up (see `zygote`) and shows its candidates the held runtime of `folders`
    (`Job.held_runtime`) or, with none, the in-memory view."""

    def __init__(self, prelude: str = "", folders: tuple[str, ...] = ()) -> None:
        self.owner = os.getpid()
        self.prelude = prelude
        self.folders = folders
        self._left = None
        self.uid, self._lock = _claim_uid()
        self._affinity = _pin(self.uid)  # the CPUs this process had, given back by close()
        self._plans: OrderedDict[str, None] = OrderedDict()  # the zygote's, mirrored
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.control = ours
        # what candidates can read, in memory (`view`, `held`), if built; a held runtime is
        # the whole of it (without one, full-runtime jobs read the installation on disk)
        whole = held.current(folders) if folders else None
        shown = view.current() if whole is None else whole
        shown_fd = "-" if shown is None else str(shown)
        with tempfile.TemporaryFile() as errors:  # the zygote's stderr: why a set-up failed
            self.zygote = subprocess.Popen(
                _zygote(str(theirs.fileno()), str(self.uid), shown_fd, prelude, str(bool(whole))),
                pass_fds=[theirs.fileno()] + ([] if shown is None else [shown]),
                stdin=subprocess.DEVNULL,
                stderr=errors,
                close_fds=True,
                env=dict(CANDIDATE_ENV),
            )
            theirs.close()
            hello = self.control.recv(4096)
            if not hello:
                self.close()
                errors.seek(0)
                reason = _last_line(errors.read(1 << 16).decode("utf-8", "replace"))
                raise RuntimeError(f"the sandbox zygote failed to set up: {reason}")
        hello = json.loads(hello)
        self.isolation: str = hello["isolation"]
        group = hello["cgroup"]
        self.group = group and cgroups.SlotGroup(group["version"], group["dirs"])
        self.cpu_clock = self.group and cgroups.cpu_clock(self.group)
        self._ooms = self.group and cgroups.oom_kills(self.group)
        self._left = self.group and cgroups.enter_cpu(self.group)
        self.worker_in_group = bool(self._left)

    def memory_killed(self) -> bool:
        """Whether the OOM killer has killed in the slot's group since the last call."""
        if not self.group:
            return False
        kills, self._ooms = self._ooms, cgroups.oom_kills(self.group)
        return self._ooms > kills

    @property
    def full(self) -> bool:
        return self.isolation.startswith("namespaces+uid")

    def healthy(self) -> bool:
        return self.owner == os.getpid() and self.zygote.poll() is None

    def spawn(
        self,
        request: dict,
        channel_end: socket.socket,
        output: int,
        plan: tuple[str, list] | None = None,
    ) -> tuple[int, int]:
        """Start a candidate, with `plan` (key, arguments of the planned calls) if any; its pid
        and a pidfd for it. `NotPlainData` (nothing sent) for a request over the message cap;
        any other failure closes the slot and re-raises. The job's data (program, entry point,
        plan) travels after a header with its sizes, so that the zygote receives it into
        memory it unmaps once the candidate is forked (see `zygote`)."""
        job = to_wire(
            {"program": request.pop("program"), "entry_point": request.pop("entry_point")}
        )
        calls = self._plan_bytes(plan)
        if max(len(job), len(calls)) > MAX_MESSAGE:
            raise NotPlainData(f"program or plan exceeds {MAX_MESSAGE} bytes")
        header = encode_message(
            {**request, "job": len(job), "calls": len(calls), "calls_key": plan[0] if plan else ""}
        )
        if plan:
            remember(self._plans, plan[0])
        try:
            socket.send_fds(self.control, [b"\0"], [channel_end.fileno(), output])
            self.control.sendall(header)
            self.control.sendall(job)
            self.control.sendall(calls)
            answer, fds, _, _ = socket.recv_fds(self.control, 4096, 1)
            return json.loads(answer)["pid"], fds[0]
        except BaseException:
            self.close()
            raise

    def _plan_bytes(self, plan: tuple[str, list] | None) -> bytes:
        """The plan's arguments to send: none where the zygote keeps them from an earlier job
        (or there is no plan)."""
        if plan is None or plan[0] in self._plans:
            return b""
        # plain data (checked by the harness), to our own zygote: marshal is exact and quick
        return marshal.dumps(plan[1])

    def kill(self, pid: int, pidfd: int) -> None:
        """SIGKILL the candidate and return once it is gone. With full isolation it is init of
        its PID namespace, so the kernel has killed all its descendants before that."""
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            if not self.full:
                os.killpg(pid, signal.SIGKILL)  # its session's group; `setsid` children escape
        except ProcessLookupError:
            pass
        readable, _, _ = select.select([pidfd], [], [], KILL_GRACE)
        os.close(pidfd)
        if not readable:
            self.close()
            raise RuntimeError(f"candidate {pid} survived SIGKILL for {KILL_GRACE:g}s")
        try:  # the inode counters' places made fresh before the next job's (`counters`)
            self.control.sendall(counters.SCRAMBLE)
            if self.control.recv(1) != counters.SCRAMBLE:
                raise EOFError("the zygote did not move the inode counters")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Kill the zygote (its candidates die with it: parent-death signal) and free the uid."""
        if self._lock < 0:
            return
        if self.zygote.poll() is None:
            self.zygote.kill()
        self.zygote.wait()
        self.control.close()
        os.close(self._lock)
        self._lock = -1
        if self._left:
            cgroups.return_to(self._left)
        if self.owner == os.getpid():
            os.sched_setaffinity(0, self._affinity)


def _pin(uid: int) -> set[int]:
    """This worker (and the zygote it starts) onto one of the CPUs it may use, by slot; the
    CPUs it had."""
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {sorted(cpus)[(uid - UID_BASE) % len(cpus)]})
    return cpus


# Each sandbox uid's lock file, in a folder of their own: machine-wide (every process on this
# machine claims its uid there, whatever its TMPDIR), so at a fixed path. Versions of the pack
# before the folder held them loose in /tmp (LEGACY): while one of those still runs on the
# machine, a uid it holds there is taken too (a transition; nothing creates those files now).
LOCKS = "/tmp/evalpack-sandbox.locks"
LEGACY = "/tmp/evalpack-sandbox-uid-{}.lock"


def _lock_path(uid: int) -> str:
    return f"{LOCKS}/uid-{uid - UID_BASE}.lock"


def _claim_uid() -> tuple[int, int]:
    os.makedirs(LOCKS, mode=0o700, exist_ok=True)
    for uid in range(UID_BASE, UID_BASE + UID_SLOTS):
        if _taken(LEGACY.format(uid - UID_BASE)):
            continue
        fd = os.open(_lock_path(uid), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return uid, fd
        except OSError:
            os.close(fd)
    raise RuntimeError("no free sandbox uid")


def _held(uid: int) -> bool:
    """Whether a live slot (of any process on this machine) holds `uid`."""
    return _taken(_lock_path(uid)) or _taken(LEGACY.format(uid - UID_BASE))


def _taken(path: str) -> bool:
    """Whether a live process holds the lock file at `path` (none there: no)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the lock if we took it
    return False


_SLOT: Slot | None = None


def current(prelude: str = "", folders: tuple[str, ...] = ()) -> Slot:
    """This process's slot for jobs whose zygote prelude is `prelude` and held runtime
    `folders`, started (or replaced: broken, or set up for other jobs) when needed."""
    global _SLOT
    fits = _SLOT is not None and (_SLOT.prelude, _SLOT.folders) == (prelude, folders)
    if _SLOT is not None and not (_SLOT.healthy() and fits):
        if _SLOT.owner == os.getpid():
            _SLOT.close()
        _SLOT = None
    if _SLOT is None:
        _SLOT = Slot(prelude, folders)
    return _SLOT


def close() -> None:
    """Close this process's slot, if it has one (tests; workers simply exit)."""
    global _SLOT
    if _SLOT is not None and _SLOT.owner == os.getpid():
        _SLOT.close()
    _SLOT = None


def sandbox_processes() -> list[int]:
    """Live processes under a sandbox uid that no live slot holds: leftovers of finished jobs
    (there are none: a candidate's processes die with it). Processes of slots still at work,
    this machine's other runs included, are not leftovers."""
    uids = range(UID_BASE, UID_BASE + UID_SLOTS)
    found = []
    for entry in os.listdir("/proc"):
        try:
            uid = os.stat(f"/proc/{entry}").st_uid if entry.isdigit() else -1
            if uid in uids and _alive(entry) and not _held(uid):
                found.append(int(entry))
        except OSError:
            continue
    return found


def _alive(pid: str) -> bool:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
