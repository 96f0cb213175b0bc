"""What a BigCodeBench program did at `task_func`'s boundary, recorded in its own process.

The replayed verdict (`pass_at_1_replayed`, tasks/bigcodebench/README.md) runs the task's test
a second time, in a process where no candidate code exists, against a `task_func` that replays
this record (`replay.run`). The record is made in the candidate's interpreter, so it is
untrusted: whatever it says, it can only claim what a program could have done (returned these
values, raised this exception, written these files, called the test's mocks so, printed this,
left the random generators so). Each outermost call of `task_func` by the test adds an entry:

    {"args": [args, kwargs] | None, "after": the same after the call | None,
     "value": [what it returned or None, [pyplot's current figure] or None], "pyplot": whether
     those could be carried, "raised": [[module, qualname] of its classes, args] | absent,
     "files": [[path, data], ...], "dirs": [path, ...] (the scratch folder, relative),
     "random", "numpy", "names": the state random's, numpy's global and tempfile's names'
     generators were left in, or None where the call did not change it,
     "printed": [stdout, stderr] written into the test's captures, "mocks": [[[name, args,
     kwargs], ...] per mock of the test's, children's calls included], "warnings": [[classes, message, file,
     line], ...] shown while it ran}

values encoded by `job.codec`. A value it cannot carry makes the record unreplayable
(`unreplayable`, the first reason), which fails `pass_at_1_replayed` and nothing else.
"""

import _thread
import functools
import io
import os
import random
import sys
import tempfile
import warnings

from .codec import Unreplayable, encode, encoded_or_none, is_mock

MAX_FILES = 2000  # files and folders in the scratch folder, per entry
MAX_CALLS = 1000  # calls recorded (each costs about a millisecond of the job's time)


def scratch_names(seed=0):
    """Make tempfile's names depend on `seed` only, so that the recorded run and its replay
    create the same scratch folders (both call this before they make any)."""
    sequence = tempfile._get_candidate_names()
    sequence._rng, sequence._rng_pid = random.Random(seed), os.getpid()
    return sequence


# The file functions the record and the replay use, taken when this module loads, before any
# test runs: a test's patches (`@patch("os.makedirs")`, of `builtins.open`, `os.path.join`)
# must neither see these calls nor answer them. Paths are joined with "/" for that reason.
scandir, open_file, mkdir, remove, rmdir = os.scandir, io.open, os.mkdir, os.remove, os.rmdir
stat = os.stat
get_ident = _thread.get_ident


def walk(root):
    """The files and folders under `root` as sorted paths relative to it: links left out (a
    replay writes plain files only), and what another file system holds (a job's `/tmp` may
    show, mounted read-only, an installation that lives under the host's `/tmp`)."""
    files, dirs, pending, device = [], [], [""], stat(root).st_dev
    while pending:
        relative = pending.pop()
        with scandir(f"{root}/{relative}" if relative else root) as entries:
            for entry in list(entries):
                path = f"{relative}/{entry.name}" if relative else entry.name
                if entry.stat(follow_symlinks=False).st_dev != device:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    dirs.append(path)
                    pending.append(path)
                elif entry.is_file(follow_symlinks=False):
                    files.append(path)
        if len(files) + len(dirs) > MAX_FILES:
            raise Unreplayable(f"more than {MAX_FILES} files in the scratch folder")
    return sorted(files), sorted(dirs)


def tree(root):
    """The files ([relative path, bytes]) and folders under `root` (`walk`)."""
    files, dirs = walk(root)
    contents = []
    for path in files:
        with open_file(f"{root}/{path}", "rb") as handle:
            contents.append([path, handle.read()])
    return contents, dirs


