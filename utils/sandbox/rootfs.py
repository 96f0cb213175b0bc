"""The zygote's view of the machine (full isolation only; root, in its own mount namespace).

* a new root filesystem, entered with chroot: an empty tmpfs holding read-only, nosuid bind
  mounts of the runtime only (/usr, /etc, the Python installation and the venv, so numpy and
  the other installed packages are importable but not writable), a handful of device nodes, a
  proc that shows no other uid's processes, and a scratch tmpfs at /tmp. The repository, the
  data, /root, /home, /sys and the host's /tmp, /run and /dev/shm do not exist in it;
* per job, /tmp is replaced by a fresh, size-capped tmpfs, so nothing a job wrote reaches the
  next;
* `clone_into_new_namespaces`: the fork that makes a candidate init of its own PID namespace
  (when it dies the kernel kills every process it started) with its own System V IPC.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import sys

from .limits import SCRATCH_SIZE

CLONE_NEWNS, CLONE_NEWIPC = 0x00020000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine)
ROOT = "/tmp/.sandbox-root"  # inside the zygote's private /tmp, never the host's
DEVICES = ("null", "zero", "full", "random", "urandom")
WORKDIR = "/tmp/work"
# Runtime paths under /tmp (a venv in a checkout under /tmp, as a CI clone may be) would be
# hidden by the scratch /tmp: they are staged read-only under STAGED and bound back into every
# job's fresh /tmp at their own path.
STAGED = "/.runtime"
_under_tmp: list[str] = []

libc = ctypes.CDLL(None, use_errno=True)
_python = ctypes.PyDLL(None, use_errno=True)  # calls keep the GIL, as around fork() in os.fork


def check(result: int, what: str) -> int:
    """A libc call's result; OSError with errno when it reports failure (-1)."""
    if result < 0:
        raise OSError(ctypes.get_errno(), what)
    return result


def enter_namespaces() -> bool:
    """An empty network namespace and a private mount namespace for this process; False where
    the kernel refuses (not root, or no namespaces)."""
    return SYS_CLONE is not None and libc.unshare(CLONE_NEWNS | CLONE_NEWNET) == 0


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, options: str = ""
) -> None:
    encoded = [s.encode() if s else None for s in (source, target, fstype, options)]
    check(libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]), f"mount {target}")


def _runtime_paths() -> list[str]:
    """What a candidate may see: the system runtime and this Python (base and venv, and any
    other package folder on its path, e.g. one a `.pth` file adds; never a source checkout)."""
    paths = [
        "/usr",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/etc",
        os.path.realpath(sys.base_prefix),
        os.path.realpath(sys.prefix),
    ]
    paths += [
        os.path.realpath(p)
        for p in sys.path
        if os.path.basename(p) in ("site-packages", "dist-packages") and os.path.isdir(p)
    ]
    kept = [p for p in dict.fromkeys(paths) if os.path.lexists(p)]
    # a folder already inside another one is seen through it
    return [p for p in kept if not any(p.startswith(q + "/") for q in kept if q != p)]


def _is_under_tmp(path: str) -> bool:
    return path == "/tmp" or path.startswith("/tmp/")


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


def build_root() -> None:
    """The minimal read-only root, built in the zygote's private mount namespace; chroot."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    paths = _runtime_paths()
    # held open (O_PATH) so that they can still be bound once the host's /tmp is hidden
    held = {p: os.open(p, os.O_PATH) for p in paths if _is_under_tmp(p)}
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700")
    os.mkdir(ROOT)
    _mount("tmpfs", ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for path in paths:
        if path in held:
            os.makedirs(ROOT + STAGED + path)
            fd = held.pop(path)
            _bind_readonly(f"/proc/self/fd/{fd}", ROOT + STAGED + path)
            os.close(fd)
            _under_tmp.append(path)
        else:
            _place(path, ROOT)
    for name in DEVICES:
        _place(f"/dev/{name}", ROOT)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("shm", "/tmp"),
    ):
        os.symlink(target, f"{ROOT}/dev/{name}")
    os.makedirs(ROOT + "/proc")
    _mount_proc(ROOT + "/proc")
    os.makedirs(ROOT + "/tmp")
    _mount(None, ROOT, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    os.chroot(ROOT)
    os.chdir("/")


def fresh_scratch(uid: int) -> None:
    """Replace /tmp by an empty tmpfs and make the job's working directory in it."""
    if os.path.ismount("/tmp"):
        check(libc.umount2(b"/tmp", MNT_DETACH), "umount /tmp")
    _mount(
        "tmpfs",
        "/tmp",
        "tmpfs",
        MS_NOSUID | MS_NODEV,
        f"size={SCRATCH_SIZE},nr_inodes=4096,mode=1777",
    )
    for path in _under_tmp:
        os.makedirs(path, 0o755, exist_ok=True)
        _bind_readonly(STAGED + path, path)
    os.mkdir(WORKDIR, 0o700)
    os.chown(WORKDIR, uid, uid)


def clone_into_new_namespaces() -> int:
    """os.fork(), except that the child is init of a new PID namespace (pid 1 there), with its
    own System V IPC namespace (its shared memory and message queues die with it) and its own
    mount namespace, in which it mounts a proc of its PID namespace (`own_proc`). Like os.fork
    it holds the GIL across the call and runs the interpreter's fork hooks (so that, e.g.,
    `random` is reseeded in the child)."""
    flags = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS | signal.SIGCHLD
    _python.PyOS_BeforeFork()
    pid = _python.syscall(SYS_CLONE, flags, 0, 0, 0, 0)
    if pid == 0:
        _python.PyOS_AfterFork_Child()
    else:
        _python.PyOS_AfterFork_Parent()
    return check(pid, "clone")


def own_proc() -> None:
    """In a freshly cloned candidate (still root): a proc of its own PID namespace over the
    zygote's, so that it sees its own processes only, numbered from 1, never a host PID (the
    host's PID counter would otherwise carry information from job to job); `subset=pid`
    leaves out the host-wide files (/proc/stat, /proc/loadavg, /proc/sys ...: fork counts,
    last PIDs, load) where the kernel allows it (Linux 5.8+)."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if libc.mount(b"proc", b"/proc", b"proc", flags, b"hidepid=invisible,subset=pid") != 0:
        _mount("proc", "/proc", "proc", flags)
