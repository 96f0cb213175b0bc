"""The unittest runner a BigCodeBench job runs inside its sandboxed candidate process.

This file's source follows `job/guard.py` in every BigCodeBench job's program
(`bigcodebench.job`): the candidate process loads both with the calibrated solution appended as
`CANDIDATE_CODE`, and the trusted test calls `run_bigcodebench(test_code, time_limit, libs,
nonce, imports)`, which runs the task's `TestCases` the way BigCodeBench's `unsafe_execute`
does (its `eval/__init__.py`; behaviour read there, code written here):

- the solution and the test are one module, `__test__` (solution, then test), executed in a
  fresh scratch directory under the job's own `/tmp`, which is the working directory (tests
  create and read files there);
- BigCodeBench's pinned libraries first on the path (`libs`), and `python` on
  `PATH` the interpreter that has them (their folder on `PYTHONPATH`), as in BigCodeBench's image;
  the NLTK data the programs download (`nltk.download`, which needs the network) as `NLTK_DATA`;
- the environment BigCodeBench's `reliability_guard` sets: TZ=UTC, one OpenMP thread, the
  TensorFlow log switches, `exit` and `quit` removed, matplotlib figures closed; stdout, stderr
  and stdin swallowed, and subprocesses' output piped unless the caller captures it;
- `unittest.TestLoader().loadTestsFromTestCase(TestCases)` run into a `unittest.TestResult`,
  each test under a wall-clock limit (BigCodeBench's `time_limit`; the job's CPU-time limit
  covers the suite).

Against forged verdicts (tasks/bigcodebench/README.md, "Forged verdicts"): the modules the test
imports and `unittest` are imported, and the guard's hook added, before the candidate's code
exists; the solution and the tests run in a worker thread while this function's thread, which
alone holds the job's secret `nonce`, waits (it runs no candidate code and the guard refuses
it every frame), then checks that `unittest`, the builtins, the test's names and its class are
the objects they were, and sends the per-test outcomes with the nonce. A per-test time limit
stops the wait, not the test (a thread cannot be interrupted): the report then names the test
that ran past it, and the job ends.

It returns plain data only. Only the standard library is imported at load time, so a job costs
nothing before its test runs. The isolation (no network, no host files, limits) is the
sandbox's, not this file's.
"""

import _hashlib
import _thread
import ast
import builtins
import contextlib
import importlib
import os
import sys
import tempfile
import threading
import time
import types
import unittest

# This namespace's own builtins (functions defined below keep them): a candidate that replaces
# a builtin (`type`, `len`, ...) does not reach the runner's thread through them.
__builtins__ = dict(vars(builtins))
_monotonic, _hmac = time.monotonic, _hashlib.hmac_digest
# the assertion helpers BigCodeBench's tests call, besides unittest's (when already imported)
PROTECTED_MODULES = (
    "numpy.testing",
    "numpy.testing._private.utils",
    "pandas.testing",
    "pandas._testing",
    "pandas._testing.asserters",
)
_CODE = (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)
# the builtins that are functions or classes: a module global of one of these names shadows it
_BUILTIN_CODE = frozenset(k for k, v in vars(builtins).items() if isinstance(v, _CODE))
_PLAIN = (dict, list, str, int, float, bool, type(None))
MAX_RECORD_VALUES, RECORD_DEPTH = 4_000_000, 800  # of the record (`_record_text`)
MAX_RECORD_BYTES = 16 * 1024 * 1024  # (UTF-8; the trusted side refuses more: `rounds`)


def _namespace(source, name):
    """`source` executed into a fresh module namespace of its own."""
    space = {"__name__": name, "__builtins__": dict(vars(builtins))}
    exec(compile(source, name, "exec"), space)  # noqa: S102 (the pack's own source)
    return space


def seal(report, nonce):
    """The report's MAC under the job's secret (HMAC-SHA256 of its canonical text), which the
    trusted side recomputes: a report that a candidate wrote, or changed on its way out
    (through the harness's functions, which it can replace), does not carry it."""
    text = repr(
        [sorted(report["tests"].items()), report["failures"], report["error"], report["made"]]
    )
    return _hmac(nonce.encode(), text.encode("utf-8", "surrogatepass"), "sha256").hex()


