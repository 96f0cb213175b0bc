"""A served checkpoint's tasks as one stream of work (`evalpack.leaderboard.stream`): pairs side by
side in one worker, the model's concurrency shared, each pair's files as before, a failing pair
alone, and a rerun sending only what is missing."""

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from evalpack.core import catalog
from evalpack.leaderboard import executors, rundirs, stream
from evalpack.models.slots import (
    SCORING_NICENESS,
    Slots,
    generation_done,
    running_as,
    stream_priority,
)
from tests.conftest import requires_shared, wait_for
from tests.models.http_stub import Stub

TASKS = ["minerva_math_tulu_algebra", "minerva_math_tulu_geometry", "minerva_math_tulu_prealgebra"]
LIMIT, CONCURRENT = 4, 3


def test_a_freed_slot_goes_to_the_earliest_task():
    slots, order, ready = Slots(1), [], []
    with slots.held(priority=9):

        def wait(priority: int) -> None:
            ready.append(priority)
            with slots.held(priority):
                order.append(priority)

        threads = [threading.Thread(target=wait, args=(p,)) for p in (3, 1, 2)]
        for thread in threads:
            thread.start()
            while len(ready) < threads.index(thread) + 1 or len(slots._waiting) < len(ready):
                time.sleep(0.01)
    for thread in threads:
        thread.join()
    assert order == [1, 2, 3] and slots.busy == 0


def test_heavily_scored_runs_then_the_most_generation_ahead_go_first():
    """Stream priorities: runs of a heavily scored task first (its scoring then overlaps the
    others' generation), then the most new tokens asked for, then the earlier run; outside a
    stream every run is number 0 and not heavy."""
    assert stream_priority(3) == (True, -3, 0)
    with running_as(3, heavy_scoring=True):
        heavy_shorter = stream_priority(512)
    with running_as(2):
        later_longer = stream_priority(20 * 2048)
    with running_as(1):
        earlier_shorter = stream_priority(512)
    with running_as(0):
        earliest_shorter = stream_priority(512)
    assert stream_priority(512) == (True, -512, 0)  # the setting ends with its run
    ranked = sorted([earlier_shorter, later_longer, earliest_shorter, heavy_shorter])
    assert ranked == [heavy_shorter, later_longer, earliest_shorter, earlier_shorter]


def test_tasks_whose_yaml_declares_heavy_scoring_start_first():
    """`scoring_cost: heavy` in a task's YAML metadata (a group: in a member's) puts its pair
    first in the stream; the others keep the suite's order."""
    heavy = ["minerva_math_tulu", "minerva_math_tulu_algebra", "codex_humanevalplus_tulu"]
    heavy += ["bigcodebench_tulu", "bigcodebench_hard_tulu"]
    light = ["gsm8k_tulu", "codex_humaneval_tulu", "codex_humanevalplus_tulu_greedy"]
    light += ["minerva_math_500_tulu", "ifeval_tulu", "mmlu_mc_tulu", "no_such_task"]
    assert [catalog.heavy_scoring(name) for name in heavy + light] == [True] * 5 + [False] * 7
    suite = [entry["task"] for entry in catalog.load_suites()["tulu_3_dev"]["tasks"]]
    ordered = stream.heavy_scoring_first([{"task": task} for task in suite])
    assert [(pair["task"], heavy) for pair, heavy in ordered] == [
        ("minerva_math_tulu", True),
        ("codex_humanevalplus_tulu", True),
        *[(task, False) for task in suite if task not in heavy],
    ]


