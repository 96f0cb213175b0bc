"""One job cannot reach another, each attack followed by an honest job that must still pass:
shared kernel state (the page cache, the PID counter), decoding bounded before parsing, the
watchdog never reaching another job, earlier jobs' data in a candidate's memory; and what an
honest program is owed (work the test never asked for decides nothing, exception types, NaNs,
PYTHONPATH). Trusted-worker state: test_worker_state.py."""

import hashlib
import math
import os
import secrets
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from evalpack import execution
from evalpack.execution import Job, from_wire, run_jobs, to_wire
from evalpack.sandbox import harness, pool
from tests.sandbox.conftest import HONEST, TEST, forged_reply, job, needs_root, probe, program


def check_attacks(verdicts, outcomes):
    """Attacks at even positions end with `outcomes`; the honest job after each passed."""
    for outcome, attack, honest in zip(outcomes, verdicts[::2], verdicts[1::2], strict=True):
        assert attack.outcome == outcome, attack
        assert honest.passed, honest
    assert execution.sandbox_processes() == []


def works_unsandboxed(escape):
    """Control: `escape` succeeds as an unprivileged user outside the sandbox."""
    drop = (
        "import ctypes, mmap, os\n"  # (the standard library may be unreadable to nobody)
        "os.setgroups([])\nos.setgid(65534)\nos.setuid(65534)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", drop + program(escape)],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result.returncode == 0


# ---- 1. page-cache residency: no probe, no eviction
RESIDENCY_PROBES = {
    "preadv2 RWF_NOWAIT": """
        import os
        fd = os.open("/etc/passwd", os.O_RDONLY)
        os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
        """,
    "mincore": """
        import ctypes, mmap, os
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open("/etc/passwd", os.O_RDONLY)
        libc.mmap.restype = ctypes.c_void_p
        at = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        vector = ctypes.create_string_buffer(1)
        if libc.mincore(ctypes.c_void_p(at), 4096, vector) != 0:
            raise OSError(ctypes.get_errno(), "mincore")
        """,
    "cachestat": """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open("/etc/passwd", os.O_RDONLY)
        span, stat = (ctypes.c_uint64 * 2)(0, 0), (ctypes.c_uint64 * 5)()
        if libc.syscall(451, fd, span, stat, 0) != 0:  # cachestat (Linux 6.5+)
            raise OSError(ctypes.get_errno(), "cachestat")
        """,
    "madvise PAGEOUT evicts": """
        import ctypes, mmap, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        fd = os.open("/etc/passwd", os.O_RDONLY)
        at = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        vector = ctypes.create_string_buffer(1)
        ctypes.string_at(at, 1)  # mapped and resident
        libc.madvise(ctypes.c_void_p(at), 4096, 21)  # MADV_PAGEOUT
        libc.mincore(ctypes.c_void_p(at), 4096, vector)
        assert not vector.raw[0] & 1, "still resident"
        """,
}


@needs_root
def test_no_candidate_can_probe_or_evict_page_cache_residency():
    working = {name: text for name, text in RESIDENCY_PROBES.items() if works_unsandboxed(text)}
    assert {"preadv2 RWF_NOWAIT", "mincore"} <= set(working)  # controls: the probes are real
    attacks = [job(probe(text)) for text in working.values()]
    fadvise = job(
        program("""
        import os
        fd = os.open("/etc/passwd", os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # advice: ignored, not an error
        """)
        + HONEST
    )
    verdicts = run_jobs(
        [j for attack in attacks for j in (attack, job(HONEST))] + [fadvise], workers=1
    )
    check_attacks(verdicts[:-1], ["error"] * len(attacks))  # refused at import
    assert verdicts[-1].passed, verdicts[-1]


