import os
import threading
import time

from evalpack.scoring.bounded import BoundExceeded, bounded_map, time_limit


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
