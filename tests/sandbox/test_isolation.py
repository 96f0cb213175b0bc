"""Isolation, hole by hole: one or more attacks per class of hole (keyrings, secrets, oversized requests, decoding cost, per-job memory, CPU starvation, socket families and
other kernel interfaces). Each attack is a real candidate program for `add(a, b)` and is
followed by an honest job that must pass. Escape probes behave honestly only when their escape
works, so their failing proves it was blocked; where the probe's escape depends on the kernel,
a control run outside the sandbox (as an unprivileged user) shows that it would work there.
"""

import glob
import os
import re
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from evalpack import execution
from evalpack.execution import run_jobs
from evalpack.sandbox import harness, pool
from evalpack.sandbox.limits import TCP_MEMORY_LIMIT, WALL_EXTRA, WALL_FACTOR
from tests.sandbox.conftest import HONEST, forged_reply, job, needs_root, probe, program

SYSCALLS = {  # add_key, keyctl, socket, io_uring_setup, userfaultfd, perf_event_open, ptrace
    "x86_64": (248, 250, 41, 425, 323, 298, 101),
    "aarch64": (217, 219, 198, 425, 282, 241, 117),
}[os.uname().machine]
ADD_KEY, KEYCTL, SOCKET, IO_URING_SETUP, USERFAULTFD, PERF_EVENT_OPEN, PTRACE = SYSCALLS
pytestmark = needs_root


def with_honest(*attacks):
    """Each attack job followed by an honest one."""
    return [j for attack in attacks for j in (attack, job(HONEST))]


def check_attacks(verdicts, expected):
    """Attacks at even positions match `expected` ("outcome: reason" regexes); the honest job
    after each passed."""
    for pattern, attack, honest in zip(expected, verdicts[::2], verdicts[1::2], strict=True):
        assert not attack.passed, attack
        assert re.match(pattern, f"{attack.outcome}: {attack.reason}"), (pattern, attack)
        assert honest.passed, honest
    assert execution.sandbox_processes() == []