class Recording:
    """Wraps `task_func` (`wrap`) to record its outermost calls into `state["calls"]`.
    `root`: the scratch folder; `mocks`: the test's mocks without a parent, as the runner's
    `test_patches` keeps them; `names`: `scratch_names`."""

    def __init__(self, root, mocks, names, state):
        self.root, self.mocks, self.names, self.depth = root, mocks, names, {}
        self.state = state  # {"calls": [], "unreplayable": ""}, the runner's (it reads it)
        self.shown = []  # the warnings shown during the calls, since the last entry
        show = warnings._showwarnmsg  # what the warnings machinery calls for each one shown

        def showing(message):
            if self.depth.get(get_ident()):
                self.shown.append(message)
            return show(message)

        warnings._showwarnmsg = showing

    def wrap(self, task_func):
        def call(*args, **kwargs):
            thread = get_ident()
            self.depth[thread] = self.depth.get(thread, 0) + 1
            outermost = self.depth[thread] == 1 and self._room()
            entry = self._before(args, kwargs) if outermost else None
            try:
                result = task_func(*args, **kwargs)
            except BaseException as exc:
                if entry is not None:
                    self._after(entry, args, kwargs, raised=exc)
                raise
            finally:
                self.depth[thread] -= 1
            if entry is not None:
                self._after(entry, args, kwargs, result=result)
            return result

        try:  # its name, signature and docstring, which a test may read
            return functools.update_wrapper(call, task_func)
        except Exception:  # noqa: BLE001 (an object that does not have them)
            return call

    def _room(self):
        """Whether another call is recorded: past MAX_CALLS the record stops (and says so),
        so that a test calling `task_func` in a loop does not pay for it in its time limit."""
        if len(self.state["calls"]) < MAX_CALLS:
            return True
        self.state["unreplayable"] = self.state["unreplayable"] or (
            f"the test called task_func more than {MAX_CALLS} times"
        )
        return False

    def _maybe(self, value):
        """`value` encoded, the test's mocks by reference, or None (`encoded_or_none`)."""
        return encoded_or_none(value, list(self.mocks))

    def _calls_since(self, mock, count):
        """The calls made on `mock` (and on what it returned) since it had `count`, as
        [name, args, kwargs], those with arguments the codec cannot carry left out."""
        rows = []
        for name, args, kwargs in list(_mock_calls(mock))[count:]:
            encoded = self._maybe([str(name), list(args), dict(kwargs)])
            if encoded is not None:
                rows.append(encoded)
        return rows

    def _before(self, args, kwargs):
        entry = {"args": self._maybe([list(args), kwargs])}
        entry["mocks_before"] = [len(_mock_calls(m)) for m in list(self.mocks)]
        entry["printed_before"] = [_captured(sys.stdout), _captured(sys.stderr)]
        entry["states_before"] = self._states()
        self.shown.clear()
        return entry

    def _states(self):
        """The random generators' states (random's, numpy's global one, tempfile's names)."""
        numpy = sys.modules.get("numpy")
        return {
            "random": encode(random.getstate()),
            "numpy": encode(numpy.random.get_state()) if numpy else None,
            "names": encode(self.names._rng.getstate()),
        }

    def _after(self, entry, args, kwargs, result=None, raised=None):
        calls = self.state["calls"]
        try:
            self._fill(entry, args, kwargs, result, raised)
        except Exception as exc:  # noqa: BLE001 (Unreplayable, or a value that breaks it)
            why = str(exc) if type(exc) is Unreplayable else repr(exc)[:200]
            self.state["unreplayable"] = (
                self.state["unreplayable"] or f"call {len(calls) + 1}: {why}"
            )
        calls.append(entry)

    def _fill(self, entry, args, kwargs, result, raised):
        after = self._maybe([list(args), kwargs]) if entry["args"] is not None else None
        # what it returned may be an argument it changed in place: carried as that argument
        entry["after"], refs = after, [*self.mocks, *updatable([*args, *kwargs.values()])]
        value = result if raised is None else None
        try:  # with pyplot's open figures (`plt.gcf()`), which may hold the axes it returned
            entry["value"], entry["pyplot"] = encode([value, _pyplot_figures()], refs), True
        except Unreplayable:
            entry["value"], entry["pyplot"] = encode([value, None], refs), False
        if raised is not None:
            args = self._maybe(list(raised.args)) or encode([str(raised)])
            entry["raised"] = [_classes(type(raised)), args]
        files, dirs = tree(self.root)
        entry["files"], entry["dirs"] = encode(files), dirs
        before = entry.pop("states_before")  # a state the call did not change: None
        entry.update({k: v if v != before[k] else None for k, v in self._states().items()})
        entry["warnings"] = [
            [_classes(type(w.message)), str(w.message), str(w.filename), int(w.lineno)]
            for w in self.shown
        ]
        before = entry.pop("printed_before")
        entry["printed"] = [_new_text(before[0], sys.stdout), _new_text(before[1], sys.stderr)]
        counts = entry.pop("mocks_before")
        entry["mocks"] = [
            self._calls_since(m, counts[i] if i < len(counts) else 0)
            for i, m in enumerate(list(self.mocks))
        ]


# arguments whose changes the replay makes on the test's own objects (`replay.run`)
UPDATABLE = {
    ("builtins", "list"),
    ("builtins", "dict"),
    ("builtins", "set"),
    ("builtins", "bytearray"),
    ("numpy", "ndarray"),
    ("pandas.core.frame", "DataFrame"),
    ("pandas.core.series", "Series"),
    ("pandas", "DataFrame"),  # (pandas 3 names its classes' module so)
    ("pandas", "Series"),
}


def updatable(values):
    """Those of `values` whose changes in place the replay makes again (UPDATABLE)."""
    return [v for v in values if (type(v).__module__, type(v).__name__) in UPDATABLE]


def _pyplot_figures():
    """pyplot's current figure (`plt.gcf()`, without making one) in a list, [] if none is
    open, or None if pyplot is not loaded. Only the current one: tests read that one, and
    figures a test leaves open would otherwise be carried again by every later call."""
    if "matplotlib.pyplot" not in sys.modules:
        return None
    from matplotlib._pylab_helpers import Gcf

    manager = Gcf.get_active()
    return [] if manager is None else [manager.canvas.figure]


def _classes(cls):
    """A class and its bases, as [module, qualname] each (the replay finds the first it has)."""
    return [[str(c.__module__), str(c.__qualname__)] for c in cls.__mro__]


def _captured(stream):
    """What a test's capture (`io.StringIO` as `sys.stdout`) holds, or None."""
    return stream.getvalue() if type(stream) is io.StringIO else None


def _new_text(before, stream):
    now = _captured(stream)
    if now is None or before is None or not now.startswith(before):
        return ""
    return now[len(before) :]


def _mock_calls(mock):
    calls = getattr(mock, "mock_calls", None) if is_mock(mock) else None
    return calls if type(calls).__name__ == "_CallList" else []
