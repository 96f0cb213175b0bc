"""The untrusted side of `evalpack.execution`: a zygote interpreter that forks one sandboxed
candidate process per job. It never receives a test or an expected value.

    python -m evalpack.sandbox_zygote CONTROL_FD   # serve a pool slot
    python -m evalpack.sandbox_zygote probe        # print the isolation level this host allows

Set-up, once per zygote, as root (where root may not create namespaces, or without root, the
zygote falls back to "session+limits" and says so; if namespaces are granted but a later step
fails, it stops rather than run half-isolated):

* an empty network namespace (no interface but a down loopback) and a private mount namespace;
* a new root filesystem, entered with chroot: an empty tmpfs holding read-only, nosuid bind
  mounts of the runtime only (/usr, /etc, the Python installation and the venv, a handful of
  device nodes), a proc that shows no other uid's processes, and a scratch tmpfs at /tmp. The
  repository, the data, /root, /home and the host's /tmp, /run and /dev/shm do not exist in it.

Per job: /tmp is replaced by a fresh, size-capped tmpfs (so nothing a job wrote reaches the
next); the candidate is cloned into a new PID namespace, as its init, so that when it dies the
kernel kills every process it started, and into a new IPC namespace, so that no System V shared
memory or message queue outlives it; it then sets no_new_privs, drops to the slot's
unprivileged uid, takes its resource limits and runs the program.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import re
import resource
import signal
import socket
import sys

from evalpack.execution import (
    FILE_SIZE_LIMIT,
    MEMORY_LIMIT,
    OPEN_FILES_LIMIT,
    OUTPUT_CAP,
    PROCESS_LIMIT,
    SCRATCH_SIZE,
    encode_message,
    receive_message,
)

PRELOADED = ("math", "re", "collections", "itertools", "functools", "string", "typing",
             "heapq", "bisect", "hashlib", "statistics", "fractions", "decimal", "datetime",
             "random", "operator", "copy", "json")
FULL, FALLBACK = "namespaces+uid", "session+limits"
LEVEL_ENV = "EVALPACK_SANDBOX"  # "session+limits" forces the fallback (to test it as root)
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x08000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine)
ROOT = "/tmp/.sandbox-root"  # inside the zygote's private /tmp, never the host's
DEVICES = ("null", "zero", "full", "random", "urandom")
WORKDIR = "/tmp/work"

_libc = ctypes.CDLL(None, use_errno=True)
_python = ctypes.PyDLL(None, use_errno=True)  # calls keep the GIL, as around fork() in os.fork


def _check(result: int, what: str) -> int:
    """A libc call's result; OSError with errno when it reports failure (-1)."""
    if result < 0:
        raise OSError(ctypes.get_errno(), what)
    return result


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           options: str = "") -> None:
    encoded = [s.encode() if s else None for s in (source, target, fstype, options)]
    _check(_libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]), f"mount {target}")


# ---------------------------------------------------------------- the root filesystem


def _runtime_paths() -> list[str]:
    """What a candidate may see: the system runtime and this Python (base and venv)."""
    paths = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
             sys.base_prefix, sys.prefix]
    return [p for p in dict.fromkeys(paths) if os.path.lexists(p)]


def _bind_readonly(source: str, target: str) -> None:
    _mount(source, target, None, MS_BIND | MS_REC)
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _place(source: str, root: str) -> None:
    """Reproduce `source` (a symlink, a directory or a device) at the same path under root."""
    target = root + source
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.islink(source):
        os.symlink(os.readlink(source), target)
    elif os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
        _bind_readonly(source, target)
    else:  # a device node: bind it onto an empty file, keeping it usable
        open(target, "w").close()
        _mount(source, target, None, MS_BIND)


def _mount_proc(target: str) -> None:
    """A proc of its own where each proc mount has its own options (Linux 5.8+): hidepid
    hides every process of another uid, so a candidate sees neither the harness's nor the
    host's command lines and environments. On older kernels hidepid would change the host's
    /proc too, so the host's is bound read-only instead."""
    release = tuple(int(part) for part in re.findall(r"\d+", os.uname().release)[:2])
    if release >= (5, 8):
        _mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")
    else:
        _bind_readonly("/proc", target)


def _build_root() -> None:
    """The minimal read-only root, built in the zygote's private mount namespace; chroot."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700")
    os.mkdir(ROOT)
    _mount("tmpfs", ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for path in _runtime_paths():
        _place(path, ROOT)
    for name in DEVICES:
        _place(f"/dev/{name}", ROOT)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"),
                         ("shm", "/tmp")):
        os.symlink(target, f"{ROOT}/dev/{name}")
    os.makedirs(ROOT + "/proc")
    _mount_proc(ROOT + "/proc")
    os.makedirs(ROOT + "/tmp")
    _mount(None, ROOT, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    os.chroot(ROOT)
    os.chdir("/")


def _fresh_scratch(uid: int) -> None:
    """Replace /tmp by an empty tmpfs and make the job's working directory in it."""
    if os.path.ismount("/tmp"):
        _check(_libc.umount2(b"/tmp", MNT_DETACH), "umount /tmp")
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={SCRATCH_SIZE},nr_inodes=4096,mode=1777")
    os.mkdir(WORKDIR, 0o700)
    os.chown(WORKDIR, uid, uid)


