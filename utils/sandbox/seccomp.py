"""The candidates' system-call filter (seccomp), built with libseccomp through `pyseccomp`.

The zygote compiles the filter (`build`) and installs it on itself (`install`) at the end of
its set-up, with no_new_privs; every candidate it forks inherits it, as does everything a
candidate starts, and no process can remove it. (Installing it once rather than per candidate
keeps the kernel from compiling a BPF program for every job.) So the filter also allows what
the zygote needs per job, `mount`/`umount2` for the fresh /tmp and the candidate's own proc, and
`clone` into new PID, IPC, mount and (full-runtime jobs) network namespaces: these need
CAP_SYS_ADMIN, which a candidate (an unprivileged uid that can create no user namespace) never
holds, so the kernel refuses them to candidates anyway.

Default: allow (Python, numpy and the standard library need a wide, version-dependent set of
calls; an allow list would break honest programs in ways no test would show). Denied, with the
error a program sees, are the calls below: each either keeps state beyond the job, reaches
outside the sandbox, or is kernel attack surface with no use in a test run. Calls of another
architecture's ABI (i386 `int 0x80`, x32) kill the process, so that no other numbering bypasses
the list. `pyseccomp` (MIT) is a pure-Python ctypes binding of the system's libseccomp
(Debian/Ubuntu `libseccomp2`); where either is missing there is no filter, and
`evalpack.execution.isolation()` says so.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket

DENIED: dict[str, tuple[tuple[str, ...], str]] = {
    "keyrings": (
        ("add_key", "keyctl", "request_key"),
        "a uid's kernel keyrings outlive the job: state passed from job to job",
    ),
    "other processes' memory": (
        ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"),
        "reading or steering another process",
    ),
    "kernel attack surface": (
        (
            "bpf",
            "perf_event_open",
            "userfaultfd",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
            "fanotify_init",
            "lookup_dcookie",
            "uselib",
        ),
        (
            "no use in a test; common in kernel exploits; io_uring "
            "would also open sockets past this filter"
        ),
    ),
    "namespaces and mounts": (
        (
            "unshare",
            "setns",
            "pivot_root",
            "chroot",
            "fsopen",
            "fsconfig",
            "fsmount",
            "fspick",
            "open_tree",
            "move_mount",
            "mount_setattr",
        ),
        "leaving or reshaping the sandbox's namespaces and root",
    ),
    "page-cache residency": (
        ("mincore", "cachestat", "io_setup", "io_submit", "sysinfo"),
        (
            "the page cache is shared by every job on the host: no call that "
            "tells whether a file's page is cached (Linux AIO could ask for "
            "RWF_NOWAIT reads), nor the host's free memory, which a job's "
            "memory pressure raises by evicting the host's own cache, after the job"
        ),
    ),
    "the system": (
        (
            "kexec_load",
            "kexec_file_load",
            "init_module",
            "finit_module",
            "delete_module",
            "reboot",
            "swapon",
            "swapoff",
            "acct",
            "quotactl",
            "syslog",
            "settimeofday",
            "clock_settime",
            "clock_adjtime",
            "adjtimex",
            "sethostname",
            "setdomainname",
            "iopl",
            "ioperm",
            "name_to_handle_at",
            "open_by_handle_at",
            "vhangup",
        ),
        ("host-wide state (most need capabilities a candidate lacks: defence in depth)"),
    ),
}
# Advice about a file's pages in the cache, ignored (the call succeeds and does nothing: it is
# advice), so that no job can evict a page another job loaded, or load one without reading it:
# fadvise and readahead entirely; madvise WILLNEED, COLD and PAGEOUT (REMOVE is refused: it is
# not advice). Reads that fail instead of waiting for a page not in the cache (preadv2 and
# pwritev2 with RWF_NOWAIT) are refused: they tell whether it was cached.
IGNORED_ADVICE = ("fadvise64", "fadvise64_64", "readahead")
MADV_WILLNEED, MADV_REMOVE, MADV_COLD, MADV_PAGEOUT = 3, 9, 20, 21
RWF_NOWAIT = 0x8
# clone() with any of these flags (new namespaces) is refused; clone3() passes its flags in
# memory a filter cannot read, so it answers ENOSYS and the C library falls back to clone().
NAMESPACE_FLAGS = (0x02000000, 0x04000000, 0x10000000, 0x00000080)
#                  NEWCGROUP, NEWUTS, NEWUSER, NEWTIME (NEWPID, NEWIPC, NEWNS, NEWNET: above)
FULL_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)  # inet: in a network ns
FALLBACK_FAMILIES = (socket.AF_UNIX,)  # no network namespace: no internet sockets at all
FAMILY_RANGE = 64  # families 0..63 are checked one by one; any larger value is refused
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2

# Issue 47's calls: each either only exposes a host-wide counter that jobs both move and read,
# changes how the job is scheduled, or keeps per-inode state shared with other jobs and the
# host. (The zygote, which makes none of these calls after set-up, gets each candidate's pidfd
# from the clone that makes it: CLONE_PIDFD is allowed with a new PID namespace only, which a
# candidate cannot make; without namespaces it calls `pidfd_open`, then allowed.)
COUNTER_DENIED: dict[str, tuple[tuple[str, ...], int, str]] = {
    "host-wide counters": (
        ("memfd_create",),
        errno.ENOSYS,
        (
            "a memfd's inode number and a pidfd's (`pidfd_open`, below) are host-wide counters "
            "one job moves and the next reads (programs fall back: a file in /tmp, waitpid)"
        ),
    ),
    "scheduling": (
        (
            "sched_setscheduler",
            "sched_setparam",
            "sched_setattr",
            "sched_setaffinity",
            "setpriority",
            "ioprio_set",
        ),
        errno.EPERM,
        (
            "a job at SCHED_IDLE or a low priority waits for the CPU, which the wall-clock "
            "backstop does not count: the job's class, priority and CPUs are the slot's"
        ),
    ),
    "file notifications": (
        ("inotify_init", "inotify_init1"),
        errno.ENOSYS,
        "watching files shared with other jobs (the view, the installation) shows what they open",
    ),
}
# Advisory locks taken by candidates are ignored (the call succeeds and locks nothing): a lock
# on a file every job can read (the view, the installation) is state another job or the host
# sees (flock, POSIX and open-file-description locks); a job's own files are its alone.
# Directory notifications (dnotify) are refused, as inotify.
IGNORED_LOCKS = (6, 7, 37, 38)  # fcntl F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW
F_NOTIFY = 1026
CLONE_PIDFD, NEW_PID = 0x1000, 0x20000000
# socket options that show host-wide counters: a socket's and a network namespace's cookie,
# and a peer's pidfd (whose inode number counts every process the host made)
SOL_SOCKET, SO_COOKIE, SO_PASSPIDFD, SO_NETNS_COOKIE, SO_PEERPIDFD = 1, 57, 76, 71, 77
# socket options that raise a socket's receive buffer, ignored (the call succeeds: buffer sizes
# are hints, and the kernel autotunes): a listener's buffer is what each connection it queues
# may hold, uncharged on cgroups v1 until accepted (`limits.LISTEN_BACKLOG`); SO_RCVBUFFORCE
# needs a capability no candidate has
SO_RCVBUF, SO_RCVLOWAT = 8, 18


def _binding():
    try:
        import pyseccomp
    except (ImportError, OSError, RuntimeError):  # no pyseccomp, or no libseccomp.so.2
        return None
    return pyseccomp


def available() -> bool:
    return _binding() is not None


def build(families: tuple[int, ...], zygote_clones: bool = False) -> bytes:
    """The compiled filter (BPF instructions) allowing new sockets of `families` only;
    `pidfd_open` refused too where the zygote clones candidates (`zygote_clones`)."""
    sc = _binding()
    deny = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(sc.ALLOW)
    flt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    for names, _reason in DENIED.values():
        for name in names:
            _add(flt, deny, name)
    for flag in NAMESPACE_FLAGS:
        _add(flt, deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    _add(flt, sc.ERRNO(errno.ENOSYS), "clone3")
    ignore = sc.ERRNO(0)
    for name in IGNORED_ADVICE:
        _add(flt, ignore, name)
    for advice in (MADV_WILLNEED, MADV_COLD, MADV_PAGEOUT):
        _add(flt, ignore, "madvise", sc.Arg(2, sc.EQ, advice))
    _add(flt, deny, "madvise", sc.Arg(2, sc.EQ, MADV_REMOVE))
    for call in ("preadv2", "pwritev2"):
        _add(flt, sc.ERRNO(errno.EOPNOTSUPP), call, sc.Arg(5, sc.MASKED_EQ, RWF_NOWAIT, RWF_NOWAIT))
    refuse = sc.ERRNO(errno.EAFNOSUPPORT)
    for call in ("socket", "socketpair"):
        # socket() reads its family as a 32-bit int: a value with high bits set is >= the range
        _add(flt, refuse, call, sc.Arg(0, sc.GE, FAMILY_RANGE))
        for family in range(FAMILY_RANGE):
            if family not in families:
                _add(flt, refuse, call, sc.Arg(0, sc.EQ, family))
    _add_counters_and_locks(sc, flt, zygote_clones)
    return _exported(flt)


def _add_counters_and_locks(sc, flt, zygote_clones: bool) -> None:
    """COUNTER_DENIED, CLONE_PIDFD without a new PID namespace, the socket options (counters
    refused, receive buffers ignored), the locks (ignored) and dnotify."""
    for names, error, _reason in COUNTER_DENIED.values():
        for name in names:
            _add(flt, sc.ERRNO(error), name)
    if zygote_clones:
        _add(flt, sc.ERRNO(errno.ENOSYS), "pidfd_open")
    mask = CLONE_PIDFD | NEW_PID
    _add(flt, sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, mask, CLONE_PIDFD))
    _add(flt, sc.ERRNO(0), "flock")
    for command in IGNORED_LOCKS:
        _add(flt, sc.ERRNO(0), "fcntl", sc.Arg(1, sc.EQ, command))
    _add(flt, sc.ERRNO(errno.EPERM), "fcntl", sc.Arg(1, sc.EQ, F_NOTIFY))
    for call, option in [
        *(("getsockopt", option) for option in (SO_COOKIE, SO_NETNS_COOKIE, SO_PEERPIDFD)),
        ("setsockopt", SO_PASSPIDFD),
    ]:
        level, name = sc.Arg(1, sc.EQ, SOL_SOCKET), sc.Arg(2, sc.EQ, option)
        _add(flt, sc.ERRNO(errno.ENOPROTOOPT), call, level, name)
    for option in (SO_RCVBUF, SO_RCVLOWAT):
        level, name = sc.Arg(1, sc.EQ, SOL_SOCKET), sc.Arg(2, sc.EQ, option)
        _add(flt, sc.ERRNO(0), "setsockopt", level, name)


def _exported(flt) -> bytes:
    program = os.memfd_create("seccomp-bpf")
    try:
        flt.export_bpf(_Descriptor(program))
        return os.pread(program, 1 << 20, 0)
    finally:
        os.close(program)


def _add(flt, action: int, name: str, *args) -> None:
    try:
        flt.add_rule(action, name, *args)
    except (OSError, ValueError):  # a call this architecture does not have
        if name in (
            "uselib",
            "iopl",
            "ioperm",
            "vhangup",
            "cachestat",
            "fadvise64_64",
            "inotify_init",
        ):
            return
        raise


class _Descriptor:
    def __init__(self, fd: int):
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(program: bytes) -> None:
    """Install a compiled filter in this process (no_new_privs must be set, or root); it
    holds for every process forked from it afterwards."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter")