# ---- 2. the host's PID counter and other host-wide /proc files
PID_WRITER = (
    program("""
    import os
    for _ in range(37):  # moves the host's PID counter on by 37
        if os.fork() == 0:
            os._exit(0)
        os.wait()
    """)
    + HONEST
)
PID_READER = program("""
    import os
    SEEN = (os.readlink("/proc/self") != "1" or os.getpid() != 1
            or any(os.path.exists(f"/proc/{name}") for name in ("stat", "loadavg", "sys"))
            or sorted(n for n in os.listdir("/proc") if n.isdigit()) != ["1"])
    def add(a, b):
        return a + b if SEEN else 0  # honest only where it sees host PIDs or counters
    """)


@needs_root
def test_each_candidate_has_its_own_pid_namespace_and_proc():
    verdicts = run_jobs([job(PID_WRITER), job(HONEST), job(PID_READER), job(HONEST)], workers=1)
    assert verdicts[0].passed and verdicts[1].passed, verdicts
    check_attacks(verdicts[2:], ["failed"])


# ---- 3. decoding: bounded before parsing


@needs_root
def test_a_message_of_millions_of_tiny_lists_is_refused_before_parsing():
    tiny_lists = forged_reply('["lj", [[]] * 3_000_000]')
    # a limit the candidate's own encoding (about 0.2 s of CPU) never reaches on a loaded machine:
    # the refusal, not the candidate's clock, must end the job
    verdicts = run_jobs([job(tiny_lists, 5.0), job(HONEST)], workers=1)
    check_attacks(verdicts, ["error"])
    assert "more than" in verdicts[0].reason, verdicts[0]  # refused before parsing


def test_strings_full_of_commas_and_brackets_still_cross():
    value = ["a,b,[c],{d}" * 2 + str(n) for n in range(400_000)]
    assert from_wire(to_wire(value)) == value


# ---- 4. the watchdog never reaches another job
LATE_WORK = (
    TEST
    + """
def late():
    sum(range(3 * 10**7))  # C code no tick interrupts, past the job's limit

check(add)
late()
"""
)


@needs_root
def test_a_failure_after_the_time_limit_never_reaches_the_next_job():
    slow = Job(HONEST, LATE_WORK, "add", 0.1)
    verdicts = run_jobs([slow, job(HONEST)] * 4, workers=1)
    for attack, honest in zip(verdicts[::2], verdicts[1::2], strict=True):
        assert attack.outcome == "timeout" and not attack.reason.startswith("harness"), attack
        assert honest.passed, honest
    previous = signal.getsignal(signal.SIGALRM)
    try:  # in this process: the timer is stopped and the handler put back after each job
        for _ in range(3):
            assert harness.run_job(slow).outcome == "timeout"
            assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
            assert signal.getsignal(signal.SIGALRM) is previous
            assert harness.run_job(job(HONEST)).passed
    finally:
        pool.close()


# ---- 5. a candidate's memory holds its own job's data only
def secret_finder(digests):
    """Passes exactly when it finds, in its own memory (the heap and every anonymous map,
    where the zygote's objects are), a "SECRET-" text whose sha256 is in `digests` (so the
    text itself is nowhere in its own program)."""
    return (
        program(f"""
        import ctypes, hashlib, re
        FOUND = False
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if not fields[1].startswith("r") or (len(fields) > 5 and fields[5] not in (
                        "[heap]", "[stack]")):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                for found in re.finditer(rb"SECRET-[0-9a-f]{{16}}",
                                         ctypes.string_at(start, end - start)):
                    FOUND = FOUND or hashlib.sha256(found.group()).hexdigest() in {digests!r}
        """)
        + "def add(a, b):\n    return a + b if FOUND else 0\n"
    )


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


@needs_root
def test_no_candidate_sees_another_jobs_program_or_plan():
    in_program, in_plan = (f"SECRET-{secrets.token_hex(8)}" for _ in range(2))
    holder = Job(
        HONEST + f"KEPT = {in_program!r}\n",
        TEST + "check(add)\n",
        "add",
        calls=f"[(2, 3), (-1, 1), ({in_plan!r}, '')]",
    )
    finder = job(secret_finder([digest(in_program), digest(in_plan)]))
    verdicts = run_jobs([holder, job(HONEST), finder, job(HONEST)], workers=1)
    assert verdicts[0].passed and verdicts[1].passed, verdicts
    check_attacks(verdicts[2:], ["failed"])
    itself = job(secret_finder([digest(in_program)]) + f"KEPT = {in_program!r}\n")
    assert run_jobs([itself])[0].passed  # control: the finder finds what is in its memory


