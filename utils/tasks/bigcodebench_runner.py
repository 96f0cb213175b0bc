"""The unittest runner a BigCodeBench job runs inside its sandboxed candidate process.

This file's source is the start of every BigCodeBench job's program (`bigcodebench.job`): the
candidate process loads it with the calibrated solution appended as `CANDIDATE_CODE`, and the
trusted test calls `run_bigcodebench(test_code, time_limit)`, which runs the task's `TestCases`
the way BigCodeBench's `unsafe_execute` does (its `eval/__init__.py`; behaviour read there, code
written here):

- the solution and the test are one module, `__test__` (solution + "\\n" + test), executed in a
  fresh scratch directory under the job's own `/tmp`, which is the working directory (tests
  create and read files there);
- BigCodeBench's pinned libraries first on the path (`bigcodebench_libs`);
- the environment BigCodeBench's `reliability_guard` sets: TZ=UTC, one OpenMP thread, the
  TensorFlow log switches, `exit` and `quit` removed, matplotlib figures closed; stdout, stderr
  and stdin swallowed, and subprocesses' output piped unless the caller captures it;
- `unittest.TestLoader().loadTestsFromTestCase(TestCases)` run into a `unittest.TestResult`,
  each test under its own wall-clock limit (SIGALRM, as BigCodeBench's `time_limit`, which
  wraps the whole suite; the job's CPU-time limit covers the suite).

It returns plain data only: how many tests ran, each failing test's name with the end of its
traceback, and an error that stopped the module from loading. Only the standard library is
imported at load time, so a job costs nothing before its test runs. The isolation (no network,
no host files, limits) is the sandbox's, not this file's.
"""

import builtins
import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
import unittest

TRACE_KEPT = 1500  # characters kept from the end of a failing test's traceback


class TimeoutException(Exception):
    """Raised inside a test that ran past its time limit."""


class _WriteOnly(io.StringIO):
    """stdin/stdout/stderr for the test: writes vanish, reads fail (as BigCodeBench's)."""

    def read(self, *args, **kwargs):
        raise OSError("stdin is not readable")

    readline = readlines = read

    def readable(self):
        return False


@contextlib.contextmanager
def _swallowed_io():
    stream = _WriteOnly()
    popen, run = subprocess.Popen, subprocess.run

    def piped(function):
        def call(*args, **kwargs):
            if kwargs.get("capture_output"):
                kwargs.pop("stdout", None)
                kwargs.pop("stderr", None)
            else:
                kwargs.setdefault("stdout", subprocess.PIPE)
                kwargs.setdefault("stderr", subprocess.PIPE)
            return function(*args, **kwargs)

        return call

    old_stdin = sys.stdin
    subprocess.Popen, subprocess.run, sys.stdin = piped(popen), piped(run), stream
    try:
        with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
            yield
    finally:
        subprocess.Popen, subprocess.run, sys.stdin = popen, run, old_stdin


class _LimitedResult(unittest.TestResult):
    """A TestResult that gives each test its own wall-clock limit, armed when the test starts
    (before its setUp) and disarmed when it stops."""

    def __init__(self, limit):
        super().__init__()
        self.limit = limit

    def startTest(self, test):
        def expire(signum, frame):
            raise TimeoutException("Timed out!")

        signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.limit)
        super().startTest(test)

    def stopTest(self, test):
        signal.setitimer(signal.ITIMER_REAL, 0)
        super().stopTest(test)


def _prepare_environment(libs):
    if libs:  # BigCodeBench's pinned libraries come before the environment's own
        sys.path.insert(0, libs)
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.chdir(tempfile.mkdtemp(prefix="bigcodebench-"))
    builtins.exit = None
    builtins.quit = None
    with contextlib.suppress(ImportError):
        import matplotlib.pyplot as plt

        plt.close("all")


def _trace_end(trace):
    return str(trace)[-TRACE_KEPT:]


def run_bigcodebench(test_code, time_limit, libs=""):
    """Run `CANDIDATE_CODE` + the task's test as BigCodeBench does, with the folder `libs`
    first on the path; plain data back:
    {"ran": tests run, "failures": [[name, traceback end], ...], "error": load error or ""}."""
    _prepare_environment(libs)
    module = types.ModuleType("__test__")
    module.__dict__.update(
        {
            "__builtins__": builtins,
            "__file__": "__test__.py",
            "__package__": None,
            "__doc__": None,
            "sys": sys,
            "os": os,
            "environ": os.environ,
        }
    )
    result = _LimitedResult(float(time_limit))
    try:
        with _swallowed_io():
            source = CANDIDATE_CODE + "\n" + test_code  # noqa: F821 (appended to this file)
            exec(compile(source, "__test__.py", "exec"), module.__dict__)  # noqa: S102
            sys.modules["__test__"] = module
            unittest.TestLoader().loadTestsFromTestCase(module.TestCases).run(result)
    except BaseException as exc:  # noqa: BLE001 (the module failed: BigCodeBench's "ALL")
        return {
            "ran": result.testsRun,
            "failures": [],
            "error": f"{type(exc).__name__}: {_trace_end(exc)}",
        }
    failures = [
        [test.id().split(".")[-1], _trace_end(trace)]
        for test, trace in result.failures + result.errors
    ]
    return {"ran": result.testsRun, "failures": failures, "error": ""}
