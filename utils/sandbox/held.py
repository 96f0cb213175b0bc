"""A full runtime held in memory: what a job whose output must owe nothing to earlier jobs reads.

A full-runtime job (`Job.full_runtime`) sees the installation on disk, whose page cache is the
host's: one job can mark pages of a file it reads as cached (or leave them evicted) and a later
job can tell which (major-fault counts, fault-around, time). Between two ordinary jobs that is a
timing-class matter, but BigCodeBench's first run (a program beside its genuine test, answers
included) and its recording run (the test without answers, whose record alone decides the
replayed verdict) are both full-runtime jobs, so the first could hand the second its answers.

A job with `Job.held_runtime` (folders of the installation) reads no file from the disk:
its root is a ramfs (as `view`'s: never reclaimed or swapped, dentries and inodes in memory,
no negative dentry) holding copies of the view's files, of those folders (without their tests),
of a set of command-line programs (PROGRAMS), the fonts, the world-readable files of `/etc`
(links kept as links) and the shared libraries all of their programs load (`ldd`). Every page
of it is resident from its build to the end of the process, so whatever any other job did to
the page cache, such a job sees the same thing. It is built once per process and set of
folders, by the trusted side (in no slot's cgroup, so charged to the caller's group), before
the first job that needs it, and only zygotes serving such jobs bind it: no other job can read
it. Where it cannot be built (as for `view`), those jobs see the installation on disk.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
import time

from . import view

# Programs a test or a solution runs (shells and their tools, archivers, `ldconfig` for
# ctypes.util.find_library, `fc-list` for matplotlib's fonts), where the host has them
PROGRAMS = (
    "bash", "dash", "sh", "env", "cat", "ls", "cp", "mv", "rm", "mkdir", "rmdir", "touch",
    "chmod", "ln", "sleep", "true", "false", "echo", "printf", "test", "head", "tail", "wc",
    "sort", "uniq", "cut", "tr", "date", "pwd", "seq", "basename", "dirname", "tee", "md5sum",
    "sha256sum", "du", "df", "stat", "readlink", "realpath", "mktemp", "find", "xargs", "grep",
    "egrep", "sed", "awk", "diff", "cmp", "tar", "gzip", "gunzip", "zcat", "bzip2", "xz", "zip",
    "unzip", "split", "which", "file", "kill", "ps", "pgrep", "pkill", "top", "ping", "uname",
    "whoami", "id", "hostname", "nproc", "nohup", "timeout", "yes", "expr", "ldconfig",
    "fc-list",
)  # fmt: skip
SEARCHED = "/usr/bin:/bin:/usr/sbin:/sbin"
SHARED = ("/usr/share/fonts", "/usr/share/misc/magic.mgc", "/usr/lib/file/magic.mgc")
# left out of the folders: their test suites (a package named `test` stays: `django.test`,
# `gensim.test.utils` are public modules)
SKIPPED = ("tests",)
ETC_SKIPPED = ("alternatives",)  # links to programs: those in PROGRAMS come with them

_lock = threading.Lock()
_built: dict[tuple[str, ...], dict] = {}  # folders: {"fd": mount or None, sizes and time}


def contents(folders: tuple[str, ...]) -> view.Tree:
    """Everything a job holding `folders` may read, as paths of this host."""
    tree = view.contents()
    before = set(tree.files)
    tree.skipped = SKIPPED
    for folder in folders:
        tree.add(folder)
    python = os.path.dirname(sys.executable)  # the names a program runs this Python by
    for name in ("python", "python3", "python{}.{}".format(*sys.version_info)):
        tree.add(os.path.join(python, name))
    for name in PROGRAMS:
        found = shutil.which(name, path=SEARCHED)
        if found:
            tree.add(found)
    for path in SHARED:
        tree.add(path)
    _add_etc(tree)
    for library in view._shared_libraries(sorted(tree.files - before)):
        tree.add(library)
    return tree


def _add_etc(tree: view.Tree) -> None:
    """`/etc`'s world-readable files and folders; its links as links (their targets are
    there only if held for another reason: nothing outside the runtime is copied)."""
    for root, dirs, files in os.walk("/etc"):
        tree.add_dir(root)
        walked = []
        for name in dirs + files:
            entry = os.path.join(root, name)
            found = os.lstat(entry)
            if stat.S_ISLNK(found.st_mode):
                tree.links.setdefault(entry, os.readlink(entry))
            elif stat.S_ISDIR(found.st_mode):
                if name not in ETC_SKIPPED and found.st_mode & stat.S_IXOTH:
                    walked.append(name)
            elif stat.S_ISREG(found.st_mode) and found.st_mode & stat.S_IROTH:
                tree.files.add(entry)
        dirs[:] = walked


def prepare(folders: tuple[str, ...]) -> int | None:
    """The held runtime's mount for `folders` (built at the first call of this process that
    needs it), or None where the sandbox uses no in-memory view (`view.prepare`) or this one
    cannot be built here."""
    if view.prepare() is None:
        return None
    with _lock:
        if folders not in _built:
            start = time.perf_counter()
            try:
                tree = contents(folders)
                fd = view.build(tree)
            except (OSError, subprocess.SubprocessError) as exc:
                _built[folders] = {"fd": None}
                print(  # said once per process: those jobs lose a protection (docs/security.md)
                    f"evalpack.execution: the held runtime could not be built ({exc}); its jobs "
                    "read the installation on disk, whose page cache other jobs can set",
                    file=sys.stderr,
                )
                return None
            _built[folders] = {
                "fd": fd,
                "files": len(tree.files),
                "bytes": sum(os.path.getsize(path) for path in tree.files),
                "seconds": time.perf_counter() - start,
            }
        return _built[folders]["fd"]


def current(folders: tuple[str, ...]) -> int | None:
    """The held runtime's mount for `folders` if this process (or its parent) built one."""
    return _built.get(folders, {}).get("fd")


def describe() -> str:
    """What this process's held runtimes hold and what they cost, in words (benchmarks)."""
    built = [entry for entry in _built.values() if entry["fd"] is not None]
    if not built:
        return "no held runtime (full-runtime jobs read the installation on disk)"
    return "; ".join(
        f"held runtime: {entry['files']} files, {entry['bytes'] / 2**20:.0f} MiB, "
        f"built in {entry['seconds']:.1f} s"
        for entry in built
    )
