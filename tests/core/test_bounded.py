import os
import signal
import subprocess
import sys
import threading
import time

from evalpack.core.bounded import BoundExceeded, bounded_map, time_limit
from tests.conftest import BACKSTOP, wait_for

# The hard bound a spinning item must reach: far beyond what every other item of its map needs
# (a fork and a few ms of work, the soft bound's 0.2 s of CPU) however loaded the machine is.
HARD_BOUND = 5.0


def _work(item):
    kind, value = item
    if kind == "spin":
        while True:
            pass
    if kind == "raise":
        raise ValueError(value)
    if kind == "exit":
        os._exit(3)
    if kind == "soft":
        try:
            with time_limit(0.2):
                while True:
                    pass
        except BoundExceeded:
            return "soft bound"
    return value * 2


def test_outcomes_keep_order_and_survive_hangs_crashes_and_errors():
    items = [("ok", 1), ("spin", 0), ("raise", "bad"), ("exit", 0), ("soft", 0), ("ok", 21)]
    outcomes = bounded_map(_work, items, timeout=HARD_BOUND, workers=2)
    assert [o.status for o in outcomes] == ["ok", "timeout", "error", "error", "ok", "ok"]
    assert outcomes[0].value == 2 and outcomes[5].value == 42
    assert outcomes[2].error == "ValueError: bad"
    assert "worker died" in outcomes[3].error
    assert outcomes[4].value == "soft bound"


def test_hard_bound_works_from_a_non_main_thread():
    result = {}
    thread = threading.Thread(
        target=lambda: result.update(out=bounded_map(_work, [("spin", 0)], timeout=0.5))
    )
    thread.start()
    thread.join(BACKSTOP)
    assert not thread.is_alive()
    assert result["out"][0].status == "timeout"


def test_time_limit_is_inert_off_the_main_thread():
    ran = []
    thread = threading.Thread(target=lambda: ran.append(_soft_noop()))
    thread.start()
    thread.join()
    assert ran == ["finished"]


def _soft_noop():
    with time_limit(0.01):
        return "finished"


def _swallowing(catches):
    """Spins, swallowing `BoundExceeded` (as math-verify does) until it caught `catches`."""
    caught = 0
    try:
        with time_limit(0.1):
            while caught < catches:
                try:
                    while True:
                        pass
                except BoundExceeded:
                    caught += 1
    except BoundExceeded:  # the next alarm may come before the block ends
        pass
    return caught


def test_time_limit_interrupts_again_code_that_swallows_its_alarm():
    # a bound that fired once would leave the second spin running until the hard bound
    (outcome,) = bounded_map(_swallowing, [3], timeout=60)
    assert (outcome.status, outcome.value) == ("ok", 3)


def _swallowed_once(_item):
    """Spins until the bound fires once, swallows it and returns as if nothing happened."""
    with time_limit(0.05) as bound:
        try:
            while True:
                pass
        except BoundExceeded:
            answer = "an answer after the bound"
    return answer, bound.expired


def test_the_bound_says_it_expired_even_when_its_exception_was_swallowed():
    (outcome,) = bounded_map(_swallowed_once, [None], timeout=60)
    assert outcome.value == ("an answer after the bound", True)
    with time_limit(5) as bound:
        pass
    assert not bound.expired


def test_affinity_keeps_a_key_on_one_worker_and_results_in_order():
    items = ["a1", "b1", "a2", "b2", "c1", "a3"]
    outcomes = bounded_map(_stamped, items, timeout=10, workers=1, affinity=lambda item: item[0])
    assert [o.value[0] for o in outcomes] == items  # results in the order of the items
    ran = [item for item, _ in sorted((o.value for o in outcomes), key=lambda v: v[1])]
    assert ran == ["a1", "a2", "a3", "b1", "b2", "c1"]  # one key's items one after the other
    two = bounded_map(_stamped, items * 4, timeout=10, workers=2, affinity=lambda item: item[0])
    assert sorted(o.value[0] for o in two) == sorted(items * 4)  # every item once, two workers


def _stamped(item):
    return item, time.monotonic_ns()


def test_a_long_key_is_shared_early_so_the_run_ends_on_short_items(tmp_path):
    """A worker whose key runs out takes the key with the most work left by what its items
    took so far: here the long key, which both workers finish before the short keys, instead
    of one worker running it alone at the end while the other waits. Asserted as the order in
    which each worker ran its items (no short item before a long one), not as end times: no
    scheduling delay can reorder one process's items."""
    started = tmp_path / "a1-done"  # the long items wait for it: both workers are at work
    items = [("a1", started)] + [(f"L{n}", started) for n in range(6)]
    items += [(f"{key}1", started) for key in "bcdefghijk"]
    outcomes = bounded_map(
        _timed, items, timeout=BACKSTOP, workers=2, affinity=lambda item: item[0][0]
    )
    ran = [o.value for o in outcomes]  # (item, worker pid, when it ended, by that worker)
    workers = {
        pid: [item for item, _, _ in sorted((r for r in ran if r[1] == pid), key=lambda r: r[2])]
        for pid in {r[1] for r in ran}
    }
    assert all(any(item[0] == "L" for item in order) for order in workers.values()), workers
    for order in workers.values():  # a worker ran no short item while a long one waited
        last_long = max(i for i, item in enumerate(order) if item[0] == "L")
        assert all(item[0] in "aL" for item in order[:last_long]), workers


def _timed(item):
    name, started = item
    if name == "a1":
        started.touch()
    elif name[0] == "L":
        deadline = time.monotonic() + BACKSTOP
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.3)
    return name, os.getpid(), time.monotonic_ns()


KILLED_PARENT = """
import os, sys, time
from evalpack.core.bounded import bounded_map

def note_pid(item):
    open(os.path.join(sys.argv[1], str(os.getpid())), "w").close()
    time.sleep(0.05)

bounded_map(note_pid, range(100000), timeout=60, workers=2)
"""


def test_workers_of_a_parent_killed_outright_stop(tmp_path):
    # each worker holds the parent's end of its sibling's pipe, so none sees an end of file
    parent = subprocess.Popen([sys.executable, "-c", KILLED_PARENT, str(tmp_path)])
    try:
        wait_for(lambda: len(list(tmp_path.iterdir())) >= 2, "both workers to start")
        workers = {int(p.name) for p in tmp_path.iterdir()}
    finally:
        parent.kill()
        parent.wait()
    try:
        wait_for(
            lambda: not any(_running(pid) for pid in workers),
            f"workers {sorted(workers)} to stop after their parent was killed",
        )
    finally:
        for pid in workers:  # what the test started, it stops
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie, exited but not yet reaped by init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
