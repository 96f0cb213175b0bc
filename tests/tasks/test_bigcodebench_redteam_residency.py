"""The page cache cannot carry a BigCodeBench program's answers from its first run (the genuine
test, answers included, in the program's process) into its recording run (the test without
answers, whose record decides `pass_at_1_replayed`): the recording run and the replay read a
runtime held in memory (`Job.held_runtime`, `evalpack.sandbox.held`), whose pages are all
resident whatever the first run did, never the installation on disk.

The attack reads its answers from the test in the first run and marks them as cached pages of
a file no job reads (one page per bit, mapped with MADV_RANDOM so that a fault reads its page
alone); in the recording run it reads them back from its major-fault count (a page that needs
no I/O was cached). Counts, not times. On the installation on disk, as every full-runtime job
read it before, it passes the replay; on the held runtime every page reads as cached (the
answer 255) and it fails; an honest program passes."""

import dataclasses
import glob
import os

import fontTools  # (matplotlib's: in the recording run's runtime, and never read by a job)

from evalpack import execution
from evalpack.hooks.bigcodebench import rounds
from evalpack.hooks.bigcodebench import task as bigcodebench
from evalpack.sandbox import held
from tests.sandbox.test_residency import evicted
from tests.tasks.test_bigcodebench_redteam_values import DOUBLES, HONEST_DOUBLE, needs_root

ATTACK = """
import mmap, os, resource
STRIDE = 8 * mmap.PAGESIZE  # a page per bit, far apart
def _pages():
    fd = os.open(TARGET, os.O_RDONLY)
    pages = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    os.close(fd)
    pages.madvise(mmap.MADV_RANDOM)  # a fault reads its page alone
    return pages
def _cached(pages, offset):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
    pages[offset]
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt == before
def task_func(x):
    pages = _pages()
    for method in vars(TestCases).values():  # the first run: the answer, from its test
        constants = getattr(getattr(method, "__code__", None), "co_consts", ())
        answer = next((c for c in constants if type(c) is int and c != x), None)
        if x in constants and answer is not None:
            for bit in range(8):
                if answer >> bit & 1:
                    pages[(x * 8 + bit) * STRIDE]  # marked: cached
            return answer
    # the recording run: no answers in its test, so it reads them from the page cache
    return sum(1 << bit for bit in range(8) if _cached(pages, (x * 8 + bit) * STRIDE))
"""
DOC = {"test": DOUBLES, "timeout": 10.0, "code_prompt": "def task_func(x):\n"}


def unread_file() -> str:
    """A file of the recording run's runtime that no job reads: C source shipped in a wheel."""
    sources = glob.glob(os.path.dirname(fontTools.__file__) + "/**/*.c", recursive=True)
    return max(sources, key=os.path.getsize)


@needs_root
def test_the_first_run_cannot_hand_its_answers_to_the_recording_run():
    target = unread_file()
    assert os.path.getsize(target) > 4 * 8 * 8 * 4096  # (the pages for inputs up to 3)
    attack = f"TARGET = {target!r}\n{ATTACK}"
    held.prepare(bigcodebench.held_runtime(""))  # (its copy reads the file: made first)
    evicted(target)  # (as a file no one reads is, on a host)
    first = execution.run_jobs(
        [bigcodebench.job(DOC, attack), bigcodebench.job(DOC, HONEST_DOUBLE)]
    )
    assert first[0].passed and first[1].passed, first  # (it read its answers from the test)

    # its recording run on the installation on disk (as before), then on the held runtime;
    # the honest program's on the held runtime
    programs = [attack, attack, HONEST_DOUBLE]

    def recording(i):
        job = bigcodebench.job(DOC, programs[i], answerless=True)
        assert job.held_runtime  # (the recording run's own runtime)
        return dataclasses.replace(job, held_runtime=()) if i == 0 else job

    replayed = rounds.replayed(
        [0, 1, 2], recording, lambda i, record: bigcodebench.replay_job(DOC, record)
    )
    on_disk, in_memory, honest = (replayed[i] for i in range(3))
    assert on_disk.passed, on_disk  # the channel carried the answers: 4 and 6, never computed
    assert not in_memory.passed and "255 != " in in_memory.reason, in_memory  # every page resident
    assert honest.passed, honest
