"""Page-cache residency carries nothing between jobs (issue 27, class 1, closed in general):
every file a candidate can read is held in memory (`evalpack.sandbox.view`), so what one job
does to the cache (reads, advice, memory pressure) changes nothing another job can observe
(major-fault counts from getrusage and /proc/self/stat, the kernel's fault-around, the I/O a
read needs and its time). Each probe is first shown to tell a cached file from an evicted one
outside the sandbox, so the tests can fail."""

import ctypes
import glob
import json
import mmap
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager

import pytest

from evalpack.execution import run_jobs, sandbox_processes
from tests.sandbox.conftest import HONEST, job, needs_root, program

# job B: probes one file's residency at import, prints what it saw, then adds honestly
PROBE = """
import json, mmap, os, resource, time
PAGE = mmap.PAGESIZE
def counters():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open("/proc/self/stat") as fh:
        stat = fh.read().rsplit(")", 1)[1].split()
    try:
        with open("/proc/self/io") as fh:
            read_bytes = int(dict(line.split(": ") for line in fh.read().splitlines())["read_bytes"])
    except OSError:
        read_bytes = None
    return [usage.ru_majflt, int(stat[9]), usage.ru_inblock, read_bytes]
def rss_kb(path, offset):
    with open("/proc/self/smaps") as fh:
        lines = fh.read().splitlines()
    at = next(i for i, line in enumerate(lines)
              if line.endswith(" " + path) and int(line.split()[2], 16) == offset)
    return int(next(line for line in lines[at:] if line.startswith("Rss:")).split()[1])
fd = os.open(TARGET, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead: each probe reads its own pages
size = os.fstat(fd).st_size // PAGE * PAGE
quarter = size // 4 // PAGE * PAGE
before = counters()  # major faults: one page in every 64 of the first quarter, touched
spread = mmap.mmap(fd, quarter, mmap.MAP_SHARED, mmap.PROT_READ)
spread.madvise(mmap.MADV_RANDOM)
touched = sum(spread[i] for i in range(0, quarter, 64 * PAGE))
middle = counters()
os.pread(fd, PAGE, 2 * quarter)  # fault-around: a page read, then mapped: its neighbours
around = mmap.mmap(fd, quarter, mmap.MAP_SHARED, mmap.PROT_READ, offset=2 * quarter)
around[0]  # mapped with it only where they are cached
around_kb = rss_kb(TARGET, 2 * quarter)
start = time.perf_counter()  # block reads and time: 256 KiB of the last quarter, read
os.pread(fd, 64 * PAGE, 3 * quarter)
seconds = time.perf_counter() - start
after = counters()
print(json.dumps({
    "majflt (getrusage)": middle[0] - before[0],
    "majflt (/proc/self/stat)": middle[1] - before[1],
    "fault-around kB": around_kb,
    "inblock (getrusage)": after[2] - middle[2],
    "read_bytes (/proc/self/io)": None if after[3] is None else after[3] - middle[3],
    "read seconds": seconds,
}))
"""
# job A, bit 0: loads the file; bit 1: all it can do to evict it
LOAD = """
with open(TARGET, "rb") as fh:
    fh.read()
"""
EVICT = """
import mmap, os, time
fd = os.open(TARGET, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
size = os.fstat(fd).st_size
mapped = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
mapped.madvise(mmap.MADV_DONTNEED)
for advice in (20, 21):  # MADV_COLD, MADV_PAGEOUT
    mapped.madvise(advice)
ready, done = os.pipe()
if os.fork() == 0:  # memory pressure past the job's 2 GiB: the group's reclaim, then OOM
    hog = b"x" * (1200 << 20)
    os.write(done, b".")
    time.sleep(60)
os.read(ready, 1)
hog = b"x" * (1200 << 20)
"""
EXACT = (  # what is counted, not timed
    "majflt (getrusage)",
    "majflt (/proc/self/stat)",
    "fault-around kB",
    "inblock (getrusage)",
    "read_bytes (/proc/self/io)",
)


def with_target(text, target):
    return f"TARGET = {target!r}\n" + program(text)


