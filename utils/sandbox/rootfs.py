"""The zygote's view of the machine (full isolation only; root, in its own mount namespace).

* a new root filesystem, entered with chroot: an empty tmpfs holding read-only, nosuid bind
  mounts of the in-memory view of the runtime (`view`: the interpreter, the standard library,
  numpy and the libraries they load, importable but not writable, and never out of the page
  cache), a handful of device nodes, a proc that shows no other uid's processes, and a scratch
  tmpfs at /tmp. The repository, the data, /root, /home, /sys and the host's /tmp, /run and
  /dev/shm do not exist in it. The whole runtime (/usr, /etc, the Python installation and the
  venv) waits under FULL for full-runtime jobs, and every other candidate detaches it
  (`runtime`); without a view, the root shows the whole runtime instead; with a held runtime
  (`held`: the view and more, in memory) the root shows it alone, and nothing waits under FULL;
* per job, /tmp is replaced by a fresh, size-capped tmpfs, so nothing a job wrote reaches the
  next;
* `clone_into_new_namespaces`: the fork that makes a candidate init of its own PID namespace
  (when it dies the kernel kills every process it started) with its own System V IPC and, for
  full-runtime jobs, its own network namespace with loopback only.
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import re
import signal
import socket
import struct
import sys

from .limits import LISTEN_BACKLOG, SCRATCH_SIZE, TCP_RECEIVE_BUFFER

CLONE_NEWNS, CLONE_NEWIPC = 0x00020000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET, CLONE_PIDFD = 0x20000000, 0x40000000, 0x00001000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK = 0x8914, 0x1, 0x8
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine)
ROOT = "/tmp/.sandbox-root"  # inside the zygote's private /tmp, never the host's
DEVICES = ("null", "zero", "full", "random", "urandom")
WORKDIR = "/tmp/work"
# Runtime paths under /tmp (a venv in a checkout under /tmp, as a CI clone may be) would be
# hidden by the scratch /tmp: they are staged read-only under STAGED and bound back into every
# job's fresh /tmp at their own path.
STAGED = "/.runtime"
_under_tmp: list[str] = []
VIEW = "/tmp/.sandbox-view"  # where the zygote binds the in-memory view, before its chroot
FULL = "/.full"  # the whole installation, for full-runtime jobs only (see `runtime`)
_full: list[str] = []  # what FULL holds, each bound at its own path for such a job

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int]
libc.mmap.argtypes += [ctypes.c_long]
MAP_FAILED = ctypes.c_void_p(-1).value
_held_files: list[tuple[int, int]] = []  # (address, size) of each file `hold_mapped_files` holds
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


def runtime_paths() -> list[str]:
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


def _place(source: str, target: str) -> None:
    """Reproduce `source` (a symlink, a directory or a device) at `target`."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.islink(source) and not source.startswith("/proc/self/fd/"):
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


