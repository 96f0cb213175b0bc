"""The fourth red team's faithfulness bugs (issue 47), honest programs judged as in one process:

- work in a helper thread on a loaded CPU is judged by its CPU time: the wall-clock backstop
  does not count the time any thread of the job waited for a CPU (not only the main thread's);
- the in-memory view keeps its files' modification times, so the standard library's and
  numpy's compiled bytecode is current there and a candidate does not compile them again."""

import os
import subprocess
import sys

import pytest

from evalpack.execution import run_jobs
from tests.sandbox.conftest import HONEST, job, needs_root, program

# 0.6 s of CPU in a thread while the main thread waits in join (limit 1 s, backstop 5 s)
HELPER_THREAD = (
    program("""
    import threading, time
    def work():
        end = time.thread_time() + 0.6
        while time.thread_time() < end:
            pass
    helper = threading.Thread(target=work)
    helper.start()
    helper.join()
    """)
    + HONEST
)
SPIN = "while True: pass"


@pytest.fixture
def loaded_cpu():
    """The job's CPU loaded: this process (and so the sandbox's slot and its jobs) kept on one
    CPU, with a spinner there in a session of its own (its own scheduler autogroup) whose
    autogroup has nice -10, so a job's group gets about a tenth of that CPU. The other CPUs
    stay free for the rest of the machine (a test suite's other workers), and the process's
    one-time sandbox set-up (the view, ~1 s of CPU) is done before the spinner starts: it runs
    only as long as the jobs do."""
    cpus = os.sched_getaffinity(0)
    cpu = max(cpus)
    os.sched_setaffinity(0, {cpu})
    run_jobs([job(HONEST)], workers=1)
    spinner = subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True)
    try:
        os.sched_setaffinity(spinner.pid, {cpu})
        with open(f"/proc/{spinner.pid}/autogroup", "w") as handle:
            handle.write("-10")
        yield
    finally:
        spinner.kill()
        spinner.wait()
        os.sched_setaffinity(0, cpus)


@needs_root
def test_work_in_a_helper_thread_is_judged_by_its_cpu_time(loaded_cpu):
    threaded, honest = run_jobs([job(HELPER_THREAD, timeout=1.0), job(HONEST)], workers=1)
    assert threaded.passed, threaded
    assert threaded.seconds > 5.0, "the CPU was not loaded: the backstop was not reached"
    assert honest.passed, honest


# honest only where the bytecode of the modules it imports is current (the header's source
# modification time and size are the source's): otherwise each import compiles it again
CURRENT_BYTECODE = program("""
    import os, struct, sys
    import asyncio, email.mime.text, numpy, xml.dom.minidom
    STALE = []
    for name in ("asyncio", "email.mime.text", "numpy", "xml.dom.minidom", "json"):
        spec = sys.modules[name].__spec__
        with open(spec.cached, "rb") as handle:
            flags, mtime, size = struct.unpack("<4xIII", handle.read(16))
        source = os.stat(spec.origin)
        if flags == 0 and (mtime, size) != (int(source.st_mtime), source.st_size):
            STALE.append(name)
    """) + HONEST.replace("return a + b", "return a + b if not STALE else 0")


@needs_root
def test_the_views_bytecode_is_current():
    in_view, full_runtime = run_jobs(
        [job(CURRENT_BYTECODE), job(CURRENT_BYTECODE, full_runtime=True)], workers=1
    )
    assert full_runtime.passed, full_runtime  # control: the installation's own files
    assert in_view.passed, in_view
