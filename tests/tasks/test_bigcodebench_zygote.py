"""BigCodeBench's zygote prelude (`Job.zygote_prelude`): each slot's zygote imports, once,
what every BigCodeBench program has imported before it runs (pyplot, numpy, pandas...) from
BigCodeBench's libraries, and forks every candidate with them loaded. What a job does to those
modules reaches no other job; numpy's random state is each job's own; a job without the prelude
(HumanEval's) run after it in the same worker sees none of it."""

from pathlib import Path

import pytest

from evalpack import execution
from evalpack.hooks.bigcodebench import libs as bigcodebench_libs
from evalpack.hooks.bigcodebench import task as bigcodebench
from evalpack.sandbox import pool
from tests.tasks.test_bigcodebench import requires_libs, synthetic_doc

# the libraries' own versions (requirements-eval.txt), loaded before the job's code ran, changed
# by the job: options, style, a figure left open, numpy's global random state
CHANGES = """
import sys
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
class TestCases(unittest.TestCase):
    def test_changes(self):
        self.assertEqual(sys.modules["numpy"].__version__, "1.26.4")
        self.assertEqual(pd.__version__, "2.0.3")
        self.assertTrue(pd.__file__.startswith(task_func()), pd.__file__)
        self.assertEqual(pd.get_option("display.max_rows"), 60)
        self.assertEqual(plt.rcParams["lines.linewidth"], 1.5)
        self.assertEqual(plt.get_fignums(), [])
        pd.set_option("display.max_rows", 3)
        plt.rcParams["lines.linewidth"] = 9
        plt.figure()
        np.random.seed(0)
"""
# numpy's global random state as a fresh import leaves it (drawn from the OS), said by failing
RANDOM_STATE = """
import numpy as np
class TestCases(unittest.TestCase):
    def test_state(self):
        task_func()
        self.fail("state %s" % np.random.get_state()[1][:4].tolist())
"""
# ...but a process the job forks keeps the job's state, as anywhere
FORK_KEEPS_STATE = """
import os
import numpy as np
class TestCases(unittest.TestCase):
    def test_fork(self):
        task_func()
        np.random.seed(42)
        reader, writer = os.pipe()
        child = os.fork()
        if child == 0:
            os.write(writer, repr(np.random.rand()).encode())
            os._exit(0)
        os.waitpid(child, 0)
        self.assertEqual(float(os.read(reader, 64)), np.random.rand())
"""
# a HumanEval-style job (no prelude) in the same worker: nothing of the libraries is loaded
PLAIN = execution.Job(
    program="import sys\ndef loaded():\n    return sorted({'numpy', 'pandas'} & set(sys.modules))\n",
    test="assert loaded() == [], loaded()\n",
    entry_point="loaded",
)


@requires_libs
def test_preloaded_libraries_are_the_jobs_own_and_no_job_sees_anothers_changes():
    libs = str(bigcodebench_libs.folder())
    returns_libs = f"def task_func():\n    return {libs!r}\n"
    changes = bigcodebench.job(synthetic_doc(CHANGES), returns_libs, libs)
    state = bigcodebench.job(synthetic_doc(RANDOM_STATE), "def task_func():\n    pass\n", libs)
    assert changes.zygote_prelude and changes.zygote_prelude == state.zygote_prelude
    # one worker: every job forked from the same zygote, then a job that needs another one
    forks = bigcodebench.job(synthetic_doc(FORK_KEEPS_STATE), "def task_func():\n    pass\n", libs)
    jobs = [changes, changes, state, state, forks, PLAIN]
    verdicts = execution.run_jobs(jobs, workers=1)
    for verdict in verdicts[:2] + verdicts[4:]:
        assert verdict.passed, verdict.reason
    states = [verdict.reason for verdict in verdicts[2:4]]
    assert all("AssertionError: state [" in reason for reason in states), states
    assert states[0] != states[1]


def test_a_prelude_is_for_full_runtime_jobs_only():
    with pytest.raises(ValueError, match="full-runtime jobs only"):
        execution.Job("def f():\n    pass\n", "f()\n", "f", zygote_prelude="import numpy\n")


@requires_libs
def test_the_zygote_is_one_thread_when_it_forks():
    """Candidates are cloned with a raw system call, without libc's fork handlers: a second
    thread holding a lock at that moment would leave it locked in the candidate."""
    prelude = bigcodebench.job(synthetic_doc(RANDOM_STATE), "", str(bigcodebench_libs.folder()))
    try:
        zygote = pool.current(prelude.zygote_prelude).zygote.pid
        tasks = Path(f"/proc/{zygote}/task")
        threads = [(task / "comm").read_text().strip() for task in tasks.iterdir()]
    finally:
        pool.close()
    assert len(threads) == 1, threads  # the interpreter's own thread only
