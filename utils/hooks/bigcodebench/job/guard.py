"""The BigCodeBench runner's guard: an audit hook and a tamper check, in the candidate process.

This file's source opens every BigCodeBench job's program, before `job/runner.py`
(`sources.runner_source`). BigCodeBench's tests must run in the candidate's interpreter
(they patch its modules and inspect its objects), so nothing there is out of the candidate's
reach in principle; this guard makes the cheap, generic ways of faking a pass fail. What it
stops and what it cannot stop is listed in tasks/bigcodebench/README.md ("Forged verdicts").

- `install_guard()` adds an audit hook (`sys.addaudithook`: it cannot be removed, and it
  refuses any later hook) before the candidate's code exists. It is inert until the runner
  raises the audit event `ARM` (one way: nothing disarms it), and from then on refuses what no
  BigCodeBench solution, test or library needs during a test: adding audit hooks, trace and
  profile functions (which see every frame and can jump over a test's lines), `gc`'s object
  walks (`get_referents` only when the solution's or test's own code asks: pandas uses it),
  other threads' frames, ctypes (raw memory and C calls), opening a process's memory
  (`/proc/<pid>/mem`, `pagemap`, `map_files`), and replacing a function's `__code__`; and, in
  the thread that armed it (the runner's, which holds the job's secret and runs no candidate
  code), any frame at all (`sys._getframe`, a traceback's or generator's frame), so that code
  a candidate gets run there (a finalizer) finds no way to the runner's locals. A refusal is a
  `RuntimeError` (a `ValueError` for `sys._getframe`, the error libraries already expect when
  no frame is available; an `OSError` for loading a library with ctypes, as for a file ctypes
  cannot load), which fails the test it happens in unless the test expects that error.
- `snapshot(namespaces)` / `changed(snapshots)`: the identity of every value of the given
  namespaces (module and class dictionaries), taken before the candidate runs and compared
  after the tests: a program that replaced a method of `unittest`'s classes, a global of its
  modules, a builtin, a name the test module bound or a method of the test class, and did not
  put it back, is caught. The comparison calls nothing of the candidate's (identities and
  exact `str` keys only), so it runs no candidate code in the runner's thread.
"""

import _thread
import pathlib
import posix
import sys

ARM = "evalpack.bigcodebench.arm"
# refused in every thread once armed
_REFUSED = frozenset(
    {
        "sys.addaudithook",
        "sys.settrace",
        "sys.setprofile",
        "sys._current_frames",
        "gc.get_objects",
        "gc.get_referrers",
    }
)
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"})
_MEMORY_FILES = frozenset({"mem", "pagemap", "map_files"})
_CTYPES = "/ctypes/"  # in the file name of ctypes' own Python code
# path objects whose text the hook can read without running a candidate's code
_PLAIN_PATHS = (pathlib.PosixPath, pathlib.PurePosixPath)
_LINK, _FORMAT = 0o120000, 0o170000


def _resolver():
    """`resolve(path)`: the absolute path with every symbolic link followed, through C
    functions bound now (a candidate may replace `os.path`'s helpers, not these)."""
    lstat, readlink, getcwd = posix.lstat, posix.readlink, posix.getcwd

    def resolve(path):
        pending = (path if path.startswith("/") else getcwd() + "/" + path).split("/")
        parts, links = [], 0
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                parts = parts[:-1]
                continue
            here = "/" + "/".join([*parts, part])
            try:
                is_link = lstat(here).st_mode & _FORMAT == _LINK
            except OSError:
                is_link = False
            if is_link and links < 40:
                links += 1
                target = readlink(here)
                pending = target.split("/") + pending
                if target.startswith("/"):
                    parts = []
                continue
            parts.append(part)
        return parts

    return resolve


def _memory_file(path, resolve):
    """Whether `path` (as given to open) names a process's memory in /proc, links followed;
    True also for a path object of a kind whose text only its own code can give (it could
    give one text to this check and another to `open`)."""
    kind = type(path)
    if kind is int:
        return False  # an open file descriptor: its path was checked when it was opened
    if kind is bytes:
        path = path.decode("utf-8", "surrogateescape")
    elif kind in _PLAIN_PATHS:
        path = str(path)
    elif kind is posix.DirEntry:
        path = path.path
    elif kind is not str:
        return True
    parts = resolve(path)
    return len(parts) > 1 and parts[0] == "proc" and bool(_MEMORY_FILES.intersection(parts))


def _candidate_code(code):
    """Whether a code object is the candidate's: the solution and the test are compiled as
    `__test__.py`; code compiled at run time has a name in angle brackets."""
    name = code.co_filename
    return name == "__test__.py" or name.startswith("<") and not name.startswith("<frozen ")


