import os
import threading

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