def prepare_environment(libs, imports):
    """BigCodeBench's environment for the test (shared with the replay, `replay.run`);
    the scratch folder back."""
    if libs:  # BigCodeBench's pinned libraries come before the environment's own
        sys.path.insert(0, libs)
        os.environ["PYTHONPATH"] = libs
        # the NLTK data the programs would download (bigcodebench_libs.NLTK_DATA)
        os.environ["NLTK_DATA"] = os.path.join(libs, "nltk_data")
    # `python` is the interpreter with the libraries, as in BigCodeBench's image: programs run
    # scripts with `subprocess.call(["python", ...])` (its folder: the venv's bin, which has one)
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    os.environ.setdefault("MPLBACKEND", "Agg")
    root = tempfile.mkdtemp(prefix="bigcodebench-")  # the scratch folder, the working directory
    os.chdir(root)  # (the test's own temporary files go to /tmp, as in BigCodeBench's harness)
    builtins.exit = None
    builtins.quit = None
    for name in ("unittest.mock", *imports):  # what the test imports, before the candidate
        with contextlib.suppress(Exception):  # (its own import raises it again, in the test)
            importlib.import_module(name)
    for name in PROTECTED_MODULES:  # the testing helpers of those (numpy 2 loads them lazily)
        if name.split(".")[0] in sys.modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
    with contextlib.suppress(ImportError):
        import matplotlib.pyplot as plt

        plt.close("all")
    return root


def _protected():
    """The namespaces whose entries must still be the same objects after the tests:
    `unittest`'s modules and classes, the builtins, the testing helpers of numpy and pandas.
    Of a module, its functions, classes and modules (its data may change: `unittest.mock` sets
    `file_spec` on first use), and it may not gain a global named as a builtin function or
    class (which its functions would call instead); a class's namespace may not gain keys."""
    spaces = [("builtins", _code_of(vars(builtins)), None)]
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] == "unittest" or name in PROTECTED_MODULES:
            spaces.append((name, _code_of(vars(module), _BUILTIN_CODE), ()))
            for key, value in list(vars(module).items()):
                if type(value) is type and value.__module__ == name:
                    spaces.append((f"{name}.{key}", vars(value), ()))
    return spaces


def _code_of(space, watched=frozenset()):
    """A view of a module namespace: the keys whose values are functions, classes, modules,
    and any of the names `watched` it holds."""
    return _Only(space, [k for k, v in list(space.items()) if isinstance(v, _CODE)], watched)


class _Only:
    """`space` as seen through `keys` only (`items()`, `get`, `len`), and those of the names
    `watched` it holds now, for the tamper check."""

    def __init__(self, space, keys, watched):
        self.space, self.keys, self.watched = space, keys, watched

    def items(self):
        missing = object()
        extra = [k for k in self.watched if k in self.space and k not in self.keys]
        return [(k, self.space.get(k, missing)) for k in [*self.keys, *extra]]

    def get(self, key, default=None):
        return self.space.get(key, default)

    def __len__(self):
        return len(self.space)


def _test_names(test_code):
    """The names the test's module level binds (imports, classes, functions, assignments),
    and the builtins its code uses that it does not bind (the solution must not shadow them:
    the test would call the solution's `open` or `len`)."""
    tree, bound = ast.parse(test_code), set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    builtin = {n for n in used - bound if n in vars(builtins) and not n.startswith("__")}
    return bound, sorted(builtin)


def _shadowing(space, builtin_names):
    """The first builtin the test uses that the module now defines, as a tamper note, or ""."""
    name = next((n for n in builtin_names if n in space), "")
    return f"__test__.{name} (shadows the builtin the test uses)" if name else ""


def _wait(current, limit, done, collect):
    """Wait for the lock `done`, calling `collect` every 50 ms and at the end, or until the
    running test (or the load, while `current` is empty) has run past `limit` seconds: then
    the name of the one that did, else ""."""
    started = _monotonic()
    while not done.acquire(timeout=0.05):
        collect()
        running = list(current) if type(current) is list else []
        ok = len(running) == 2 and type(running[0]) is str and type(running[1]) is float
        if _monotonic() - max(running[1] if ok else started, started) > limit:
            return running[0] if ok else "loading the module"
    collect()
    return ""