def probe_outside(target):
    """The probe as a plain process (root, no sandbox): what it saw."""
    result = subprocess.run(
        [sys.executable, "-c", with_target(PROBE, target)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout)


@contextmanager
def locked_in_cache(path):
    """The file's pages in the page cache and locked there (mlock of a shared mapping) while
    the block runs: no reclaim elsewhere on the machine (this VM also runs DAMON) can take one
    between a read and a probe that expects it cached."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    size = ctypes.c_size_t(os.path.getsize(path))
    fd = os.open(path, os.O_RDONLY)
    at = ctypes.c_void_p(libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0))
    try:
        libc.mlock(at, size)  # (refused past RLIMIT_MEMLOCK without root: then only mapped)
        yield
    finally:
        libc.munmap(at, size)  # (unlocks)
        os.close(fd)


def evicted(path):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


@pytest.fixture(scope="module")
def disk_file():
    """8 MiB of random bytes in a file on a disk (not a tmpfs), written through."""
    folder = "/var/tmp" if os.path.isdir("/var/tmp") else None
    with tempfile.NamedTemporaryFile(dir=folder, prefix="evalpack-residency-") as fh:
        fh.write(os.urandom(8 << 20))
        fh.flush()
        os.fsync(fh.fileno())
        yield fh.name


def test_each_probe_tells_a_cached_file_from_an_evicted_one_outside_the_sandbox(disk_file):
    evicted(disk_file)
    cold = probe_outside(disk_file)
    with open(disk_file, "rb") as fh:  # (what job A does for a 0)
        fh.read()
    with locked_in_cache(disk_file):  # no page of it evicted before the probe (one was, once)
        warm = probe_outside(disk_file)
    assert cold["majflt (getrusage)"] > 0 and warm["majflt (getrusage)"] == 0, (cold, warm)
    assert cold["majflt (/proc/self/stat)"] > 0 == warm["majflt (/proc/self/stat)"], (cold, warm)
    assert cold["fault-around kB"] < warm["fault-around kB"], (cold, warm)
    assert cold["inblock (getrusage)"] > 0 == warm["inblock (getrusage)"], (cold, warm)
    if cold["read_bytes (/proc/self/io)"] is not None:
        assert cold["read_bytes (/proc/self/io)"] > 0 == warm["read_bytes (/proc/self/io)"]
    # read time: an evicted read waits for the disk (the I/O counted above); printed, not
    # compared, as timings are not asserted
    print("read seconds, evicted and cached:", cold["read seconds"], warm["read seconds"])


def view_file():
    """A large file every candidate can read: numpy's bundled BLAS (or its C core)."""
    import numpy

    folder = os.path.dirname(os.path.dirname(numpy.__file__))
    found = glob.glob(f"{folder}/numpy.libs/*openblas*") + glob.glob(
        f"{folder}/numpy/_core/_multiarray_umath*.so"
    )
    return max(found, key=os.path.getsize)


@needs_root
def test_no_job_can_tell_what_an_earlier_job_did_to_the_page_cache():
    target = view_file()
    probe = job(with_target(PROBE, target) + HONEST)
    load = job(with_target(LOAD, target) + HONEST)
    evict = job(with_target(EVICT, target) + HONEST, timeout=10.0)
    order = [evict, job(HONEST), probe, job(HONEST), load, job(HONEST), probe, job(HONEST)]
    evicted(target)  # (from outside too: the host's own advice reaches no candidate's view)
    verdicts = run_jobs(order, workers=1)
    for verdict in verdicts[1::2]:
        assert verdict.passed, verdict
    seen = [json.loads(verdicts[i].output) for i in (2, 6)]
    for observation in seen:
        exact = {name: observation[name] for name in EXACT}
        assert exact == {name: seen[0][name] for name in EXACT}, seen  # the same, whatever A did
        assert observation["majflt (getrusage)"] == 0, observation  # no page ever needs I/O
        assert observation["inblock (getrusage)"] == 0, observation
        assert observation["read_bytes (/proc/self/io)"] in (0, None), observation
    assert seen[0]["fault-around kB"] > 4, seen  # every neighbour of a touched page is there
    assert verdicts[0].limit == "memory", verdicts[0]  # (it pressed: the OOM killer acted)
    assert sandbox_processes() == []


VIEW_CHECK = """
import os, sqlite3, ssl, subprocess, sys, zoneinfo
import numpy  # the standard library (with its C libraries and time zones) and numpy are in it
zoneinfo.ZoneInfo("Europe/Paris")
assert subprocess.run(["/bin/sh", "-c", "exit 3"]).returncode == 3
SEEN = [path for path in ("/usr/bin/gcc", "/usr/bin/python3", sys.prefix + "/bigcodebench-libs",
                          sys.prefix + "/bin/pip") if os.path.exists(path)] + os.listdir("/.full")
print(SEEN)
"""


@needs_root
def test_a_candidate_sees_the_in_memory_view_and_a_full_runtime_job_the_installation():
    shown = program(VIEW_CHECK) + HONEST
    verdicts = run_jobs([job(shown), job(shown, full_runtime=True), job(HONEST)], workers=1)
    assert all(verdict.passed for verdict in verdicts), verdicts
    assert verdicts[0].output.strip() == "[]", verdicts[0].output  # nothing outside the view
    if os.path.exists("/usr/bin/gcc"):
        assert "/usr/bin/gcc" in verdicts[1].output, verdicts[1].output  # the whole runtime


HELD_CHECK = """
import os, sys
print(sorted(path for path in ("/usr/bin/gcc", "/.full", sys.prefix + "/bin/pip", "/usr/bin/tar")
             if os.path.exists(path)))
"""


@needs_root
def test_a_held_runtime_job_reads_its_copy_in_memory_only(disk_file):
    """A job with a held runtime (`Job.held_runtime`: BigCodeBench's recording runs and
    replays) reads copies in memory of the view and its folders, never the disk: a file it
    holds, evicted from the host's cache, needs no I/O there, and nothing else on disk (a
    compiler, pip, the detached full runtime) is in its root; held programs are."""
    os.chmod(disk_file, 0o644)  # (a candidate's uid reads it)
    fields = {"full_runtime": True, "held_runtime": (disk_file,)}
    probe = job(with_target(PROBE, disk_file) + HONEST, **fields)
    shown = job(program(HELD_CHECK) + HONEST, **fields)
    run_jobs([job(HONEST, **fields)], workers=1)  # (the copy, made at the first such job)
    evicted(disk_file)
    verdicts = run_jobs([probe, shown, job(HONEST)], workers=1)
    assert all(verdict.passed for verdict in verdicts), verdicts
    seen = json.loads(verdicts[0].output)
    assert seen["majflt (getrusage)"] == seen["majflt (/proc/self/stat)"] == 0, seen
    assert seen["inblock (getrusage)"] == 0 and seen["read_bytes (/proc/self/io)"] in (0, None)
    assert seen["fault-around kB"] > 4, seen  # every neighbour of a touched page is there
    assert verdicts[1].output.strip() == str(["/usr/bin/tar"]), verdicts[1].output


# a candidate touching every page of every file it inherited mapped from its zygote
MAPPED_PROBE = """
import ctypes, mmap, resource
faults = pages = 0
for line in open("/proc/self/maps"):
    fields = line.split(maxsplit=5)
    if len(fields) == 6 and fields[5].startswith("/") and fields[1].startswith("r"):
        start, end = (int(x, 16) for x in fields[0].split("-"))
        memory = (ctypes.c_char * (end - start)).from_address(start)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        for offset in range(0, end - start, mmap.PAGESIZE):
            memory[offset]
        faults += resource.getrusage(resource.RUSAGE_SELF).ru_majflt - before
        pages += (end - start) // mmap.PAGESIZE
print(pages, faults)
"""


def disk_files_mapped(pid):
    """{path: (size, resident kB, locked) of its largest mapping} for each file of the host's
    disk (not of the view, which is memory) that process `pid` maps."""
    mappings = []
    with open(f"/proc/{pid}/smaps") as fh:
        for line in fh:
            fields = line.split(maxsplit=5)
            if "-" in fields[0]:  # a mapping's header: address, mode, offset, device, inode, path
                path = fields[5].strip() if len(fields) == 6 else ""
                on_disk = os.path.isfile(path) and os.stat(path).st_ino == int(fields[4]) != 0
                mappings.append({"path": path if on_disk else None})
            elif fields[0] in ("Size:", "Rss:"):
                mappings[-1][fields[0]] = int(fields[1])
            elif fields[0] == "VmFlags:":
                mappings[-1]["locked"] = "lo" in line.split()
    largest = {}
    for mapping in mappings:
        if mapping["path"] and mapping["Size:"] > largest.get(mapping["path"], (0, 0))[0]:
            largest[mapping["path"]] = (mapping["Size:"], mapping["Rss:"], mapping["locked"])
    return largest


@needs_root
def test_every_file_a_candidate_inherits_mapped_is_held_in_memory():
    """The zygote maps files of the host's disk before it enters its root (its interpreter,
    the C libraries and extension modules it loaded, the locale); its candidates inherit those
    mappings, so each file is mapped whole and locked while the zygote lives: no page of them
    can be evicted, and a candidate touching all of them, after the host evicted them, has no
    major fault."""
    from evalpack.sandbox import pool, view

    view.prepare()
    slot = pool.current()
    try:
        mapped = disk_files_mapped(slot.zygote.pid)
    finally:
        pool.close()
    assert any("libpython" in path or "python3" in path for path in mapped), mapped
    for path, (size_kb, resident_kb, locked) in mapped.items():
        whole = -(-os.path.getsize(path) // 4096) * 4  # kB
        assert size_kb >= whole and resident_kb == size_kb and locked, (path, mapped[path])
    for path in mapped:
        evicted(path)
    verdict = run_jobs([job(program(MAPPED_PROBE) + HONEST)], workers=1)[0]
    assert verdict.passed, verdict
    pages, faults = map(int, verdict.output.split())
    assert pages > 1000 and faults == 0, verdict.output
