"""Red team: every attack is a real candidate program for `add(a, b)` that tries to pass
without adding, to escape, or to break the harness (`.venv/bin/pytest tests/sandbox -k redteam
-v`, as root like CI). "Escape probes" behave honestly only if their escape worked, so their
failing proves the escape was blocked. After the batch: no attack passed, each for the expected
reason, nothing outside the sandbox changed, no sandbox process is left, and the honest job
that follows each attack in the same batch passed.
"""

import re
import socket
import threading
from pathlib import Path

import pytest

from evalpack import execution
from evalpack.execution import run_jobs
from tests.conftest import DATA_DIR, REPO
from tests.sandbox.conftest import DISHONEST, HONEST, job, needs_root, probe, program

CANARY_DIR = REPO / ".redteam-canary"
CANARY = CANARY_DIR / "keep.txt"
HOST_TMP_FILE = Path("/tmp/evalpack-redteam-was-here")
HOST_SHM_FILE = Path("/dev/shm/evalpack-redteam-was-here")
UNIX_SOCKET = Path("/tmp/evalpack-redteam.sock")
IPC_KEY = 0x5EED  # System V IPC key an attack creates objects under
HUMANEVAL = DATA_DIR / "openai__openai_humaneval/default/test.jsonl"


# name -> (candidate program, regex the verdict "outcome: reason" must match)
ATTACKS = {
    # ---- forging the verdict
    "sys_exit_at_import": ("import sys\nsys.exit(0)\n", "error: .*SystemExit"),
    "os_exit_at_import": ("import os\nos._exit(0)\n", "killed"),
    "atexit_exit_zero": (
        program("""
        import atexit, os
        atexit.register(lambda: os._exit(0))
        def add(a, b):
            return 0
        """),
        "failed: assertion",
    ),
    "system_exit_in_function": ("def add(a, b):\n    raise SystemExit(0)\n", "error: .*SystemExit"),
    "os_exit_in_function": ("import os\ndef add(a, b):\n    os._exit(0)\n", "killed"),
    "always_equal_object": (
        program("""
        class E:
            def __eq__(self, other):
                return True
        def add(a, b):
            return E()
        """),
        "error: .*not plain data",
    ),
    "always_equal_int_subclass": (
        program("""
        class I(int):
            def __eq__(self, other):
                return True
        def add(a, b):
            return I(0)
        """),
        "error: .*not plain data",
    ),
    "always_equal_inside_list": (
        program("""
        class E:
            __eq__ = lambda self, other: True
        def add(a, b):
            return [E()]
        """),
        "error: .*not plain data",
    ),
    "monkeypatch_builtins_assert": (
        program("""
        import builtins
        builtins.AssertionError = type('Nope', (Exception,), {})
        builtins.isinstance = lambda *a: True
        def add(a, b):
            return 0
        """),
        "(failed: assertion|killed)",
    ),  # the patched isinstance breaks its own server
    "monkeypatch_sys_modules": (
        program("""
        import sys, types
        sys.modules['unittest'] = types.ModuleType('unittest')
        sys.modules['math'] = None
        def add(a, b):
            return 0
        """),
        "failed: assertion",
    ),
    "monkeypatch_assert_helpers": (
        program("""
        import unittest
        unittest.TestCase.assertEqual = lambda *a, **k: None
        unittest.TestCase.assertTrue = lambda *a, **k: None
        def add(a, b):
            return 0
        """),
        "failed: assertion",
    ),
    "frame_walk_for_expected": (
        program("""
        import sys
        def add(a, b):
            f = sys._getframe()
            while f is not None:
                for v in list(f.f_locals.values()):
                    if isinstance(v, int) and v not in (a, b):
                        return v
                f = f.f_back
            return None
        """),
        "failed: assertion",
    ),
    "gc_walk_for_test_source": (
        program("""
        import gc
        def add(a, b):
            for o in gc.get_objects():
                if isinstance(o, dict) and 'check' in o:
                    o['check'] = lambda c: None
            return 0
        """),
        "failed: assertion",
    ),
    "fake_success_markers": (
        program("""
        print('PASSED')
        print('ALL TESTS PASSED', flush=True)
        def add(a, b):
            print('ok')
            return 0
        """),
        "failed: assertion",
    ),
    "forge_channel_messages": (
        program("""
        import os
        for fd in range(3, 64):
            try:
                os.write(fd, (2**31).to_bytes(4, 'big') + b'{"result": 5}')
            except OSError:
                pass
        def add(a, b):
            return 0
        """),
        "error: .*(non-plain|malformed)",
    ),
    "forge_protocol_reply": (
        program("""
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
        """),
        "error: .*malformed",
    ),
    "trickle_reply_past_the_deadline": (
        program("""
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
        """),
        "timeout",
    ),
    "read_host_processes": (
        probe("""
        import os
        others = [p for p in os.listdir('/proc') if p.isdigit()
                  and os.stat('/proc/' + p).st_uid != os.getuid()]
        assert others, 'no other process visible'
        open('/proc/' + others[0] + '/cmdline').read()
        """),
        "error: .*no other process visible",
    ),
    "read_tests_and_data_from_disk": (
        probe(f"""
        open({str(REPO / "tests" / "test_execution.py")!r}).read()
        open({str(HUMANEVAL)!r}).read()
        """),
        "error: .*FileNotFoundError",
    ),
    # ---- exhausting resources
    "fork_bomb_at_import": (
        program("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """),
        "timeout",
    ),
    "fork_bomb_in_function": (
        program("""
        import os
        def add(a, b):
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
        """),
        "timeout",
    ),
    "memory_bomb": ("x = bytearray(10**11)\n" + HONEST, "error: .*MemoryError"),
    "memory_growth": (
        "hog = []\nwhile True:\n    hog.append(' ' * 10**7)\n",
        "(error: .*MemoryError|timeout)",
    ),  # faulting in 2 GiB may outlast 2 s
    "loop_ignoring_signals": (
        program("""
        import signal
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGXCPU, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        def add(a, b):
            while True:
                pass
        """),
        "timeout",
    ),
    "loop_catching_everything": (
        program("""
        def add(a, b):
            while True:
                try:
                    sum(range(10**6))
                except BaseException:
                    pass
        """),
        "timeout",
    ),
    "huge_output": (
        "import sys\nsys.stdout.write('x' * 10**8)\ndef add(a, b):\n    return 0\n",
        "failed: assertion",
    ),
    "huge_output_raw_fd": (
        probe("""
        import os
        while True:
            os.write(1, b'x' * 10**6)
        """),
        "error: .*File too large",
    ),
    "fill_scratch_disk": (
        probe("""
        for i in range(400):
            with open(f'/tmp/fill{i}', 'wb') as fh:
                fh.write(b'x' * 10**6)
        """),
        "error: .*No space left",
    ),
    "exhaust_file_descriptors": (
        "handles = []\nwhile True:\n    handles.append(open('/dev/null'))\n",
        "error: .*Too many open files",
    ),
    "huge_return_value": (
        f"def add(a, b):\n    return 'x' * {execution.MAX_MESSAGE}\n",
        "error: .*exceeds",
    ),
    "deeply_nested_return": (
        program("""
        def add(a, b):
            x = []
            for _ in range(10**5):
                x = [x]
            return x
        """),
        "failed: assertion",
    ),  # it crosses whole (any depth does) and is unequal to 5
    # ---- the filesystem
    "write_outside": (
        probe(f"open({str(CANARY_DIR / 'pwned.txt')!r}, 'w').write('x')\n"),
        "error: .*FileNotFoundError",
    ),
    "delete_outside": (
        probe(f"import os\nos.remove({str(CANARY)!r})\n"),
        "error: .*FileNotFoundError",
    ),
    "chmod_outside": (
        probe(f"import os\nos.chmod({str(CANARY)!r}, 0o777)\n"),
        "error: .*FileNotFoundError",
    ),
    "write_system_dirs": (
        probe("open('/usr/pwned', 'w').write('x')\n"),
        "error: .*(PermissionError|Read-only)",
    ),
    "write_host_tmp": (
        f"open({str(HOST_TMP_FILE)!r}, 'w').write('x')\n" + DISHONEST,
        "failed: assertion",
    ),
    "write_host_dev_shm": (
        f"open({str(HOST_SHM_FILE)!r}, 'w').write('x')\n" + DISHONEST,
        "failed: assertion",
    ),
    "chdir_and_poison_later_jobs": (
        program("""
        import os
        os.chdir('/tmp')
        open('math.py', 'w').write('raise SystemExit')
        open('/tmp/work/random.py', 'w').write('raise SystemExit')
        def add(a, b):
            return 0
        """),
        "failed: assertion",
    ),
    "sysv_ipc_left_behind": (
        program(f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        for make in (libc.shmget, libc.msgget):
            args = ({IPC_KEY}, 4096, 0o1666) if make is libc.shmget else ({IPC_KEY}, 0o1666)
            if make(*args) < 0:
                raise OSError(ctypes.get_errno(), 'ipc')
        """)
        + DISHONEST,
        "failed: assertion",
    ),
    "chroot_or_mount_escape": (
        probe("""
        import os
        os.makedirs('jail', exist_ok=True)
        os.chroot('jail')
        """),
        "error: .*PermissionError",
    ),
    "user_namespace_escape": (
        probe("""
        import ctypes
        if ctypes.CDLL(None).unshare(0x10000000 | 0x00020000) != 0:
            raise PermissionError('unshare refused')
        """),
        "error: .*PermissionError",
    ),
    "become_root": (probe("import os\nos.setuid(0)\n"), "error: .*PermissionError"),
    # ---- the network
    "socket_loopback": (
        probe("""
        import socket
        socket.create_connection(('127.0.0.1', PORT), 2).sendall(b'leak')
        """),
        "error: .*OSError",
    ),
    "socket_outside": (
        probe("""
        import socket
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53))
        """),
        "error: .*OSError",
    ),
    "unix_socket_on_host": (
        probe(f"""
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.connect({str(UNIX_SOCKET)!r})
        s.sendall(b'leak')
        """),
        "error: .*FileNotFoundError",
    ),
    # ---- other processes
    "signal_parent": (
        "import os\nos.kill(os.getppid(), 9)\ndef add(a, b):\n    return 0\n",
        "failed: assertion",
    ),
    "signal_the_harness": (
        probe("""
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
        """),
        "error: .*AssertionError: could not signal",
    ),
    "signal_everything": (
        program("""
        import os
        for p in os.listdir('/proc'):
            if p.isdigit():
                try:
                    os.kill(int(p), 9)
                except OSError:
                    pass
        def add(a, b):
            return 0
        """),
        "failed: assertion",
    ),
    "read_harness_environment": (
        probe("open('/proc/1/environ', 'rb').read()\n"),
        "error: .*(PermissionError|FileNotFoundError)",
    ),
    "orphan_setsid_child": (
        program("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        def add(a, b):
            return 0
        """),
        "failed: assertion",
    ),
    "syntax_error": ("def add(a, b)\n    return a + b\n", "error: .*SyntaxError"),
}


def host_ipc_objects(key):
    """System V shared memory segments and message queues under `key` on the host."""
    return [
        line
        for kind in ("shm", "msg")
        for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        if int(line.split()[0]) == key
    ]


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
