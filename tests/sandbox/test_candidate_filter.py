"""The fourth red team (issue 47), the sandbox's part, each attack followed by an honest job
that must still pass; each probe is first shown to work outside the sandbox (as an unprivileged
user), so that these tests can fail.

- Class 1: host-wide counters a job both moves and reads, hidden where only one call exposes
  them: memfd_create, pidfd_open, clone with CLONE_PIDFD, a socket's cookie (SO_COOKIE), a
  peer's pidfd (SO_PEERPIDFD, SO_PASSPIDFD). (The inode counters of pipes, sockets and shared
  memory stay readable: docs/security.md, "Kernel state that stays shared".)
- Class 2: per-inode state of files every job can read: advisory locks (flock, open-file
  description locks) take nothing, inotify and dnotify are refused.
- Class 8: a candidate cannot change its own scheduling class, priority, I/O priority or CPUs.
BigCodeBench's replay (classes 4, 5, 7): tests/tasks/test_bigcodebench_redteam_replay.py."""

import subprocess
import sys

from evalpack.execution import run_jobs
from tests.sandbox.conftest import HONEST, job, needs_root, probe, program

COUNTERS = {
    "memfd_create": """
        import os
        os.fstat(os.memfd_create("probe")).st_ino
        """,
    "pidfd_open": """
        import os
        os.fstat(os.pidfd_open(os.getpid())).st_ino
        """,
    "clone with CLONE_PIDFD": """
        import ctypes, os, signal
        libc = ctypes.CDLL(None, use_errno=True)
        pidfd = ctypes.c_int(-1)
        pid = libc.syscall(56, 0x1000 | signal.SIGCHLD, None, ctypes.byref(pidfd), None, None)
        if pid == 0:
            os._exit(0)
        if pid < 0:
            raise OSError(ctypes.get_errno(), "clone")
        os.waitpid(pid, 0)
        """,
    "SO_COOKIE": """
        import socket
        socket.socket(socket.AF_UNIX).getsockopt(socket.SOL_SOCKET, 57, 8)
        """,
    "SO_PEERPIDFD": """
        import socket
        a, b = socket.socketpair()
        a.getsockopt(socket.SOL_SOCKET, 77)
        """,
    "SO_PASSPIDFD": """
        import socket
        socket.socket(socket.AF_UNIX).setsockopt(socket.SOL_SOCKET, 76, 1)
        """,
}
SHARED_FILES = {
    # a lock a second open file description of a file every job can read runs into
    "flock": """
        import fcntl
        first, second = open("/etc/passwd"), open("/etc/passwd")
        fcntl.flock(first, fcntl.LOCK_SH)
        try:
            fcntl.flock(second, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # the lock is seen
            pass
        else:
            raise AssertionError("no lock seen")
        """,
    "open file description locks": """
        import fcntl, struct
        first, second = open("/etc/passwd"), open("/etc/passwd")
        fcntl.fcntl(first, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, 0, 0, 0))
        held = fcntl.fcntl(second, fcntl.F_OFD_GETLK,
                           struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0))
        assert struct.unpack("hhqqi4x", held)[0] == fcntl.F_RDLCK, "no lock seen"
        """,
    "inotify": """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.inotify_init1(0) < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        """,
    # (the notice is a SIGIO, whose default ends the process: any read in /etc by any process
    # on the host would end the control early, a failure that only load makes)
    "dnotify": """
        import fcntl, os, signal
        signal.signal(signal.SIGIO, signal.SIG_IGN)
        folder = os.open("/etc", os.O_RDONLY)
        fcntl.fcntl(folder, fcntl.F_NOTIFY, fcntl.DN_ACCESS)
        """,
}
SCHEDULING = {
    "SCHED_IDLE": """
        import os
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        """,
    "nice": """
        import os
        os.nice(5)
        """,
    "affinity": """
        import os
        os.sched_setaffinity(0, os.sched_getaffinity(0))
        """,
    "I/O priority": """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(251, 1, 0, (3 << 13) | 0) != 0:  # ioprio_set: the idle class
            raise OSError(ctypes.get_errno(), "ioprio_set")
        """,
}


def works_unsandboxed(escape):
    """Control: `escape` succeeds as an unprivileged user outside the sandbox."""
    drop = (  # (the standard library may be unreadable to nobody: imported first)
        "import ctypes, fcntl, mmap, os, signal, socket, struct\n"
        "os.setgroups([])\nos.setgid(65534)\nos.setuid(65534)\n"
    )
    command = [sys.executable, "-c", drop + program(escape)]
    result = subprocess.run(command, cwd="/", capture_output=True, timeout=60, check=False)
    return result.returncode == 0


def refused(probes, expected):
    working = {name: text for name, text in probes.items() if works_unsandboxed(text)}
    assert set(working) == set(expected), set(probes) - set(working)  # controls: they are real
    attacks = [job(probe(text)) for text in working.values()]
    verdicts = run_jobs([j for attack in attacks for j in (attack, job(HONEST))], workers=1)
    for attack, honest in zip(verdicts[::2], verdicts[1::2], strict=True):
        assert attack.outcome == "error", attack  # refused at import
        assert honest.passed, honest
    return verdicts


@needs_root
def test_host_wide_counters_are_hidden():
    verdicts = refused(COUNTERS, COUNTERS)
    for name, attack in zip(COUNTERS, verdicts[::2]):
        assert "[Errno" in attack.reason, (name, attack.reason)  # (the call refused)


# an honest program that locks its own files: sqlite (POSIX locks) with two connections, flock
LOCKING = program("""
    import fcntl, sqlite3
    def add(a, b):
        first, second = sqlite3.connect("sums.db"), sqlite3.connect("sums.db")
        first.execute("create table if not exists t (v)")
        first.execute("insert into t values (?)", (a + b,))
        first.commit()
        with open("lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            return second.execute("select v from t").fetchall()[-1][0]
    """)


@needs_root
def test_shared_files_carry_no_lock_and_no_notification():
    refused(SHARED_FILES, SHARED_FILES)
    (locking,) = run_jobs([job(LOCKING)])
    assert locking.passed, locking


@needs_root
def test_a_candidate_cannot_change_how_it_is_scheduled():
    refused(SCHEDULING, SCHEDULING)