def _clone_into_new_namespaces() -> int:
    """os.fork(), except that the child is init of a new PID namespace (pid 1 there) and has
    its own System V IPC namespace (its shared memory and message queues die with it). Like
    os.fork it holds the GIL across the call and runs the interpreter's fork hooks (so that,
    e.g., `random` is reseeded in the child)."""
    _python.PyOS_BeforeFork()
    pid = _python.syscall(SYS_CLONE, CLONE_NEWPID | CLONE_NEWIPC | signal.SIGCHLD,
                          0, 0, 0, 0)
    if pid == 0:
        _python.PyOS_AfterFork_Child()
    else:
        _python.PyOS_AfterFork_Parent()
    return _check(pid, "clone")


# ---------------------------------------------------------------- the candidate


def _close_socket_layer() -> None:
    """Fallback when no network namespace can be had: no new sockets from Python."""
    def refuse(*args, **kwargs):
        raise OSError("network access is disabled in the sandbox")

    socket.socket = refuse  # type: ignore[misc]
    socket.create_connection = refuse  # type: ignore[assignment]


def _limit_resources(cpu_seconds: int) -> None:
    for limit, value in ((resource.RLIMIT_AS, MEMORY_LIMIT), (resource.RLIMIT_CPU, cpu_seconds),
                         (resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT),
                         (resource.RLIMIT_NOFILE, OPEN_FILES_LIMIT),
                         (resource.RLIMIT_NPROC, PROCESS_LIMIT), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(limit, (value, value))


class _CappedOutput(io.TextIOBase):
    """sys.stdout / sys.stderr of a candidate: the first OUTPUT_CAP bytes go to the capture
    file, the rest is dropped, so a chatty honest program neither blocks nor fails."""

    def __init__(self, fd: int):
        self.fd, self.room = fd, OUTPUT_CAP

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")[: self.room]
        if data:
            self.room -= os.write(self.fd, data)
        return len(text)


def _enter_candidate(channel: socket.socket, output_fd: int, request: dict, full: bool) -> None:
    """Turn this freshly forked process into the sandboxed candidate (irreversibly)."""
    os.setsid()
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    sys.stdout = sys.stderr = _CappedOutput(1)
    os.closerange(3, channel.fileno())
    os.closerange(channel.fileno() + 1, 1 << 16)
    workdir = WORKDIR if full else request["workdir"]
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8"})
    if full:
        uid = request["uid"]
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    else:
        _close_socket_layer()
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    _limit_resources(request["cpu_seconds"])


def _serve_candidate(channel: socket.socket, program: str, entry_point: str) -> None:
    """Run the program, then answer calls of `entry_point` with plain data until killed."""
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
            message = encode_message({"result": function(*args, **kwargs)})
        except BaseException as exc:  # noqa: BLE001 (SystemExit included: a failure)
            message = encode_message({"error": _describe(exc)})
        channel.sendall(message)


def _describe(exc: BaseException) -> list[str]:
    return [type(exc).__name__, str(exc)[:300]]


# ---------------------------------------------------------------- the zygote


def _set_up() -> str:
    """Enter full isolation where this host allows it; the level reached."""
    for module in PRELOADED:
        __import__(module)
    if (os.environ.get(LEVEL_ENV) == FALLBACK or os.geteuid() != 0 or SYS_CLONE is None
            or _libc.unshare(CLONE_NEWNS | CLONE_NEWNET) != 0):
        return FALLBACK
    _build_root()  # from here on a failure is fatal: never a half-isolated zygote
    _fresh_scratch(0)
    return FULL


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _spawn(request: dict, fds: list[int], level: str) -> int:
    full = level == FULL
    if full:
        _fresh_scratch(request["uid"])
    pid = _clone_into_new_namespaces() if full else os.fork()
    if pid == 0:
        channel = socket.socket(fileno=fds[0])
        try:
            _enter_candidate(channel, fds[1], request, full)
            _serve_candidate(channel, request["program"], request["entry_point"])
        finally:
            os._exit(0)
    return pid


def serve(control: socket.socket) -> None:
    """Answer spawn requests: fork a candidate, send back its pid and a pidfd for it. The
    trusted side kills it and waits for it through the pidfd; children are reaped here."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    level = _set_up()
    control.sendall(json.dumps({"isolation": level}).encode())
    while True:
        try:
            marker, fds, _, _ = socket.recv_fds(control, 1, 2)
            if not marker:
                return
            request = receive_message(control)
        except (OSError, EOFError):
            return
        _reap()
        pid = _spawn(request, fds, level)
        pidfd = os.pidfd_open(pid)
        for fd in fds:
            os.close(fd)
        socket.send_fds(control, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)


if __name__ == "__main__":
    if sys.argv[1] == "probe":
        print(_set_up())
    else:
        serve(socket.socket(fileno=int(sys.argv[1])))
