"""Forging a BigCodeBench pass: programs written to cheat, each a wrong solution plus one trick
to make the test report a pass, each followed in the same batch by an honest job that passes.
The closed routes fail with a reason naming the defence; test_bigcodebench_redteam_values.py has
the lying values, the helpers swapped for a while, and the routes that stay open
(tasks/bigcodebench/README.md, "Forged verdicts").

The jobs need no library beyond the standard one (the test class is synthetic), so these tests
run wherever the sandbox does."""

import os
import textwrap

import pytest

from evalpack import execution
from evalpack.hooks.bigcodebench import task as bigcodebench

TEST = """
import os
import unittest
class TestCases(unittest.TestCase):
    def test_writes(self):
        path = task_func("out.txt")
        self.assertEqual(open("out.txt").read(), "hello")
        self.assertTrue(os.path.abspath(path).startswith("/tmp/"))
    def test_again(self):
        self.assertEqual(open(task_func("b.txt")).read(), "hello")
"""
DOC = {"test": TEST, "timeout": 10.0}
# every layer (the channel forger needs sockets, which the fallback level refuses)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="full isolation needs root")
HONEST = (
    "import os\ndef task_func(name):\n    with open(name, 'w') as fh:\n"
    "        fh.write('hello')\n    return os.path.abspath(name)\n"
)
WRONG = HONEST.replace("'hello'", "'wrong'")


def cheat(trick, solution=WRONG):
    """`trick` (module-level code; `CHEAT()` inside the solution calls its `cheat` function)."""
    return textwrap.dedent(trick).lstrip("\n") + "\n" + solution


IN_TASK = WRONG.replace("def task_func(name):\n", "def task_func(name):\n    cheat()\n")
# the runner's report, all passed, as a forger would write it (its MAC cannot be known)
FORGED = "{'tests': {'test_again': 'passed', 'test_writes': 'passed'}, 'failures': [], 'error': '', 'made': '', 'mac': '0' * 64}"

