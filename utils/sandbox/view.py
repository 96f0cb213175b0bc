"""What a candidate can read, held in memory: page-cache residency that carries nothing.

The page cache is host-wide: a page a job reads stays cached for the next, and a job that could
evict a page (advice, memory pressure) and another that could tell whether it is cached
(fault counts, fault-around, read timing) would share a channel. Instead of refusing probes
one by one, every file a candidate can read is kept resident for the whole run, so no probe
learns anything: the view is a ramfs (its pages are never reclaimed or swapped, whatever the
memory pressure; its directories and inodes live in memory; a lookup of a missing name leaves
no negative dentry behind) holding copies of exactly the files a candidate may read: the
interpreter, the standard library (without its tests, IDLE, tkinter and the static library),
numpy, the shared libraries they load (found with `ldd`), `/bin/sh`, the time zones and a few
files of `/etc`.

It is built once per process by the trusted side (the caller of `run_jobs`, in no slot's
memory cgroup, so the pages are charged to the caller's group and no candidate's reclaim can
touch them), as a detached mount (new mount API, Linux 5.2+) that no other process on the host
sees and that the kernel frees with the last process holding it. Every slot's zygote binds it
read-only as its root (`rootfs.build_root`); where it cannot be built (not root, an older
kernel, no `ldd`) the zygote shows the whole installation as before, unpinned.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import threading
import time

from . import rootfs
from .limits import FALLBACK, LEVEL_ENV

PACKAGES = ("numpy",)  # importable by candidates besides the standard library
SKIPPED = ("test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "site-packages")
SKIPPED_FILES = ("_tkinter",)  # (it would bring X11 and Tk with it)
SKIPPED_SUFFIXES = (".opt-1.pyc", ".opt-2.pyc")  # (only `python -O` reads them)
ETC = ("passwd", "group", "nsswitch.conf", "localtime", "hosts", "ld.so.cache", "ld.so.conf")
# the shell; the locale of CANDIDATE_ENV's LANG; the time zones (the `zoneinfo` module's)
EXTRA = ("/bin/sh", "/usr/lib/locale/C.utf8", "/usr/share/zoneinfo")
FSOPEN, FSCONFIG, FSMOUNT = 430, 431, 432  # the same numbers on every architecture
FSCONFIG_SET_STRING, FSCONFIG_CMD_CREATE, CLOEXEC = 1, 6, 1

_libc = ctypes.CDLL(None, use_errno=True)
_lock = threading.Lock()
_built: dict[str, int | float | None] = {}  # "fd": the view's mount, once tried; its size


class Tree:
    """The view's content as paths of this host: directories, symbolic links, files."""

    def __init__(self) -> None:
        self.skipped = SKIPPED  # folders `add` leaves out
        self.dirs: set[str] = {"/"}
        self.links: dict[str, str] = {}
        self.files: set[str] = set()
        self.walked: set[str] = set()

    def resolve(self, path: str) -> str:
        """The real path of `path`, every symbolic link on the way recorded (with its
        directory), so that the path works in the view as it does here."""
        current = "/"
        for part in os.path.abspath(path).strip("/").split("/"):
            step = os.path.join(current, part)
            if os.path.islink(step):
                self.add_dir(current)
                self.links[step] = os.readlink(step)
                step = self.resolve(os.path.normpath(os.path.join(current, self.links[step])))
            current = step
        return current

    def add_dir(self, path: str) -> None:
        while path not in self.dirs:
            self.dirs.add(path)
            path = os.path.dirname(path)

    def add(self, path: str) -> None:
        """A file, a directory (with everything in it but SKIPPED), or nothing if absent."""
        real = self.resolve(path)
        if os.path.isfile(real):
            self.add_dir(os.path.dirname(real))
            self.files.add(real)
        elif os.path.isdir(real) and real not in self.walked:
            self.walked.add(real)
            self.add_dir(real)
            for root, dirs, files in os.walk(real):
                dirs[:] = [d for d in dirs if d not in self.skipped and not d.startswith("config-")]
                for name in dirs + files:
                    entry = os.path.join(root, name)
                    if os.path.islink(entry):
                        self.add(entry)
                    elif name in dirs:
                        self.add_dir(entry)
                    elif stat.S_ISREG(os.lstat(entry).st_mode) and not (
                        name.startswith(SKIPPED_FILES) or name.endswith(SKIPPED_SUFFIXES)
                    ):
                        self.files.add(entry)


