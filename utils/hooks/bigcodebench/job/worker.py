"""The worker-thread half of the BigCodeBench runner (`job/runner.py`).

The runner executes this file's source into a namespace of its own (`WORKER_SOURCE`): the
worker thread that runs the solution and the tests starts in `work`, so what a candidate can
reach by walking its own thread's frames is this namespace and the `box` it was given, never the
runner's namespace, its builtins or its secret. Behaviour as BigCodeBench's `unsafe_execute`:
the solution and the test executed as one module, stdout/stderr/stdin swallowed, subprocesses'
output piped, `TestCases` loaded with `unittest.TestLoader` and run into a result.
"""

import _thread
import contextlib
import functools
import io
import subprocess
import sys
import time
import types
import unittest

TRACE_KEPT = 1500  # characters kept from the end of a failing test's traceback


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


class Recorder(unittest.TestResult):
    """Each test's outcome into `statuses` (name -> "passed", "failed", "error", "skipped",
    "expected failure", "unexpected success"; the first that is not a pass sticks) and the
    failing ones' tracebacks into `traces`; the running test and its start into `current`."""

    def __init__(self, statuses, traces, current):
        super().__init__()
        self.statuses, self.traces, self.current = statuses, traces, current

    def _record(self, test, status, trace=""):
        name = getattr(test, "_testMethodName", None) or str(test)
        if self.statuses.get(name, "passed") == "passed":
            self.statuses[name] = status
            if trace:
                self.traces.append([name, _trace_end(trace)])

    def startTest(self, test):
        self.current[:] = [getattr(test, "_testMethodName", str(test)), time.monotonic()]
        super().startTest(test)

    def stopTest(self, test):
        name = getattr(test, "_testMethodName", str(test))
        self.current[:] = [f"after {name}", time.monotonic()]  # the next limit starts now
        super().stopTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failed", self.failures[-1][1])

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", self.errors[-1][1])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", f"skipped: {reason}")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "expected failure", self.expectedFailures[-1][1])

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "unexpected success")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "failed" if issubclass(err[0], test.failureException) else "error"
            self._record(test, kind, self._exc_info_to_string(err, test))


def _trace_end(trace):
    return str(trace)[-TRACE_KEPT:]


def _load(box):
    """Worker thread: the solution and the test as one module, then (once the runner's
    thread has looked at the test class) `TestCases` run into the recorder."""
    module = box["module"]
    try:
        with _swallowed_io():
            source = box["candidate"] + "\n" + box["test"]
            exec(compile(source, "__test__.py", "exec"), module.__dict__)  # noqa: S102
            sys.modules["__test__"] = module
            if "task_func" in module.__dict__:
                task_func = module.__dict__["task_func"]
                if box["recording"]:
                    task_func = box["recording"].wrap(task_func)
                box["task_func"] = checked(task_func, box["after"])
                module.__dict__["task_func"] = box["task_func"]
    except BaseException as exc:  # noqa: BLE001 (the module failed: BigCodeBench's "ALL")
        box["error"] = f"{type(exc).__name__}: {_trace_end(exc)}"
    box["loaded"].release()
    box["go"].acquire()
    if box["error"]:
        return
    try:
        with _swallowed_io():
            _run_tests(box["loader"]().loadTestsFromTestCase(box["test_class"]), box)
    except BaseException as exc:  # noqa: BLE001
        box["error"] = f"{type(exc).__name__}: {_trace_end(exc)}"


def _run_tests(suite, box):
    """What `TestSuite.run` does for one class without module fixtures (BigCodeBench's have
    none), with each test's methods bound on the test itself to the functions the runner took
    before the candidate ran (`box["methods"]`): a program that swaps `TestCase.assertEqual`
    or `run` for a while does not reach the tests. Its assertions (`assert*`, `fail*`) first
    call `box["before"]` with their arguments (`guarded`)."""
    tests, test_class, result = list(suite), box["test_class"], box["result"]
    methods = {
        name: guarded(function, box["before"]) if name.startswith(("assert", "fail")) else function
        for name, function in box["methods"].items()
    }
    for test in tests:
        for name, function in methods.items():
            test.__dict__[name] = types.MethodType(function, test)
    test_class.setUpClass()
    try:
        for test in tests:
            test.run(result)
    finally:
        test_class.tearDownClass()
        test_class.doClassCleanups()