# name: (program, a fragment of the failing verdict's reason)
CHEATS = {
    "sys.exit at import": (cheat("import sys\nsys.exit(0)"), "module failed: SystemExit"),
    "os._exit in the test": (cheat("import os\ndef cheat():\n    os._exit(0)", IN_TASK), ""),
    "SIGKILL itself": (
        cheat("import os, signal\ndef cheat():\n    os.kill(os.getpid(), signal.SIGKILL)", IN_TASK),
        "",
    ),
    "KeyboardInterrupt": (
        cheat("def cheat():\n    raise KeyboardInterrupt", IN_TASK),
        "module failed: KeyboardInterrupt",
    ),
    "SkipTest": (
        cheat("import unittest\ndef cheat():\n    raise unittest.SkipTest('no')", IN_TASK),
        "(skipped: counted as failures)",
    ),
    "patch TestCase asserts": (
        cheat("""
            import unittest
            unittest.TestCase.assertEqual = lambda *a, **k: None
            unittest.TestCase.assertTrue = lambda *a, **k: None
            """),
        "changed the test machinery: unittest.case.TestCase.assert",
    ),
    "patch an assert and put it back": (
        cheat(
            """
            import unittest
            ORIGINAL = unittest.TestCase.assertEqual
            def fake(self, *args, **kwargs):
                unittest.TestCase.assertEqual = ORIGINAL
            def cheat():
                unittest.TestCase.assertEqual = fake
            """,
            IN_TASK,
        ),
        "changed the test machinery: unittest.case.TestCase.assertEqual",
    ),
    "patch TestCase.run": (
        cheat("""
            import unittest
            def run(self, result=None):
                result.startTest(self)
                result.addSuccess(self)
                result.stopTest(self)
            unittest.TestCase.run = run
            unittest.TestCase.__call__ = run
            """),
        "changed the test machinery: unittest.case.TestCase",
    ),
    "patch TestResult": (
        cheat("""
            import unittest
            unittest.TestResult.addFailure = lambda *a: None
            unittest.TestResult.addError = lambda *a: None
            """),
        "module failed",
    ),
    "no tests loaded": (
        cheat("import unittest\nunittest.TestLoader.getTestCaseNames = lambda self, cls: []"),
        "changed the test machinery: unittest.loader.TestLoader.getTestCaseNames",
    ),
    "a fake unittest module": (
        cheat("""
            import sys, types, unittest
            fake = types.ModuleType("unittest")
            class TestCase(unittest.TestCase):
                def assertEqual(self, *a, **k):
                    pass
                assertTrue = assertEqual
            fake.TestCase = TestCase
            sys.modules["unittest"] = fake
            """),
        "TestCases is not a class on unittest.TestCase",
    ),
    "__build_class__": (
        cheat("""
            import builtins
            build = builtins.__build_class__
            def fake(body, name, *bases, **kw):
                cls = build(body, name, *bases, **kw)
                for attr in list(vars(cls)):
                    if attr.startswith("test"):
                        setattr(cls, attr, lambda self: None)
                return cls
            builtins.__build_class__ = fake
            """),
        "changed the test machinery: builtins.__build_class__",
    ),
    "rebind the test's names": (
        cheat("def cheat():\n    globals()['TestCases'] = None", IN_TASK),
        "changed the test machinery: __test__.TestCases",
    ),
    "forged report on the channel": (
        cheat(
            f"""
            import os, socket, stat, time
            from evalpack.sandbox.messages import encode_message
            def cheat():
                message = encode_message({{"result": {FORGED}}})
                for fd in range(3, 64):
                    try:
                        if stat.S_ISSOCK(os.fstat(fd).st_mode):
                            socket.socket(fileno=fd).sendall(message)
                    except OSError:
                        pass
                time.sleep(60)
            """,
            IN_TASK,
        ),
        "not sealed with the job's secret",
    ),
    "rewrite the report on its way out": (
        cheat("""
            import sys
            def rewriting(encode):
                def rewrite(message):
                    report = message.get("result")
                    if isinstance(report, dict) and "tests" in report:
                        report["tests"] = {name: "passed" for name in report["tests"]}
                        report["failures"], report["error"] = [], ""
                    return encode(message)
                return rewrite
            harness = [m for m in list(sys.modules.values()) if hasattr(m, "_answer")]
            assert harness, "the harness is not where this cheat looks"
            for module in harness:
                module.encode_message = rewriting(module.encode_message)
            """),
        "not sealed with the job's secret",
    ),
    "shadow a builtin the test uses": (
        (
            "class Text(str):\n    def __eq__(self, other):\n        return True\n"
            "class File:\n    def read(self):\n        return Text('')\n"
            "def open(name, *args, **kwargs):\n    return File()\n"
            "def task_func(name):\n    return Text(name)\n"
        ),
        "changed the test machinery: __test__.open (shadows the builtin the test uses)",
    ),
    "walk the frames": (
        cheat("import sys\ndef cheat():\n    sys._getframe(1).f_locals", IN_TASK),
        "refused by the BigCodeBench runner: a frame",
    ),
    "inspect.currentframe": (
        cheat("import inspect\ndef cheat():\n    inspect.currentframe().f_back", IN_TASK),
        "refused by the BigCodeBench runner: a frame",
    ),
    "a traceback's frame": (
        cheat(
            "def cheat():\n    try:\n        1 / 0\n    except ZeroDivisionError as e:\n"
            "        e.__traceback__.tb_frame.f_back",
            IN_TASK,
        ),
        "refused by the BigCodeBench runner: a frame",
    ),
    "a signal handler's frame": (
        cheat(
            "import signal\ndef cheat():\n    signal.signal(signal.SIGUSR1, lambda s, f: None)",
            IN_TASK,
        ),
        "signal only works in main thread",
    ),
    "settrace": (
        cheat("import sys\nsys.settrace(lambda *a: None)"),
        "refused by the BigCodeBench runner: sys.settrace",
    ),
    "another audit hook": (
        cheat("""
            import sys, unittest
            def hook(event, args):  # would put back what it changed whenever the runner looks
                pass
            sys.addaudithook(hook)  # refused: not added (CPython then says nothing)
            """),
        "2 of 2 tests failed",
    ),
    "gc walk": (
        cheat("import gc\ndef cheat():\n    gc.get_objects()", IN_TASK),
        "refused by the BigCodeBench runner: gc.get_objects",
    ),
    "gc referents": (
        cheat("import gc\ndef cheat():\n    gc.get_referents(cheat)", IN_TASK),
        "refused by the BigCodeBench runner: gc.get_referents",
    ),
    "ctypes": (
        cheat("import ctypes\ndef cheat():\n    ctypes.string_at(id(cheat), 8)", IN_TASK),
        "refused by the BigCodeBench runner: ctypes",
    ),
    "libc through ctypes": (
        cheat("import ctypes\ndef cheat():\n    ctypes.CDLL('libc.so.6')", IN_TASK),
        "OSError: refused by the BigCodeBench runner: ctypes.dlopen",
    ),
    "/proc/self/mem through a link": (
        cheat(
            "import os\ndef cheat():\n    os.symlink('/proc/self/mem', 'm')\n    open('m', 'rb')",
            IN_TASK,
        ),
        "refused by the BigCodeBench runner: opening that path",
    ),
    "replace a test's code": (
        cheat(
            "def cheat():\n    TestCases.test_again.__code__ = (lambda self: None).__code__",
            IN_TASK,
        ),
        "refused by the BigCodeBench runner: setting __code__",
    ),
    "code under a library's name": (
        cheat(
            "def cheat():\n    exec(compile('import sys; sys._getframe(1)', "
            "'/usr/lib/python3/os.py', 'exec'))",
            IN_TASK,
        ),
        "refused by the BigCodeBench runner: compiling under a file's name",
    ),
}


def run(programs):
    return execution.run_jobs([bigcodebench.job(DOC, program) for program in programs])


@needs_root
def test_cheats_fail_and_honest_jobs_after_them_pass():
    programs = [p for program, _ in CHEATS.values() for p in (program, HONEST)]
    verdicts = run(programs)
    wrong = []
    for (name, (_, reason)), verdict, honest in zip(CHEATS.items(), verdicts[::2], verdicts[1::2]):
        if verdict.passed or reason not in verdict.reason:
            wrong.append(f"{name}: {verdict.outcome}: {verdict.reason}")
        if not honest.passed:
            wrong.append(f"honest job after {name}: {honest.reason}")
    assert not wrong, "\n".join(wrong)


def test_the_wrong_solution_fails_and_the_honest_one_passes():
    wrong, honest = run([WRONG, HONEST])
    assert not wrong.passed and "2 of 2 tests failed" in wrong.reason
    assert honest.passed, honest.reason