def contents() -> Tree:
    """Everything a candidate may read, as paths of this host."""
    tree = Tree()
    tree.add(sys.executable)
    tree.add(os.path.join(sys.prefix, "pyvenv.cfg"))
    tree.add(sysconfig.get_paths()["stdlib"])
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec and spec.submodule_search_locations:
            folder = next(iter(spec.submodule_search_locations))
            tree.add(folder)
            tree.add(folder + ".libs")  # a wheel's bundled libraries (numpy.libs)
    for path in (*EXTRA, *(f"/etc/{name}" for name in ETC)):
        tree.add(path)
    for library in _shared_libraries(sorted(tree.files)):
        tree.add(library)
    for path in _mount_points():
        tree.add_dir(path)
    return tree


def _shared_libraries(files: list[str]) -> set[str]:
    """The libraries (and the loader) that the ELF files among `files` load."""
    elves = []
    for path in files:
        with open(path, "rb") as fh:
            if fh.read(4) == b"\x7fELF":
                elves.append(path)
    found = set()
    for start in range(0, len(elves), 200):
        listing = subprocess.run(
            ["ldd", *elves[start : start + 200]], capture_output=True, text=True, check=False
        ).stdout
        for line in listing.splitlines():
            words = line.replace("=>", " ").split()
            found.update(w for w in words if w.startswith("/") and not w.endswith(":"))
    return {path for path in found if os.path.exists(path)}


def _mount_points() -> list[str]:
    """Where a full-runtime job (`Job.full_runtime`) gets the whole installation bound."""
    return [
        path for path in rootfs.runtime_paths() if os.path.isdir(path) and not os.path.islink(path)
    ]


def _check(result: int, what: str) -> int:
    if result < 0:
        raise OSError(ctypes.get_errno(), what)
    return result


def build(tree: Tree) -> int:
    """A new ramfs holding `tree`, as a detached mount; its file descriptor."""
    fs = _check(_libc.syscall(FSOPEN, b"ramfs", CLOEXEC), "fsopen ramfs")
    try:
        _check(_libc.syscall(FSCONFIG, fs, FSCONFIG_SET_STRING, b"mode", b"755", 0), "fsconfig")
        _check(_libc.syscall(FSCONFIG, fs, FSCONFIG_CMD_CREATE, None, None, 0), "fsconfig")
        root = _check(_libc.syscall(FSMOUNT, fs, CLOEXEC, 0), "fsmount")
    finally:
        os.close(fs)
    try:
        for path in sorted(tree.dirs - {"/"}):
            os.mkdir(path.lstrip("/"), dir_fd=root)
            os.chmod(path.lstrip("/"), 0o755, dir_fd=root)  # (e.g. /root: 0700 on the host)
        for path, target in tree.links.items():
            os.symlink(target, path.lstrip("/"), dir_fd=root)
        for path in tree.files:
            found = os.stat(path)
            copy = os.open(path.lstrip("/"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, dir_fd=root)
            os.fchmod(copy, stat.S_IMODE(found.st_mode) & 0o755)  # (whatever the umask)
            with open(path, "rb") as source, open(copy, "wb", closefd=False) as target:
                shutil.copyfileobj(source, target, 1 << 20)
            # its modification time kept: a module's compiled bytecode names its source's,
            # so that the interpreter takes it as current instead of compiling again
            os.utime(copy, ns=(found.st_atime_ns, found.st_mtime_ns))
            os.close(copy)
    except BaseException:
        os.close(root)
        raise
    return root


def prepare() -> int | None:
    """The view's mount (built at the first call of this process that needs it), or None
    where the sandbox will not use one (not root, the fallback level forced) or it cannot be
    built here."""
    if os.geteuid() != 0 or os.environ.get(LEVEL_ENV) == FALLBACK:
        return None
    with _lock:
        if "fd" not in _built:
            start = time.perf_counter()
            try:
                tree = contents()
                _built["fd"] = build(tree)
            except (OSError, subprocess.SubprocessError):
                _built["fd"] = None
                return None
            _built["files"] = len(tree.files)
            _built["bytes"] = sum(os.path.getsize(path) for path in tree.files)
            _built["seconds"] = time.perf_counter() - start
        return _built["fd"]


def describe() -> str:
    """What this process's view holds and what it cost, in words (benchmarks print it)."""
    if _built.get("fd") is None:
        return "no in-memory view (candidates see the installation on disk)"
    return (
        f"in-memory view: {_built['files']} files, {_built['bytes'] / 2**20:.0f} MiB, "
        f"built in {_built['seconds']:.1f} s"
    )


def current() -> int | None:
    """The view's mount if this process (or the one it was forked from) built one."""
    return _built.get("fd")
