"""Red-team attacks on the verdict and on the machine's resources (run by test_redteam.py):
real candidate programs for `add(a, b)` that try to pass without adding or to break the
harness, each with the verdict it must get."""

from evalpack import execution
from tests.conftest import DATA_DIR, REPO
from tests.sandbox.conftest import HONEST, probe, program

HUMANEVAL = DATA_DIR / "openai__openai_humaneval/default/test.jsonl"

# name -> (candidate program, regex the verdict "outcome: reason" must match)
CHEATS = {
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
}
