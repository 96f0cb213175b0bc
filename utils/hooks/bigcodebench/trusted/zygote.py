"""The prelude each BigCodeBench slot's zygote runs once (`Job.zygote_prelude`): trusted code,
run before any candidate exists. It imports what BigCodeBench's harness has imported before
every program (`unittest.mock`; matplotlib's pyplot, in its `reliability_guard`, and numpy with
it), pandas, which most tests import, and the testing helpers the runner guards, from the job's
libraries and with the settings the runner gives a job (Agg, UTC). Every candidate is forked
with them loaded instead of importing them (about 1 s of CPU a job); numpy's global random state
is reseeded in each (once: a process the job forks keeps its state, as anywhere), as its import
seeds it.

The zygote stays one thread (its candidates are cloned without libc's fork handlers): pandas'
attempt at the venv's pyarrow (which refuses numpy 1.x) loads Arrow's jemalloc, whose
background thread is turned off here. Shipped as source (`sources.zygote_prelude` appends the
call of `prepare`): standard library only.
"""

import os
import sys
import time


def prepare(libs, modules):
    """`libs` first on the path, the job's settings, `modules` imported, numpy reseeded in
    each candidate."""
    if libs:
        sys.path.insert(0, libs)
    os.environ.update(TZ="UTC", MPLBACKEND="Agg", JE_ARROW_MALLOC_CONF="background_thread:false")
    time.tzset()
    for name in modules:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001, S110 (a job that imports it raises it again, in its test)
            pass
    numpy = sys.modules.get("numpy")
    done = []

    def reseed_once():
        if numpy is not None and not done:  # the candidate, not again what it forks (they keep it)
            done.append(True)
            numpy.random.seed()

    os.register_at_fork(after_in_child=reseed_once)
