import os
import threading
import time

from evalpack.core.bounded import BoundExceeded, bounded_map, time_limit


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
    outcomes = bounded_map(_work, items, timeout=1.5, workers=2)
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
    thread.join(30)
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


def test_a_long_key_is_shared_early_so_the_run_ends_on_short_items():
    """A worker whose key runs out takes the key with the most work left by what its items
    took so far: here the long key, which both workers finish before the short keys, instead
    of one worker running it alone at the end while the other waits."""
    items = ["a1"] + [f"L{n}" for n in range(6)] + [f"{key}1" for key in "bcdefghijk"]
    outcomes = bounded_map(_timed, items, timeout=10, workers=2, affinity=lambda item: item[0])
    ran = {o.value[0]: o.value[1:] for o in outcomes}
    long_keys = [ran[item] for item in items if item[0] == "L"]
    assert len({pid for pid, _ in long_keys}) == 2  # both workers took the long key's items
    assert max(end for _, end in long_keys) < max(end for pid, end in ran.values())


def _timed(item):
    time.sleep(0.3 if item[0] == "L" else 0.01)
    return item, os.getpid(), time.monotonic()
