"""The probes of `gvisor.py`: small programs run in runsc sandboxes (a `gvisor.Runsc`), one per
kind of kernel state issue 47 found shared between jobs, each printing what a job sees:
inode counters (class 1), advisory locks on a shared file (class 2), a host file's page cache
(class 3) and listen queues against the host's `tcp_mem` (class 6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PIPES = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}

COUNTERS = """
import json, mmap, os, socket
def maps():
    return set(open("/proc/self/maps").read().splitlines())
before = maps()
shared = mmap.mmap(-1, 4096)
r, w = os.pipe()
s = socket.socket()
print(json.dumps({"pipe": os.fstat(r).st_ino, "socket": os.fstat(s.fileno()).st_ino,
    "memfd": os.fstat(os.memfd_create("x")).st_ino,
    "shared map": min(int(line.split()[4]) for line in maps() - before)}))
for _ in range(MOVE):
    os.close(os.pipe()[0])
    socket.socket().close()
    mmap.mmap(-1, 4096).close()
    os.close(os.memfd_create("x"))
"""


def counters(runsc) -> None:
    """Class 1: inode counters a job moves and the next job reads."""

    def probe(move: int) -> str:
        return f"MOVE = {move}\n{COUNTERS}"

    def moved(before: dict, after: dict) -> str:
        return ", ".join(f"{k} {before[k]} -> {after[k]}" for k in before)

    first, second = (
        json.loads(runsc.run([runsc.python, "-c", probe(m)]).stdout) for m in (1000, 0)
    )
    image, restored = runsc.checkpoint(), []
    for move in (1000, 0):
        worker = runsc.worker("", image)
        restored.append(json.loads(worker.job(probe(move))[1][0]))
        worker.close()
    a, b = runsc.worker(), runsc.worker()
    one = json.loads(a.job(probe(1000))[1][0])
    seen = json.loads(b.job(probe(0))[1][0])
    two = json.loads(a.job(probe(0))[1][0])
    again = json.loads(b.job(probe(0))[1][0])
    a.close(), b.close()
    print(
        "  inode counters (class 1): a job reads its first pipe's, socket's, memfd's and shared "
        "map's inode numbers, then moves each counter by 1,000 (or not: the job after it)\n"
        f"    two sandboxes one after the other: {moved(first, second)}\n"
        f"    two restored from one checkpoint, one after the other: {moved(*restored)}\n"
        f"    two jobs of one sandbox (a slot), the first moving: {moved(one, two)}\n"
        f"    a job of the other slot before and after that: {moved(seen, again)}"
    )


OBSERVE = """
import ctypes, json, mmap, os, resource, time
f = open("/data/blob", "rb")
size = os.fstat(f.fileno()).st_size
m = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
m.madvise(mmap.MADV_RANDOM)
vec = (ctypes.c_ubyte * (size // 4096))()
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
libc = ctypes.CDLL(None, use_errno=True)
ok = libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) == 0
faults, start = resource.getrusage(resource.RUSAGE_SELF).ru_majflt, time.perf_counter()
for i in range(0, size, 4096 * 16):
    m[i]
print(json.dumps({"mincore": sum(v & 1 for v in vec) if ok else "refused",
    "majflt": resource.getrusage(resource.RUSAGE_SELF).ru_majflt - faults,
    "ms": round(1000 * (time.perf_counter() - start), 1)}))
"""
READ = "open('/data/blob', 'rb').read()"


def page_cache(runsc) -> None:
    """Class 3: can a job tell whether another job read a host file (bound read-only)?"""
    blob = runsc.data / "blob"
    blob.write_bytes(os.urandom(32 << 20))
    os.sync()

    def evict() -> None:
        with open(blob, "rb") as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)

    def observe() -> str:
        return runsc.run([runsc.python, "-c", OBSERVE]).stdout.strip()

    cold, warm = [], []
    for _ in range(3):
        evict()
        cold.append(observe())
        evict()
        runsc.run([runsc.python, "-c", READ])
        warm.append(observe())
    print(
        "  page cache (class 3): a 32 MiB host file, mincore of its 8,192 pages, then 512 "
        "pages touched through mmap + MADV_RANDOM (major faults, ms), in a fresh sandbox:\n"
        f"    the file evicted from the host's cache: {'; '.join(cold)}\n"
        f"    after another sandbox read it: {'; '.join(warm)}"
    )
    baseline, worker = runsc.worker(), runsc.worker()
    evict()
    first = baseline.job(OBSERVE)[1][0]
    evict()
    worker.job(READ)
    evict()
    print(
        f"    jobs of one sandbox (a slot), the host's cache evicted before each: the first "
        f"job: {first}; a job after one that read the file: {worker.job(OBSERVE)[1][0]}"
    )
    baseline.close(), worker.close()


HOLD = "import fcntl, sys\nf = open(PATH)\nfcntl.flock(f, fcntl.LOCK_EX)\nprint(1, flush=True)\n"
HOLD += "sys.stdin.read()"
TRY = "import fcntl\ntry:\n    fcntl.flock(open(PATH), fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
TRY += "    print('taken')\nexcept OSError as e:\n    print(e)"


def locks(runsc) -> None:
    """Class 2: does a lock on a shared read-only file reach the host or another sandbox?"""
    (runsc.data / "lock").write_text("")
    inside, outside = "PATH = '/data/lock'\n", f"PATH = {str(runsc.data / 'lock')!r}\n"
    holder = runsc.start([runsc.python, "-c", inside + HOLD])
    holder.readline()
    other = runsc.run([runsc.python, "-c", inside + TRY]).stdout.strip()
    host = subprocess.run([sys.executable, "-c", outside + TRY], check=False, **PIPES)
    holder.close()
    with subprocess.Popen([sys.executable, "-c", outside + HOLD], **PIPES) as held:
        held.stdout.readline()
        reverse = runsc.run([runsc.python, "-c", inside + TRY]).stdout.strip()
        held.stdin.close()
    print(
        f"  flock (class 2), LOCK_EX held by a sandbox on a shared file: another sandbox's "
        f"LOCK_EX|LOCK_NB {other}, the host's {host.stdout.strip()}; held by the host: a "
        f"sandbox's {reverse}"
    )


QUEUE = """
import socket, sys
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(4096)
clients, sent = [], 0
for _ in range(16):
    c = socket.create_connection(server.getsockname())
    c.setblocking(False)
    try:
        while True:
            sent += c.send(b"x" * 65536)
    except BlockingIOError:
        clients.append(c)
print(sent, flush=True)
sys.stdin.read()
"""


def tcp_mem() -> float:
    """The host's TCP buffer memory in MiB (/proc/net/sockstat: every network namespace)."""
    line = next(x for x in Path("/proc/net/sockstat").read_text().splitlines() if "TCP:" in x)
    return int(line.split("mem ")[1]) * 4096 / 2**20


def listen_queues(runsc) -> None:
    """Class 6: data queued on connections never accepted, against the host's tcp_mem."""
    before = tcp_mem()
    with subprocess.Popen([runsc.python, "-c", QUEUE], **PIPES) as host:
        sent = int(host.stdout.readline())
        grown = tcp_mem() - before
        host.stdin.close()
    print(
        f"  listen queues (class 6), 16 connections never accepted, filled: no sandbox, "
        f"{sent / 2**20:.0f} MiB queued, host tcp_mem {grown:+.0f} MiB"
    )
    before = tcp_mem()
    held = runsc.start([runsc.python, "-c", QUEUE])
    sent = int(held.readline())
    grown, memory = tcp_mem() - before, held.memory_mib()
    held.close()
    print(
        f"    in runsc: {sent / 2**20:.0f} MiB queued, host tcp_mem {grown:+.0f} MiB, the "
        f"sandbox's memory cgroup {memory:.0f} MiB (its limit: 2 GiB)"
    )


def run_all(runsc) -> None:
    print("probes (issue 47's classes), each job a python program in runsc:")
    for probe in (counters, locks, page_cache, listen_queues):
        probe(runsc)
