"""BigCodeBench's test run against a record of what the program did, in a process where no
candidate code exists: the replayed verdict (`pass_at_1_replayed`, tasks/bigcodebench).

A replay job's program is `run_replay` with the record (`job.record`, made in the
candidate's job) as a string: it sets up the environment as the candidate's run had it
(`job.runner`'s, with the same scratch folder names), executes the task's
`code_prompt` (its imports and `task_func`'s signature, trusted: from the dataset) and the
test as one module `__test__`, with `task_func` replaced by a `Replayer`, and runs `TestCases`
as the runner does. Each call of the replayer takes the next entry of the record: it makes the
scratch folder what the program left, makes on the test's mocks the calls the program made,
writes what it printed into the test's capture, updates the arguments it changed in place
(lists, dicts, sets, numpy arrays), sets the random generators' states, then returns the value
or raises the exception, decoded by `job.codec` (only trusted constructors run). An
exception is rebuilt as the first class of its MRO that exists here (a builtin, or a class of
a module the test has loaded); a class of the program's own is replayed as that base.

The job runs in the sandbox like any other (its process is contained), but its report needs no
seal: nothing in it runs code the candidate wrote, so what it says is the test's own verdict on
what the program claimed to do, which a program could have done.
"""

import ast
import builtins
import contextlib
import random
import sys
import types
import unittest
import warnings

from ..job import record, worker
from ..job.codec import callable_mock, decode, descend, encoded_or_none
from ..job.objects import loaded_class
from ..job.runner import prepare_environment


def run_replay(record_text, code_prompt, test_code, libs="", imports=(), private_tmp=False):
    """The test's outcomes on the replayed program, as the runner reports them: {"tests":
    {name: status}, "failures": [[name, traceback end], ...], "error": the module's load
    error or why the record cannot be replayed, or "", "notes": what differed from the
    recorded run}. The files: `/tmp`'s where `private_tmp`, else the scratch folder's."""
    recorded = ast.literal_eval(record_text)  # (a literal: nothing in it runs)
    report = {"tests": {}, "failures": [], "error": "", "notes": []}
    if recorded["unreplayable"]:
        report["error"] = f"not replayable: {recorded['unreplayable']}"
        return report
    names = record.scratch_names()
    root = prepare_environment(libs, imports)
    stub = code_prompt + "    pass\n"
    # every line here is trusted: the mocks and patches of the test and of the stub are the test's
    _, mocks = worker.test_patches(sys.modules["unittest.mock"], 1, sys._getframe)
    scratch = "/tmp" if private_tmp else root
    replayer = Replayer(recorded["calls"], scratch, mocks, names, report["notes"])
    module = types.ModuleType("__test__")
    module.__dict__.update({"__builtins__": builtins, "__file__": "__test__.py"})
    statuses, traces = {}, []
    try:
        with worker._swallowed_io():
            exec(compile(stub, "__test__.py", "exec"), module.__dict__)  # noqa: S102 (trusted)
            module.task_func = replayer
            sys.modules["__test__"] = module
            exec(compile(test_code, "__test__.py", "exec"), module.__dict__)  # noqa: S102
            suite = unittest.TestLoader().loadTestsFromTestCase(module.TestCases)
            suite.run(worker.Recorder(statuses, traces, []))
    except Exception as exc:  # noqa: BLE001 (the module failed to load: BigCodeBench's "ALL")
        report["error"] = f"{type(exc).__name__}: {str(exc)[-1500:]}"
    report["tests"], report["failures"] = statuses, traces
    if replayer.left and not report["error"]:
        report["notes"].append(f"{replayer.left} recorded calls were not made again")
    return report