class _Outcomes:
    """The runner's own copy of the recorder's outcomes, taken every 50 ms while the tests
    run: the first outcome of a test that is not a pass sticks, and the first traceback, so
    that a program resetting the recorder's records later does not undo them."""

    def __init__(self, statuses, traces, notes):
        self.statuses, self.traces, self.seen, self.kept = statuses, traces, {}, {}
        self.notes, self.first = notes, {}  # notes: [kind, text], the first of each kind kept

    def __call__(self):
        for note in list(self.notes):
            if type(note) is list and len(note) == 2 and type(note[0]) is type(note[1]) is str:
                self.first.setdefault(note[0], note[1])
        for name, status in list(self.statuses.items()):
            if type(name) is type(status) is str and self.seen.get(name, "passed") == "passed":
                self.seen[name] = status
        for trace in list(self.traces):
            if type(trace) is list and len(trace) == 2 and type(trace[0]) is type(trace[1]) is str:
                self.kept.setdefault(trace[0], trace[1])

    def shadowed(self, result, recorder_class):
        """The recorder given another class or one of its methods replaced on itself, or ""."""
        if type(result) is not recorder_class:
            return "the recorder's class"
        methods = {k for k, v in list(vars(type(result)).items()) if type(v) is types.FunctionType}
        return next((f"Recorder.{k}" for k in list(vars(result)) if k in methods), "")


def _text(value, fallback):
    return value if type(value) is str else fallback


def _methods(cls):
    """The plain functions of a class's own namespace, dunders left out."""
    return {
        k: v
        for k, v in list(vars(cls).items())
        if type(k) is str and type(v) is types.FunctionType and not k.startswith("__")
    }


def _test_class(module, test_case):
    """The test's `TestCases`, if it is a plain class right on `unittest.TestCase`."""
    cls = module.__dict__.get("TestCases")
    if type(cls) is not type:
        return None
    mro = cls.__mro__
    ok = len(mro) == 3 and mro[0] is cls and mro[1] is test_case and mro[2] is object
    return cls if ok else None