def niceness_after_generation(streamed: bool) -> tuple[int, int, int]:
    """In a fresh thread: (its niceness before, after `generation_done`, a child's then)."""
    seen = []

    def run() -> None:
        thread = threading.get_native_id()
        before = os.getpriority(os.PRIO_PROCESS, thread)
        with running_as(3) if streamed else contextlib.nullcontext():
            generation_done()
            generation_done()  # once per run
            after = os.getpriority(os.PRIO_PROCESS, thread)
            child = subprocess.run(
                [sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"],
                capture_output=True,
                text=True,
                check=True,
            )
        seen.append((before, after, int(child.stdout)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return seen[0]


def test_a_streamed_run_scores_at_a_lower_cpu_priority():
    """After its generation, a streamed run's thread and the processes it starts (execution,
    math-verify workers) give way to the other runs' requests; the process is untouched."""
    process = os.getpriority(os.PRIO_PROCESS, 0)
    before, after, child = niceness_after_generation(streamed=True)
    assert before == process
    assert after == child == min(19, process + SCORING_NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, 0) == process
    assert niceness_after_generation(streamed=False) == (process, process, process)


def test_what_a_run_imports_as_it_ends_is_imported_before_the_pairs_threads_start():
    """lm-eval's results table imports pytablewriter, and loguru with it, whose fork handlers
    give back every lock loguru holds: imported in one pair's thread while another forks (a
    scorer's workers), its own lock was given back under it ("release unlocked lock", a served
    pair failed so under load). The side-by-side runner imports it first (a fresh interpreter:
    this one may have it already)."""
    probe = (
        "import sys\n"
        "from evalpack.leaderboard import stream\n"
        "before = {'loguru', 'pytablewriter'} & set(sys.modules)\n"
        "stream.import_lazy_modules()\n"
        "print(sorted(before), sorted({'loguru', 'pytablewriter'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "['loguru',", "'pytablewriter']"], out.stderr


def test_a_stopped_waiter_gives_up_its_turn():
    slots = Slots(1)
    with slots.held(), slots.held(stopped=lambda: True) as held:
        assert held is False
    assert slots.busy == 0 and slots._waiting == []


def start_worker(stub: Stub, board: Path, entries: list[dict]) -> subprocess.Popen:
    checkpoint = {
        "name": "served",
        "model": "answer-server",
        "model_args": {
            "base_url": stub.url("/answer"),
            "num_concurrent": CONCURRENT,
            "seed": 1,
            "max_retries": 0,
        },
    }
    spec = executors.unit_spec(executors.Unit(checkpoint, entries), board, ["--limit", str(LIMIT)])
    assert spec["model"] == "answer-server"
    return executors.start_worker(spec, "local")


def run_worker(stub: Stub, board: Path, entries: list[dict]) -> None:
    start_worker(stub, board, entries).wait(timeout=600)


def spans(stub: Stub) -> dict[str, tuple[float, float, float]]:
    """Per task: (first request's start, last request's start, last request's end)."""
    found: dict[str, list] = {}
    for record in stub.records:
        task = record["payload"]["sample_id"].split("/")[0]
        found.setdefault(task, []).append(record)
    return {
        task: (
            min(r["start"] for r in rows),
            max(r["start"] for r in rows),
            max(r["end"] for r in rows),
        )
        for task, rows in found.items()
    }


@requires_shared
def test_a_served_checkpoint_streams_its_tasks(mirror, tmp_path):
    stub = Stub().start()
    try:
        stub.delay = 0.3
        failing = f"{TASKS[1]}/2/0"
        stub.fault_for = lambda payload: "500" if payload["sample_id"] == failing else None
        entries = [{"task": task, "chat": True} for task in TASKS]
        run_worker(stub, tmp_path, entries)
        # the model's concurrency holds for all pairs together, and is used
        assert stub.max_in_flight == CONCURRENT
        assert len(stub.records) == LIMIT * len(TASKS)
        first, _, third = (tmp_path / "served" / task for task in TASKS)
        # the failing pair failed alone; the others have everything a pair has
        assert "1 of 4 requests" in (tmp_path / "served" / TASKS[1] / "failed").read_text()
        for pair in (first, third):
            marker = json.loads((pair / rundirs.DONE_MARKER).read_text())
            assert marker["side_by_side"] is True
            assert rundirs.results_files(pair) and list(pair.rglob("samples_*.jsonl"))
            assert len((pair / rundirs.COMPLETION_LOG).read_text().splitlines()) == LIMIT
            assert "Selected Tasks" in (pair / rundirs.PAIR_LOG).read_text()
        # one stream: a later task's requests went out while an earlier one's were in flight,
        # and, as all ask for as many tokens, the earlier task's requests went first
        timing = spans(stub)
        assert timing[TASKS[1]][0] < timing[TASKS[0]][2]
        assert timing[TASKS[0]][1] <= timing[TASKS[2]][0]

        # a rerun of the failed pair sends only the request that failed
        stub.records.clear()
        stub.fault_for = lambda payload: None
        run_worker(stub, tmp_path, entries[1:2])
        assert [r["payload"]["sample_id"] for r in stub.records] == [failing]
        assert (tmp_path / "served" / TASKS[1] / rundirs.DONE_MARKER).is_file()
    finally:
        stub.stop()


def logged_answers(board: Path) -> int:
    """Completions in the pairs' completion logs (one line each)."""
    return sum(
        len(log.read_text().splitlines())
        for log in (board / "served").glob(f"*/{rundirs.COMPLETION_LOG}")
    )


@requires_shared
def test_a_stream_killed_mid_way_resends_only_what_was_not_answered(mirror, tmp_path):
    stub = Stub().start()
    try:
        stub.held_after = 5  # five requests are answered, the others wait
        entries = [{"task": task, "chat": True} for task in TASKS]
        worker = start_worker(stub, tmp_path, entries)
        try:
            wait_for(
                lambda: logged_answers(tmp_path) >= 5 or worker.poll() is not None,
                "five answers in the completion logs",
            )
        finally:
            worker.kill()  # kill -9, while the other requests are in flight or waiting
            worker.wait()
        answered = {r["payload"]["sample_id"] for r in stub.records if r["number"] < 5}
        assert len(answered) == logged_answers(tmp_path) == 5
        stub.held_after = None
        stub.release.set()
        stub.records.clear()

        run_worker(stub, tmp_path, entries)
        every = {f"{task}/{doc}/0" for task in TASKS for doc in range(LIMIT)}
        sent = [r["payload"]["sample_id"] for r in stub.records]
        assert sorted(sent) == sorted(every - answered)
        for task in TASKS:
            assert (tmp_path / "served" / task / rundirs.DONE_MARKER).is_file()
    finally:
        stub.stop()