# ---- 6. faithfulness
BURN = """
import time

def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
"""
AHEAD = program("""
    import os
    def f(n):
        if n:  # work the test never asks for, in 25 spinning processes
            for _ in range(24):
                if os.fork() == 0:
                    break
            while True:
                pass
        return 0
    """)


@needs_root
def test_work_the_test_never_asked_for_decides_no_verdict():
    """The candidate answers its planned calls ahead; the test uses the first answer only,
    after 0.1 s of its own work: one process takes 0.1 s, within the 1 s limit. Ahead, the
    candidate's 25 processes take 25 parts in 26 of the group's core, so the planned attempt
    reaches the limit long before the test's 0.1 s (a ratio within the group, which no load
    outside it changes) and the job must be run again call by call, which needs 0.1 s of CPU
    within a 5 s wall-clock backstop."""
    stops_early = BURN + "answer = f(0)\nburn(0.1)\nassert answer == 0\n"
    fails_first = BURN + "answer = f(0)\nburn(0.1)\nassert answer == 1, 'first check'\n"
    calls = "[(0,), (1,), (2,)]"
    verdicts = run_jobs(
        [
            Job(AHEAD, stops_early, "f", 1.0, calls=calls),
            Job(AHEAD, fails_first, "f", 1.0, calls=calls),
        ],
        workers=1,
    )
    assert [v.outcome for v in verdicts] == ["passed", "failed"], verdicts
    assert "first check" in verdicts[1].reason


EXCEPTIONS = program("""
    import json
    class Mine(KeyError):
        pass
    def f(kind):
        if kind == "decode":
            b"\\xff".decode()
        if kind == "json":
            json.loads("{")
        raise Mine("mine")
    """)
CATCHES = """
import json
for kind, expected in (("decode", UnicodeDecodeError), ("json", json.JSONDecodeError),
                       ("mine", KeyError)):
    try:
        f(kind)
    except ValueError as exc:
        assert type(exc) is expected, (kind, type(exc))
    except KeyError as exc:
        assert expected is KeyError and type(exc) is KeyError, (kind, type(exc))
"""


@needs_root
def test_a_candidates_exception_keeps_its_standard_class():
    assert run_jobs([Job(EXCEPTIONS, CATCHES, "f")])[0].passed


def test_nans_keep_their_sign_and_payload_on_every_path():
    nan = struct.unpack(">d", bytes.fromhex("fff8000000000123"))[0]

    def bits(values):
        return [struct.pack(">d", v).hex() for v in values if type(v) is float]

    for value in ([nan], [nan, 1.0], [nan, "x"] * 10, [nan, None] * 20, [1.5] * 20 + [nan]):
        assert bits(from_wire(to_wire(value))) == bits(value)
    assert math.isnan(from_wire(to_wire({"r": nan}))["r"])


def test_the_zygote_finds_evalpack_where_the_caller_found_it(tmp_path):
    """evalpack importable only through PYTHONPATH (not installed in this interpreter)."""
    interpreter = Path(sys.base_prefix) / "bin" / "python{}.{}".format(*sys.version_info)
    if (
        not interpreter.exists()
        or subprocess.run(
            [interpreter, "-c", "import evalpack"], capture_output=True, check=False
        ).returncode
        == 0
    ):
        pytest.skip("no interpreter without evalpack installed")
    (tmp_path / "evalpack").symlink_to(Path(execution.__file__).parent)
    script = (
        "from evalpack.execution import Job, run_jobs\n"
        f"print(run_jobs([Job({HONEST!r}, {TEST + 'check(add)'!r}, 'add')])[0].outcome)"
    )
    result = subprocess.run(
        [interpreter, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        check=False,
    )
    assert result.stdout.strip() == "passed", result.stderr[-2000:]