class Replayer:
    """`task_func` for the replay: each call plays the next entry of `calls`."""

    def __init__(self, calls, root, mocks, names, notes):
        self.calls, self.root, self.mocks, self.names = calls, root, mocks, names
        self.notes, self.made = notes, 0

    @property
    def left(self):
        return len(self.calls) - self.made

    def __call__(self, *args, **kwargs):
        if self.made >= len(self.calls):
            raise AssertionError(
                f"replay: task_func called more often than in the recorded run ({len(self.calls)})"
            )
        entry, self.made = self.calls[self.made], self.made + 1
        mocks = list(self.mocks)
        if (
            entry["args"] is not None
            and encoded_or_none([list(args), kwargs], mocks) != entry["args"]
        ):
            self.notes.append(f"call {self.made}: arguments differ from the recorded run's")
        _sync_tree(self.root, decode(entry["files"]), entry["dirs"])
        self._mock_calls(entry["mocks"])
        mocks = list(self.mocks)  # with those the test's side effects made, as in the record
        for stream, text in zip((sys.stdout, sys.stderr), entry["printed"]):
            if text:
                stream.write(text)
        if entry["after"] is not None:
            after_args, after_kwargs = decode(entry["after"], mocks)
            for mine, theirs in [*zip(args, after_args), *_paired(kwargs, after_kwargs)]:
                _update_in_place(mine, theirs)
        if entry["random"] is not None:
            random.setstate(decode(entry["random"]))
        if entry["numpy"] is not None and "numpy" in sys.modules:
            sys.modules["numpy"].random.set_state(decode(entry["numpy"]))
        if entry["names"] is not None:
            self.names._rng.setstate(decode(entry["names"]))
        if entry["pyplot"] and "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")  # then only the program's are open
        result, _ = decode(entry["value"], [*mocks, *record.updatable([*args, *kwargs.values()])])
        for classes, message, filename, lineno in entry["warnings"]:
            category = _loaded_class(classes, Warning) or UserWarning
            warnings.warn_explicit(message, category, filename, lineno)
        if "raised" in entry:
            raise _exception(*entry["raised"], mocks)
        return result

    def _mock_calls(self, per_mock):
        """The calls the program made on each of the test's mocks, made again."""
        mocks = list(self.mocks)
        if len(per_mock) > len(mocks):
            self.notes.append("the test made fewer mocks than in the recorded run")
        roots = {id(m) for m in mocks}
        for mock, rows in zip(mocks, per_mock):
            for name, args, kwargs in (decode(row, mocks) for row in rows):
                # (None where the way passes through another of the test's mocks, one the test
                # attached to this one as a return value: its calls are in both records)
                target = descend(mock, name, roots)
                if not callable_mock(target):  # (the record never makes it call anything else)
                    continue
                with contextlib.suppress(Exception):  # what the mock raised, the program saw
                    target(*args, **kwargs)


def _paired(kwargs, after):
    return [(kwargs[k], after[k]) for k in kwargs if k in after]


def _update_in_place(mine, theirs):
    """What the program did to a mutable argument, done to the test's object."""
    kind = type(mine)
    if kind is not type(theirs):
        return
    if kind is list or kind is bytearray:
        mine[:] = theirs
    elif kind is dict or kind is set:
        mine.clear()
        mine.update(theirs)
    elif kind.__name__ == "ndarray" and mine.shape == theirs.shape and mine.flags.writeable:
        mine[...] = theirs
    elif kind.__name__ in ("DataFrame", "Series"):  # pandas' own state, taken over
        mine._mgr = theirs._mgr
        mine._clear_item_cache()
        if kind.__name__ == "Series":
            mine.name = theirs.name


def _relative(path):
    """A recorded path, checked: relative, with no empty, "." or ".." part."""
    parts = str(path).split("/")
    if not path or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"replay: a recorded path outside the scratch folder: {path!r}")
    return "/".join(parts)


def _sync_tree(root, files, dirs):
    """The scratch folder made what the record says: its folders and files, nothing else
    (through the file functions taken before the test ran: `job.record`)."""
    keep_files = {_relative(path): data for path, data in files}
    keep_dirs = {_relative(path) for path in dirs}
    here_files, here_dirs = record.walk(root)
    for path in set(here_files) - set(keep_files):
        record.remove(f"{root}/{path}")
    for path in sorted(set(here_dirs) - keep_dirs, key=len, reverse=True):
        with contextlib.suppress(OSError):
            record.rmdir(f"{root}/{path}")
    for path in sorted(keep_dirs - set(here_dirs), key=len):
        with contextlib.suppress(FileExistsError):
            record.mkdir(f"{root}/{path}")
    for path, data in keep_files.items():
        with record.open_file(f"{root}/{path}", "wb") as handle:
            handle.write(data)


def _loaded_class(classes, base):
    """The first of `classes` ([module, qualname] each, a class and its bases) that a loaded
    module holds and that is `base` or a subclass, or None: nothing is imported."""
    for module_name, qualname in classes:
        cls = loaded_class(module_name, qualname)
        if cls is not None and issubclass(cls, base):
            return cls
    return None


def _exception(classes, args, refs=()):
    """The recorded exception as the first class of its MRO that exists here (its arguments
    may refer to the test's mocks, `refs`)."""
    cls, values = _loaded_class(classes, BaseException) or Exception, decode(args, refs)
    try:
        return cls(*values)
    except Exception:  # noqa: BLE001 (a constructor wanting other arguments)
        exc = cls.__new__(cls)
        exc.args = tuple(values)
        return exc