def build_root(view_fd: int | None = None, whole: bool = False) -> None:
    """The minimal read-only root, built in the zygote's private mount namespace; chroot.
    With `view_fd` (the trusted side's in-memory view, see `view`) the root shows the view,
    and the whole installation waits under FULL for full-runtime jobs (`runtime`), unless the
    view is `whole` (a held runtime, `held`: nothing on disk is shown to any candidate)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    paths = runtime_paths()
    # held open (O_PATH) so that they can still be bound once the host's /tmp is hidden
    held = {p: f"/proc/self/fd/{os.open(p, os.O_PATH)}" for p in paths if _is_under_tmp(p)}
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700")
    os.mkdir(ROOT)
    _mount("tmpfs", ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    if view_fd is None or not _attach_view(view_fd):
        shown = [(held.get(path, path), path) for path in paths]
    else:
        top = [f"/{name}" for name in os.listdir(VIEW) if name != "tmp"]
        below = os.listdir(VIEW + "/tmp") if os.path.isdir(VIEW + "/tmp") else []
        shown = [(VIEW + path, path) for path in top + [f"/tmp/{name}" for name in below]]
        if not whole:
            _wait_under_full(paths, held)
    for source, path in shown:
        if _is_under_tmp(path):
            _place(source, ROOT + STAGED + path)
            _under_tmp.append(path)
        else:
            _place(source, ROOT + path)
    for name in DEVICES:
        _place(f"/dev/{name}", f"{ROOT}/dev/{name}")
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


def _wait_under_full(paths: list[str], held: dict[str, str]) -> None:
    """The whole installation, bound read-only under FULL for full-runtime jobs (`runtime`)."""
    os.mkdir(ROOT + FULL)
    _mount("tmpfs", ROOT + FULL, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700")
    for path in paths:
        source = held.get(path, path)  # (the host's /tmp is hidden by now: use what was held)
        if os.path.isdir(source) and not os.path.islink(path):
            _place(source, ROOT + FULL + path)
            _full.append(path)


def map_memory(size: int, prot: int, flags: int, fd: int, what: str) -> int:
    """libc's mmap of `size` bytes where the kernel chooses (of `fd` from its start, or -1);
    the address, or OSError naming `what`."""
    address = libc.mmap(None, size, prot, flags, fd, 0)
    if address in (None, MAP_FAILED):
        raise OSError(ctypes.get_errno(), f"mmap {what}")
    return address


def hold_mapped_files() -> None:
    """Every file this zygote has mapped from the host's disk (its interpreter, reachable from a
    candidate as /proc/self/exe too, the C libraries and extension modules it loaded before it
    entered its root, the locale), mapped whole and locked in memory while it lives. Its
    candidates inherit those mappings: a page of them that could be evicted would show another
    job's reads of the same file (major faults, fault-around), as the view's files would not
    (`view`). Called before the zygote joins its slot's memory group: what it loads is charged
    to the caller's, as the view's pages are."""
    with open("/proc/self/maps") as maps:
        entries = [line.rstrip("\n").split(maxsplit=5) for line in maps]
    paths = {
        e[5]
        for e in entries
        if len(e) == 6 and e[5].startswith("/") and e[4] != "0" and not e[5].endswith(" (deleted)")
    }
    for path in sorted(paths):
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            at = map_memory(size, mmap.PROT_READ, mmap.MAP_SHARED, fd, path)
            _held_files.append((at, size))
            check(libc.mlock(ctypes.c_void_p(at), ctypes.c_size_t(size)), f"mlock {path}")
        finally:
            os.close(fd)


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


def _attach_view(view_fd: int) -> bool:
    """Bind the view at VIEW; False where the kernel refuses a detached mount as the source
    of a bind (then the root shows the whole installation, as without a view)."""
    os.mkdir(VIEW)
    try:
        _bind_readonly(f"/proc/self/fd/{view_fd}", VIEW)
    except OSError:
        return False
    finally:
        os.close(view_fd)
    return True


def show_full_runtime() -> None:
    """The whole installation (FULL) bound read-only over the view, each path at its own: in a
    full-runtime candidate (`runtime`), and in a zygote that serves full-runtime jobs only, so
    that the modules it loads before forking (its prelude's) come from where its candidates
    find them. There FULL stays, for the candidates' `runtime`; paths under /tmp go with the
    zygote's scratch /tmp at its first job, and each candidate binds them again."""
    for path in _full:
        if _is_under_tmp(path):
            os.makedirs(path, exist_ok=True)
        if os.path.isdir(path):
            _bind_readonly(FULL + path, path)


def runtime(full: bool) -> None:
    """In a freshly cloned candidate (still root, in its own mount namespace), where the root
    is the in-memory view: a full-runtime job gets the whole installation bound over it
    (BigCodeBench's libraries; its pages are the host's page cache, not pinned); then FULL is
    detached, so that no candidate can reach it."""
    if not _full:
        return
    if full:
        show_full_runtime()
    check(libc.umount2(FULL.encode(), MNT_DETACH), f"umount {FULL}")


def clone_into_new_namespaces(network: bool = False) -> tuple[int, int]:
    """os.fork(), except that the child is init of a new PID namespace (pid 1 there), with its
    own System V IPC namespace (its shared memory and message queues die with it) and its own
    mount namespace, in which it mounts a proc of its PID namespace (`own_proc`); with
    `network`, also its own network namespace (`loopback_up` brings its `lo` up). Like os.fork
    it holds the GIL across the call and runs the interpreter's fork hooks (so that, e.g.,
    `random` is reseeded in the child). Returns (pid, a pidfd for it) in the parent, (0, -1)
    in the child: the pidfd comes from the clone itself (CLONE_PIDFD, which the seccomp
    filter allows only with a new PID namespace, so never to a candidate)."""
    flags = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS | CLONE_PIDFD | signal.SIGCHLD
    flags |= CLONE_NEWNET if network else 0
    pidfd = ctypes.c_int(-1)
    _python.PyOS_BeforeFork()
    pid = _python.syscall(SYS_CLONE, flags, 0, ctypes.byref(pidfd), 0, 0)  # (parent_tid)
    if pid == 0:
        _python.PyOS_AfterFork_Child()
    else:
        _python.PyOS_AfterFork_Parent()
    return check(pid, "clone"), pidfd.value


def loopback_up() -> None:
    """In a candidate cloned with its own network namespace (still root): its loopback
    interface up, the only one it has. Nothing it binds or leaves there (a port in TIME_WAIT)
    outlives it: the namespace goes when its last process does."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", IFF_UP | IFF_LOOPBACK))


def bound_listen_queues() -> None:
    """In a candidate cloned with its own network namespace (still root, before `own_proc`
    hides /proc/sys): the namespace's limits on connections no process accepted, which cgroups
    v1 never charge to the job (`limits.LISTEN_BACKLOG`): listen() backlogs and pending
    handshakes capped, and the default receive buffer, the one such a connection keeps, small
    (autotuning raises it for sockets a program reads, as on the host)."""
    with open("/proc/sys/net/ipv4/tcp_rmem") as fh:
        low, _, high = fh.read().split()
    for name, value in (
        ("core/somaxconn", LISTEN_BACKLOG),
        ("ipv4/tcp_max_syn_backlog", LISTEN_BACKLOG),
        ("ipv4/tcp_rmem", f"{low} {TCP_RECEIVE_BUFFER} {high}"),
    ):
        with open(f"/proc/sys/net/{name}", "w") as fh:
            fh.write(str(value))


def own_proc() -> None:
    """In a freshly cloned candidate (still root): a proc of its own PID namespace over the
    zygote's, so that it sees its own processes only, numbered from 1, never a host PID (the
    host's PID counter would otherwise carry information from job to job); `subset=pid`
    leaves out the host-wide files (/proc/stat, /proc/loadavg, /proc/sys ...: fork counts,
    last PIDs, load) where the kernel allows it (Linux 5.8+)."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if libc.mount(b"proc", b"/proc", b"proc", flags, b"hidepid=invisible,subset=pid") != 0:
        _mount("proc", "/proc", "proc", flags)