def works_unsandboxed(escape):
    """Control: `escape` succeeds as an unprivileged user outside the sandbox."""
    drop = "import ctypes, os\nos.setgroups([])\nos.setgid(65534)\nos.setuid(65534)\n"
    result = subprocess.run(
        [sys.executable, "-c", drop + program(escape)],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return result.returncode == 0


# ---- 1. cross-job state through the kernel keyrings
KEY_STORE = f"""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall({ADD_KEY}, b"user", b"evalpack-redteam-seen", b"5", 1, ctypes.c_long(-4)) < 0:
        raise OSError(ctypes.get_errno(), "add_key refused")
    """
KEY_LOOKUP = program(f"""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    SEEN = libc.syscall({KEYCTL}, 10, ctypes.c_long(-4), b"user", b"evalpack-redteam-seen", 0)
    def add(a, b):
        return a + b if SEEN >= 0 else 0  # honest only with what an earlier job left behind
    """)


def test_keyrings_carry_nothing_from_job_to_job():
    storer = probe(KEY_STORE)
    verdicts = run_jobs(with_honest(job(storer), job(KEY_LOOKUP)), workers=1)
    check_attacks(verdicts, ["error: .*PermissionError.*add_key refused", "failed: assertion"])
    later = run_jobs(with_honest(job(KEY_LOOKUP)), workers=1)  # nor into a later batch
    check_attacks(later, ["failed: assertion"])


# ---- 2. the harness's secrets
SECRET_SHAPE = "sk-redteam-[0-9a-f]{32}"  # this pattern's own text does not match it
READ_ENVIRONMENTS = f"""
    import os, re
    found = [v for v in os.environ.values() if re.search({SECRET_SHAPE!r}, v)]
    for path in ("/proc/self/environ", "/proc/1/environ", f"/proc/{{os.getppid()}}/environ"):
        try:
            found += re.findall({SECRET_SHAPE!r}.encode(), open(path, "rb").read())
        except OSError:
            pass
    print("found:", found)
    assert found, "no secret found"
    """
SCAN_OWN_MEMORY = f"""
    import ctypes, re
    found = []
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps.read().splitlines()]
    for region in regions:  # the heap, the stack and anonymous memory, read in place
        start, end = (int(x, 16) for x in region[0].split("-"))
        if region[1].startswith("r") and (len(region) < 6 or region[5] in ("[heap]", "[stack]")):
            found += re.findall({SECRET_SHAPE!r}.encode(), ctypes.string_at(start, end - start))
    print("found:", found)
    assert found, "no secret found"
    """


def test_no_secret_of_the_users_environment_reaches_a_candidate(monkeypatch):
    secret = "sk-redteam-" + secrets.token_hex(16)
    monkeypatch.setenv("EVALPACK_REDTEAM_API_KEY", secret)
    verdicts = run_jobs(
        with_honest(job(probe(READ_ENVIRONMENTS)), job(probe(SCAN_OWN_MEMORY), timeout=10))
    )
    check_attacks(verdicts, ["error: .*no secret found"] * 2)
    assert "found: []" in verdicts[0].output and "found: []" in verdicts[2].output
    assert all(secret not in v.reason + v.output for v in verdicts)


# ---- 3. an oversized request, and errors between the harness and its zygote
def test_an_oversized_program_is_refused_before_sending_and_poisons_nothing(capfd):
    oversized = "# " + "x" * execution.MAX_MESSAGE + "\n" + HONEST
    verdicts = run_jobs(with_honest(job(oversized), job(oversized)), workers=1)
    check_attacks(verdicts, ["error: program not sent: .*exceeds"] * 2)
    assert "Traceback" not in capfd.readouterr().err


def test_slot_failures_replace_the_zygote_and_leak_no_descriptors():
    """In this process (no worker), so that its descriptors can be counted; it joins the
    slot's CPU group and its CPU for the while, and leaves them."""
    oversized = "# " + "x" * execution.MAX_MESSAGE + "\n" + HONEST
    groups, cpus = Path("/proc/self/cgroup").read_text(), os.sched_getaffinity(0)
    try:
        assert harness.run_job(job(HONEST)).passed
        descriptors = sorted(os.listdir("/proc/self/fd"))
        for _ in range(3):
            assert harness.run_job(job(oversized)).outcome == "error"
            assert harness.run_job(job(HONEST)).passed
        assert sorted(os.listdir("/proc/self/fd")) == descriptors
        broken = pool.current()
        broken.control.shutdown(socket.SHUT_RDWR)  # the zygote's line fails mid-request
        with pytest.raises(OSError):
            harness.run_job(job(HONEST))
        assert harness.run_job(job(HONEST)).passed
        assert pool.current() is not broken and broken.zygote.poll() is not None
    finally:
        pool.close()
    assert execution.sandbox_processes() == []
    assert Path("/proc/self/cgroup").read_text() == groups
    assert os.sched_getaffinity(0) == cpus


def test_a_zygote_that_ran_a_prelude_serves_full_runtime_jobs_only():
    """Such a zygote shows itself the whole installation (`Job.zygote_prelude`): a job of the
    in-memory view sent to it (past `Job`'s own check) never runs there; the zygote ends, and
    the next job gets a fresh one."""
    full = job(HONEST, full_runtime=True, zygote_prelude="import json\n")
    sneaked = job(HONEST)
    object.__setattr__(sneaked, "zygote_prelude", full.zygote_prelude)
    verdicts = run_jobs([full, sneaked, full], workers=1)
    assert [v.outcome for v in verdicts] == ["passed", "error", "passed"], verdicts


# ---- 4. decoding cost on the trusted side


ONE_HASH = "(2**61 - 1)"  # every multiple of it hashes to 0


def test_decoding_hash_colliding_values_stops_at_the_time_limit():
    colliding_set = forged_reply(
        f'["S", 150000] + [t for k in range(150000) for t in ("i", k * {ONE_HASH})]'
    )
    colliding_dict = forged_reply(
        f'["d", 150000] + [t for k in range(150000) for t in ("i", k * {ONE_HASH}, "N", None)]'
    )
    too_many = forged_reply(
        f'["l", {execution.MAX_VALUES + 1}] + ["N", 0] * {execution.MAX_VALUES + 1}'
    )
    # too_many: a limit its own encoding (0.7 s of CPU) never reaches, so that the refusal,
    # not the candidate's clock, ends it
    verdicts = run_jobs(
        with_honest(job(colliding_set, 1.0), job(colliding_dict, 1.0), job(too_many, 30.0))
    )
    check_attacks(
        verdicts, ["timeout: time limit", "timeout: time limit", "error: .*more than .* values"]
    )
    # stopped within the job's time bound (by its CPU limit, or its wall-clock backstop when a
    # loaded machine starves it), not after the whole decode: 13 to 61 s of CPU. CPU time,
    # not wall time, which a loaded machine stretches past any bound.
    assert all(v.cpu_seconds < WALL_FACTOR * 1.0 + WALL_EXTRA for v in verdicts[:4:2]), verdicts


# ---- 5. memory per job, not per process
HOG = 700 * 2**20
HOLD_MORE_THAN_THE_JOB_LIMIT = f"""
    import ctypes, os, select, time
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    held = []
    for _ in range(40):  # 600 MiB of shared memory, detached: no address-space limit counts it
        segment = libc.shmget(0, 15 * 2**20, 0o1600)  # (memfd_create is refused: issue 47)
        at = libc.shmat(segment, None, 0)
        ctypes.memset(at, 120, 15 * 2**20)
        libc.shmdt(ctypes.c_void_p(at))
        held.append(segment)
    ready, done = os.pipe()
    kids = []
    for _ in range(3):  # and three processes of 700 MiB each, each within its own limit
        kids.append(os.fork())
        if kids[-1] == 0:
            hog = b"x" * {HOG}
            os.write(done, b"k")
            time.sleep(60)
    got = b""
    while len(got) < 3 and all(os.waitpid(kid, os.WNOHANG) == (0, 0) for kid in kids):
        if select.select([ready], [], [], 0.2)[0]:  # however long a loaded machine takes
            got += os.read(ready, 3)
    time.sleep(0.5)  # all three still alive, all at once
    alive = all(os.waitpid(kid, os.WNOHANG) == (0, 0) for kid in kids)
    assert got == b"kkk" and alive and len(held) == 40, "could not hold it all"
    """


def test_memory_is_limited_per_job_shared_memory_included():
    verdicts = run_jobs(with_honest(job(probe(HOLD_MORE_THAN_THE_JOB_LIMIT), timeout=20)))
    check_attacks(verdicts, ["(error|killed|timeout)"])
    assert verdicts[0].limit == "memory", verdicts[0]
    assert "memory limit" in verdicts[0].reason


# ---- 6. CPU isolation between slots
SPIN_IN_NEW_SESSIONS = program("""
    import os, time
    for _ in range(12):
        if os.fork() == 0:
            os.setsid()  # a session of its own: its own scheduler autogroup
            while True:
                pass
    def add(a, b):
        time.sleep(60)
    """)
HONEST_BUSY = program("""
    import time
    time.sleep(0.3)  # let the neighbour's spinners start
    total = sum(range(8 * 10**6))  # about 0.2 to 0.4 s of CPU
    def add(a, b):
        return a + b
    """)


def test_a_job_starting_many_sessions_cannot_starve_its_neighbour():
    # the busy neighbour's limit: 0.4 s of CPU within a wall-clock backstop of 11 s, which even
    # a loaded machine's share of a core gives it; its CPU time, its own work only
    verdicts = run_jobs([job(SPIN_IN_NEW_SESSIONS, 3.0), job(HONEST_BUSY, 3.0)], workers=2)
    spinner, busy = verdicts
    assert spinner.outcome == "timeout", spinner  # by CPU, or by wall on a loaded machine
    assert busy.passed and busy.cpu_seconds < 1.0, busy
    assert execution.sandbox_processes() == []


# ---- 7. socket families and other kernel interfaces
OTHER_SOCKET_FAMILIES = f"""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    made = []
    for family, kind in ((40, 1), (16, 3), (16, 2), (38, 5)):  # vsock, netlink, alg
        fd = libc.syscall({SOCKET}, family, kind, 0)
        if fd >= 0:
            made.append(family)
    print("made:", made)
    assert made, "no socket of another family"
    """
KERNEL_INTERFACES = f"""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    attr = bytearray(128)
    attr[0:8] = (1).to_bytes(4, "little") + (128).to_bytes(4, "little")  # software cpu clock
    attr[40] = 0b1100000  # exclude kernel and hypervisor: allowed without privileges
    opened = {{
        "io_uring": libc.syscall({IO_URING_SETUP}, 1, ctypes.create_string_buffer(120)),
        "userfaultfd": libc.syscall({USERFAULTFD}, 1),  # user-mode only
        "perf_event_open": libc.syscall({PERF_EVENT_OPEN}, (ctypes.c_char * 128).from_buffer(attr),
                                        0, -1, -1, 0),
    }}
    pid = os.fork()
    if pid == 0:
        os._exit(libc.syscall({PTRACE}, 0, 0, 0, 0) != 0)
    opened["ptrace"] = -os.waitpid(pid, 0)[1]
    print(opened)
    assert any(result >= 0 for result in opened.values()), "every interface refused"
    """


def test_only_unix_and_internet_sockets_and_no_kernel_extras():
    assert works_unsandboxed(OTHER_SOCKET_FAMILIES) and works_unsandboxed(KERNEL_INTERFACES)
    verdicts = run_jobs(
        with_honest(job(probe(OTHER_SOCKET_FAMILIES)), job(probe(KERNEL_INTERFACES)))
    )
    check_attacks(
        verdicts, ["error: .*no socket of another family", "error: .*every interface refused"]
    )
    assert "made: []" in verdicts[0].output


def test_full_isolation_is_reported_as_root():
    assert execution.isolation() == "namespaces+uid+seccomp+cgroups"
    assert execution.network_isolation() == "empty network namespace"
    assert execution.network_isolation(full_runtime=True) == "loopback only"


# ---- 7. A full-runtime job's loopback and the host's TCP memory
# Two processes of 24 loopback connections each, every connection sent to until it would
# block: about 3.7 MiB queued per connection here (the send buffer grows to tcp_wmem's
# maximum), some 180 MiB in all, if nothing holds them back
FILL_LOOPBACK = program("""
    import os, socket, time
    child = os.fork()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(32)
    held = []
    for _ in range(24):
        client = socket.create_connection(server.getsockname())
        held.append((client, server.accept()[0]))
        client.setblocking(False)
        try:
            while True:
                client.send(b"x" * 262144)
        except BlockingIOError:
            pass
    if child == 0:
        time.sleep(60)  # holding its buffers until the job ends
    """)
TCP_GROUPS = "/sys/fs/cgroup/memory/evalpack/slot-*/memory.kmem.tcp.max_usage_in_bytes"


def tcp_peaks() -> dict[str, int]:
    return {path: int(Path(path).read_text()) for path in glob.glob(TCP_GROUPS)}


@needs_root
def test_a_jobs_tcp_buffers_are_held_to_its_own_limit():
    """cgroups v1 leaves socket buffers out of a job's memory limit and counts them against
    the host-wide tcp_mem: a job filling its loopback is held to TCP_MEMORY_LIMIT instead."""
    if not tcp_peaks():
        pytest.skip("cgroups v1 only: v2 counts socket buffers in the job's memory limit")
    for path in tcp_peaks():
        Path(path).write_text("0")  # the high-water mark from now on
    verdicts = run_jobs(with_honest(job(probe(FILL_LOOPBACK), 20.0, full_runtime=True)))
    assert all(v.passed for v in verdicts), verdicts  # it filled what it could, then went on
    # it reached the limit and stayed there, give or take what the kernel charges past a
    # limit rather than drop a packet it already holds (2.2 MiB over here)
    peak = max(tcp_peaks().values())
    assert TCP_MEMORY_LIMIT - 8 * 2**20 <= peak <= TCP_MEMORY_LIMIT + 8 * 2**20, peak