def install_guard():
    """Add the (inert) audit hook; `sys.audit(ARM)` arms it in the calling thread."""
    armed, inside, get_ident, resolve = [], set(), _thread.get_ident, _resolver()
    getframe = sys._getframe

    def refuse(what, error=RuntimeError):
        raise error(f"refused by the BigCodeBench runner: {what}")

    def check(event, args, thread):
        if event in _REFUSED or event.startswith("ctypes.") and thread == armed[0]:
            refuse(event)
        if event == "gc.get_referents":  # pandas' chained-assignment check asks for them
            if thread == armed[0] or _candidate_code(getframe(2).f_code):
                refuse(event)
            return
        if event == "open" and args and _memory_file(args[0], resolve):
            refuse("opening that path")
        frame_event = event == "sys._getframe" or (
            event == "object.__getattr__" and len(args) > 1 and args[1] in _FRAME_ATTRIBUTES
        )
        if thread == armed[0]:  # the runner's thread: no frame at all
            if frame_event:
                refuse("a frame", ValueError if event == "sys._getframe" else RuntimeError)
            return
        if event.startswith("ctypes."):  # asked for by whom, ctypes' own Python code skipped
            frame = getframe(2)  # 0: check, 1: hook, 2: the code that raised the event
            while frame is not None and _CTYPES in frame.f_code.co_filename:
                frame = frame.f_back
            if frame is not None and _candidate_code(frame.f_code):
                # what ctypes raises for a library it cannot load, which tests expect
                refuse(event, OSError if event == "ctypes.dlopen" else RuntimeError)
            return
        code_event = event == "object.__setattr__" and len(args) > 1 and args[1] == "__code__"
        if not (frame_event or code_event or event in ("compile", "code.__new__")):
            return
        caller = _candidate_code(getframe(2).f_code)
        if caller and code_event:
            refuse("setting __code__")
        if event == "sys._getframe" and (caller or _candidate_code(args[0].f_code)):
            refuse("a frame of the solution or the test", ValueError)
        if caller and event == "object.__getattr__":
            refuse("a frame")
        if caller and event == "code.__new__":
            refuse("making a code object")
        if caller and event == "compile" and len(args) > 1:
            name = args[1]
            if not (type(name) is str and name.startswith("<") and not name.startswith("<frozen ")):
                refuse("compiling under a file's name")

    def hook(event, args):
        if not armed:
            if event == ARM:
                armed.append(get_ident())
            return
        thread = get_ident()
        if thread in inside:  # the check's own frame look-ups
            return
        inside.add(thread)
        try:
            check(event, args, thread)
        finally:
            inside.discard(thread)

    sys.addaudithook(hook)


def snapshot(namespaces, keys=None):
    """[(label, namespace, {key: value}, may_add)] for each (label, namespace dict or
    mappingproxy, may_add), of the entries named in `keys` (all if None). `may_add` None: the
    namespace may gain keys; a tuple: only those (a class's namespace)."""
    taken = []
    for label, space, may_add in namespaces:
        before = {k: v for k, v in list(space.items()) if keys is None or k in keys}
        taken.append((label, space, before, may_add))
    return taken


def changed(snapshots, allowed=None):
    """The first entry that is no longer the object it was (unless `allowed(key, value)`: a
    patch the test made), or a key added where none may be, as "label.key"; "" if none."""
    for label, space, before, may_add in snapshots:
        now = {}
        for key, value in list(space.items()):
            if type(key) is not str:
                return f"{label}: a key that is not a str"
            now[key] = value
        for key, value in before.items():
            if key not in now:
                return f"{label}.{key} (removed)"
            if now[key] is not value and not (allowed and allowed(key, now[key])):
                return f"{label}.{key}"
        if may_add is not None:
            for key in now:
                if key not in before and key not in may_add:
                    return f"{label}.{key} (added)"
    return ""


def watcher(changed, snapshots, allowed):
    """`moved()`: what `changed(snapshots, allowed)` says, for checks made often (before every
    assertion): the entries taken are looked up one by one, and the whole comparison is made
    only when a namespace's size changed since the last one (then its size is taken again, if
    the change is allowed). The list `snapshots` may grow; new entries are planned as seen."""
    missing, plans = object(), []

    def plan(entry):
        label, space, before, _ = entry
        return [label, space, tuple(before.items()), len(space)]

    def moved():
        plans.extend(plan(entry) for entry in snapshots[len(plans) :])
        for each in plans:
            label, space, items, size = each
            if len(space) != size:
                what = changed(snapshots, allowed)
                if what:
                    return what
                each[3] = len(space)
            get = space.get
            for key, value in items:
                now = get(key, missing)
                if now is not value and not allowed(key, now):
                    return f"{label}.{key}"
        return ""

    return moved
