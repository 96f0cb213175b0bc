"""Host-wide inode counters a job both moves and reads (`get_next_ino`: pipes, sockets, proc;
shmem: shared anonymous maps, System V segments) carry nothing from one job to the next: a job
that leaves its CPU at a place of its choice in each counter's batch, and the next job on the
slot reading its place, agree no better than chance (`evalpack.sandbox.counters`). The probe is
first shown to work outside the sandbox, on one CPU, so that the test can fail."""

import subprocess
import sys
from collections import Counter

from evalpack.execution import run_jobs
from tests.sandbox.conftest import GENEROUS, HONEST, job, needs_root, program

BATCH = 1024
NUMBERS = program("""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    def pipe_number():
        r, w = os.pipe()
        number = os.fstat(r).st_ino
        os.close(r)
        os.close(w)
        return number
    def shmem_number():
        address = libc.mmap(None, 4096, 1, 0x21, -1, 0)  # MAP_SHARED | MAP_ANONYMOUS
        with open("/proc/self/maps") as maps:
            number = next(int(line.split()[4]) for line in maps
                          if line.startswith("%x-" % address))
        libc.munmap(address, 4096)
        return number
    """)
# leaves its CPU's place in both batches at fresh random values, which it prints
SETTER = NUMBERS + program("""
    import secrets
    def pipes(count):
        for _ in range(count):
            for end in os.pipe():
                os.close(end)
    def maps(count):
        for _ in range(count):
            libc.munmap(libc.mmap(None, 4096, 1, 0x21, -1, 0), 4096)
    chosen = [secrets.randbelow(1024), secrets.randbelow(1024)]
    for number, take, target in zip((pipe_number, shmem_number), (pipes, maps), chosen):
        while (place := number() % 1024) != target:
            take((target - place - 1) % 1024)
    print("set", *chosen)
    """)
# prints its CPU's place in both batches, and the places of the descriptors it was given: its
# channel to the trusted side (a socket) and its output (a memfd), made for it on the slot's CPU
READER = NUMBERS + program("""
    import stat
    def channel():
        for fd in range(3, 64):
            try:
                if stat.S_ISSOCK(os.fstat(fd).st_mode):
                    return fd
            except OSError:
                pass
    given = [os.fstat(channel()).st_ino % 1024, os.fstat(1).st_ino % 1024] if channel() else []
    print("read", pipe_number() % 1024, shmem_number() % 1024, *given)
    """)


def differences(pairs: list[tuple[str, str]]) -> list[list[int]]:
    """Per place read (the reader's pipe, shared map, channel and output: the first and third
    from one counter, the others from the other), each pair's difference from the place set."""
    found = [[], [], [], []]
    for set_output, read_output in pairs:
        chosen = [int(v) for v in set_output.split("set", 1)[1].split()[:2]]
        read = [int(v) for v in read_output.split("read", 1)[1].split()]
        for place, r in enumerate(read):
            found[place].append((r - chosen[place % 2]) % BATCH)
    return found


def unsandboxed_pair() -> tuple[str, str]:
    """SETTER, then READER, each in a process of its own on one CPU, as an unprivileged user
    outside the sandbox; their outputs."""
    pair = program(f"""
        import ctypes, os, secrets, sys  # (the standard library may be unreadable to nobody)
        os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        for text in ({SETTER!r}, {READER!r}):
            if os.fork() == 0:
                exec(text, {{}})
                sys.stdout.flush()
                os._exit(0)
            os.wait()
        """)
    command = [sys.executable, "-c", pair]
    result = subprocess.run(
        command, cwd="/", capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    set_output, read_output = result.stdout.splitlines()
    return set_output, read_output


TRIALS = 12


@needs_root
def test_a_jobs_place_in_the_inode_counters_does_not_reach_the_next_job():
    # control: the reader finds itself just after the setter's place (other processes on the
    # CPU take a few numbers between them: 3 to 77 here), which chance puts there 1 in 16 times
    control = differences([unsandboxed_pair() for _ in range(8)])[:2]
    assert all(sum(d < BATCH // 16 for d in counter) >= 5 for counter in control), control
    jobs = [job(p + HONEST, GENEROUS) for _ in range(TRIALS) for p in (SETTER, READER)]
    verdicts = run_jobs([*jobs, job(HONEST)], workers=1)  # one slot: each reader follows a setter
    assert all(v.passed for v in verdicts), [v for v in verdicts if not v.passed]
    pairs = [(s.output, r.output) for s, r in zip(verdicts[:-1:2], verdicts[1:-1:2], strict=True)]
    # on main every difference repeated (11 and 12 of 12 for the reader's own pipe and map, 12 of
    # 12 for the channel and output it was given), and with moves made at the spawn, after the
    # next job's descriptors, still 12 of 12 for those; made before anything of the next job,
    # the places are independent: 12 of them share one difference 5 times with chance ~1e-9
    for counter in differences(pairs):
        assert max(Counter(counter).values()) <= 4, counter