def _roots(libs):
    """The folders of library code: the installation's and BigCodeBench's libraries."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, libs}
    return tuple(sorted(os.path.join(folder, "") for folder in folders if folder))


def _record_text(record):
    """The record (`job.record`) as a Python literal, made by C functions only (this
    thread runs no candidate code): of exact plain types, at most MAX_RECORD_VALUES values and
    RECORD_DEPTH deep, else a record saying it was not plain data."""
    stack, count = [(record, 0)], 0
    while stack:
        value, depth = stack.pop()
        count += 1
        kind = type(value)
        if count > MAX_RECORD_VALUES or depth > RECORD_DEPTH or kind not in _PLAIN:
            return repr({"calls": [], "unreplayable": "the record is not plain data"})
        if kind is dict:
            if any(type(k) is not str for k in value):
                return repr({"calls": [], "unreplayable": "the record is not plain data"})
            stack += [(v, depth + 1) for v in value.values()]
        elif kind is list:
            stack += [(v, depth + 1) for v in value]
    text = repr(record)
    if len(text.encode("utf-8", "surrogatepass")) > MAX_RECORD_BYTES:
        return repr({"calls": [], "unreplayable": f"a record of over {MAX_RECORD_BYTES} bytes"})
    return text


def run_bigcodebench(
    test_code, time_limit, libs="", nonce="", imports=(), private_tmp=False, recording=False
):
    """Run `CANDIDATE_CODE` + the task's test as BigCodeBench does, with the folder `libs`
    first on the path and the modules `imports` (the test's) imported first; plain data back:
    {"tests": {name: status}, "failures": [[name, traceback end], ...], "error": load error,
    time limit or tampering, or "", "made": the first value of a class the program made that
    reached an assertion or came out of `task_func`, or "", "mac": `seal` under `nonce`,
    "record" where `recording`: what the program did, for the replay (`job.record`),
    its files those of `/tmp` where `private_tmp` (the job's own), else of the scratch folder}."""
    # (installed by the program: sources)
    from evalpack.hooks.bigcodebench.job import record as bigcodebench_record

    names = bigcodebench_record.scratch_names()  # the replay makes the same folders
    root = prepare_environment(libs, imports)
    guard = _namespace(GUARD_SOURCE, "bigcodebench_guard")  # noqa: F821 (appended)
    worker = _namespace(WORKER_SOURCE, "bigcodebench_worker")  # noqa: F821 (appended)
    values = _namespace(VALUES_SOURCE, "bigcodebench_values")  # noqa: F821 (appended)
    snapshot, changed = guard["snapshot"], guard["changed"]
    test_case, (test_names, test_builtins) = unittest.TestCase, _test_names(test_code)
    statuses, traces, current, notes = {}, [], [], []
    module = types.ModuleType("__test__")
    module.__dict__.update(
        {"__builtins__": builtins, "__file__": "__test__.py", "__package__": None,
         "__doc__": None, "sys": sys, "os": os, "environ": os.environ}
    )  # fmt: skip
    loaded, go, finished = (_thread.allocate_lock() for _ in range(3))
    for lock in (loaded, go, finished):
        lock.acquire()
    recorder = worker["Recorder"](statuses, traces, current)
    outcomes = _Outcomes(statuses, traces, notes)
    test_from = CANDIDATE_CODE.count("\n") + 2  # noqa: F821 (the test's first line)
    mock = sys.modules["unittest.mock"]
    allowed, mocks = worker["test_patches"](mock, test_from, sys._getframe)
    record = {"calls": [], "unreplayable": ""}  # filled in the worker thread, read here
    scratch = "/tmp" if private_tmp else root
    recording = recording and bigcodebench_record.Recording(scratch, mocks, names, record)
    check_value = values["checker"](
        values["known_classes"](), test_from, _roots(libs), mock,
        values["numpy_pandas_walker"](), allowed,
    )  # fmt: skip
    snapshots = snapshot([*_protected(), ("Recorder", vars(worker["Recorder"]), ())])
    live = list(snapshots)  # what the assertions and task_func compare as they run
    before, after = worker["checks"](guard["watcher"](changed, live, allowed), check_value, notes)
    box = {"module": module, "candidate": CANDIDATE_CODE, "test": test_code, "error": "",  # noqa: F821
           "loaded": loaded, "go": go, "loader": unittest.TestLoader, "result": recorder,
           "before": before, "after": after, "recording": recording}  # fmt: skip
    base_methods = _methods(test_case)
    report = {"tests": {}, "failures": [], "error": "", "made": ""}
    guard["install_guard"]()
    sys.audit(guard["ARM"])  # from here on candidate code may run, in the worker thread only
    threading.Thread(target=worker["work"], args=(box, finished), daemon=True).start()
    late = _wait(current, float(time_limit), loaded, outcomes)
    error = f"TimeoutException: Timed out ({late})" if late else _text(box["error"], "?")
    test_class = None if error else _test_class(module, test_case)
    shadowed = _shadowing(module.__dict__, test_builtins) or (
        module.__dict__.get("task_func") is not box.get("task_func") and "__test__.task_func"
    )
    if test_class is None or shadowed:
        report["error"] = error or (
            f"the program changed the test machinery: {shadowed}"
            if shadowed
            else "the test's TestCases is not a class on unittest.TestCase"
        )
    else:
        snapshots += snapshot([("TestCases", vars(test_class), None)])  # tests add to it
        snapshots += snapshot([("__test__", module.__dict__, None)], keys=test_names)
        live += snapshots[len(live) :]
        live += snapshot([("__test__", module.__dict__, None)], keys={"task_func"})
        box["test_class"], box["methods"] = test_class, {**base_methods, **_methods(test_class)}
        go.release()
        late = _wait(current, float(time_limit), finished, outcomes)
        error = f"TimeoutException: Timed out ({late})" if late else _text(box["error"], "?")
        tampered = (
            changed(snapshots, allowed)
            or outcomes.first.get("tampered")
            or outcomes.shadowed(recorder, worker["Recorder"])
            or _shadowing(module.__dict__, test_builtins)
        )
        report["error"] = (
            error or tampered and f"the program changed the test machinery: {tampered}"
        )
        report["tests"] = outcomes.seen
        report["failures"] = [[name, trace] for name, trace in outcomes.kept.items()]
        report["made"] = outcomes.first.get("made", "")
    report["mac"] = seal(report, nonce)
    if recording:
        report["record"] = _record_text(record)  # unsealed: the replay trusts nothing in it
    return report