def checks(moved, check_value, notes):
    """(before, after): the checks an assertion makes before it runs (`before(args, kwargs)`)
    and `task_func` after it returns (`after(result)`). Both compare the test machinery with
    the runner's snapshots (`moved`), so that a helper swapped while `task_func` ran is
    caught before the test calls it, however the swap is undone later: a change is noted
    ["tampered", what] and raised, failing the test. Both look at the values (`check_value`)
    and note the first of a class the program made as ["made", note], the test going on."""

    def machinery():
        what = moved()
        if what:
            notes.append(["tampered", what])
            raise RuntimeError(f"the program changed the test machinery: {what}")

    def look(value):
        try:
            note = check_value(value)
        except Exception as exc:  # noqa: BLE001 (a value that makes the check fail is suspect)
            note = f"a value the check could not read ({type(exc).__name__})"
        if note:
            notes.append(["made", note])

    def before(args, kwargs):
        machinery()
        for value in [*args, *[v for k, v in kwargs.items() if k != "msg"]]:
            look(value)

    def after(result):
        machinery()
        look(result)

    return before, after


def test_patches(mock, test_from, getframe):
    """Make `unittest.mock`'s patchers (`mock._patch`) note the patches the test makes (made
    on one of the test's lines: `test_from` on, in `__test__.py`), while they are in place,
    and its mocks note the test's own. Returns (`allowed`, `mocks`): `allowed(key, value)`,
    whether `value` is what such a patch put under `key` (the test machinery compared during
    the tests may hold those: `@patch("builtins.open")`); `mocks`, the test's mocks that have
    no parent (made on its lines, or by its patches), in the order they were made (the
    replayed verdict replays the program's calls on them and their children)."""
    patch_class = mock._patch
    made, active, mocks = {}, [], []  # id: a patcher made by the test; [patcher, key, value]
    init, enter, leave = patch_class.__init__, patch_class.__enter__, patch_class.__exit__
    mock_init = mock.NonCallableMock.__init__
    # only unittest.mock's own frames are skipped: a call through this file (task_func's
    # wrapper) on a test's line, into `patch` (a partial as task_func), is not the test's
    skipped = sys.modules[patch_class.__module__].__file__

    def by_test(depth):
        try:
            frame = getframe(depth)  # the first to skip: refused if it is the solution's
        except ValueError:  # or the test's: `_patch` or a mock made right from there
            return False
        while frame is not None and frame.f_code.co_filename == skipped:
            frame = frame.f_back
        return (
            frame is not None
            and frame.f_code.co_filename == "__test__.py"
            and frame.f_lineno >= test_from
        )

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if by_test(2):  # 0: by_test, 1: here, 2: mock's patch()
            made[id(self)] = self

    def __enter__(self):
        result = enter(self)
        space = getattr(self.target, "__dict__", None)
        if made.get(id(self)) is self:
            if isinstance(result, mock.NonCallableMock) and all(m is not result for m in mocks):
                mocks.append(result)  # (a mock the test made and patched in is there once)
            if type(space) in (dict, types.MappingProxyType):
                active.append([self, self.attribute, space.get(self.attribute)])
        return result

    def __exit__(self, *exc_info):
        active[:] = [entry for entry in active if entry[0] is not self]
        return leave(self, *exc_info)

    def made_mock(self, *args, **kwargs):
        mock_init(self, *args, **kwargs)
        orphan = self._mock_parent is None and self._mock_new_parent is None
        if orphan and by_test(2):  # 0: by_test, 1: here, 2: the mixin's __init__ (MagicMock())
            mocks.append(self)

    patch_class.__init__, patch_class.__enter__, patch_class.__exit__ = (
        __init__,
        __enter__,
        __exit__,
    )
    mock.NonCallableMock.__init__ = made_mock

    def allowed(key, value):
        return any(attribute == key and new is value for _, attribute, new in list(active))

    return allowed, mocks


def guarded(function, before):
    """`function` (a `TestCase` assertion) after `before(args, kwargs)`, which raises if the
    test machinery was changed and notes values of classes the program made."""

    def assertion(self, *args, **kwargs):
        before(args, kwargs)
        return function(self, *args, **kwargs)

    return functools.update_wrapper(assertion, function)


def checked(task_func, after):
    """`task_func` calling `after(result)` when its outermost call in a thread returns (the
    solution's own recursive calls go through this too, and are not checked each; a thread of
    the program stuck inside one does not stop the checks of another's)."""
    depth = {}  # thread: calls under way

    def call(*args, **kwargs):
        thread = _thread.get_ident()
        depth[thread] = depth.get(thread, 0) + 1
        try:
            result = task_func(*args, **kwargs)
        finally:
            depth[thread] -= 1
        if not depth[thread]:
            after(result)
        return result

    try:  # its name, signature and docstring, which a test may read
        return functools.update_wrapper(call, task_func)
    except Exception:  # noqa: BLE001 (an object that does not have them)
        return call


def work(box, finished):
    """The worker thread's body: `_load`, then `finished` released whatever happened."""
    try:
        _load(box)
    finally:
        finished.release()
