"""Resumable leaderboard runs and rescoring (`evalpack.leaderboard.board`); suites and the
models file: test_runs_suites.py."""

import json
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from evalpack.cli import rescore as rescoring
from evalpack.leaderboard import board as board_run
from evalpack.leaderboard import rundirs
from tests.boards import LIMIT, MATH_DATA, TASKS, board_command, evalpack_process, requests_by_task
from tests.conftest import BACKSTOP, read_jsonl, requires_shared, sigint_as_at_a_terminal


def test_model_args_mapping_goes_as_json():
    command = rundirs.lm_eval_command("replay", {"from_doc": "{solution}"}, [], Path("out"))
    assert command[command.index("--model_args") + 1] == '{"from_doc": "{solution}"}'


def test_requested_tasks_and_replay_rows():
    results = {
        "group_subtasks": {"g": ["a", "b"], "a": [], "b": []},
        "configs": {"a": {}, "b": {}, "c": {}},
    }
    assert rundirs.requested_tasks(results) == ["g", "c"]
    samples = [{"doc_id": 3, "resps": [["x", "y"]]}]
    assert rescoring.replay_rows(samples, "t") == [
        {"task": "t", "doc_id": 3, "repeat": 0, "completion": "x"},
        {"task": "t", "doc_id": 3, "repeat": 1, "completion": "y"},
    ]


# --- the leaderboard, end to end ----------------------------------------------------------------


@requires_shared
def test_killed_leaderboard_resumes_without_regenerating(leaderboard):
    root, at_kill = leaderboard["root"], leaderboard["at_kill"]
    # killed in qwen's first pair: both solutions pairs had finished, no qwen pair had
    assert at_kill["done"] == {f"solutions/{t}" for t in TASKS}
    assert at_kill["solutions"] == {t: LIMIT for t in TASKS}
    # resumed: the finished pairs were skipped, so their request counts did not move
    assert requests_by_task(root / "solutions.log") == at_kill["solutions"]
    assert requests_by_task(root / "qwen.log") == {t: LIMIT for t in TASKS}
    assert leaderboard["resume_log"].count("finished earlier, skipped") == 2
    for ckpt in ("solutions", "qwen"):
        for task in TASKS:
            assert rundirs.pair_is_done(root / "board" / ckpt / task), (ckpt, task)


@requires_shared
def test_a_broken_checkpoint_does_not_stop_the_others(leaderboard):
    board_dir = leaderboard["root"] / "board"
    assert leaderboard["resume_rc"] == 1
    assert (
        "2 failed (broken/minerva_math_tulu_algebra, broken/minerva_math_tulu_geometry)"
        in (leaderboard["resume_log"])
    )
    assert "nonexistent.jsonl" in (board_dir / "broken" / TASKS[0] / rundirs.PAIR_LOG).read_text()
    # each failure says why in its line, and is not retried: a missing file stays missing
    failures = [line for line in leaderboard["resume_log"].splitlines() if "FAILED" in line]
    assert len(failures) == 2 and all("FileNotFoundError" in line for line in failures)
    assert not any("will retry" in line for line in failures)
    assert all("not retried" in line for line in failures)
    # the model was loaded once for both tasks of a checkpoint
    assert len(rundirs.read_workers(board_dir / "solutions")) == 1
    assert (
        json.loads((board_dir / "qwen" / rundirs.CHECKPOINT_FILE).read_text())["model"] == "replay"
    )


def metric_values(results_file: Path) -> dict:
    results = json.loads(results_file.read_text())["results"]
    return {task: {k: v for k, v in values.items() if "," in k} for task, values in results.items()}


@requires_shared
def test_interrupted_pair_restarts_from_cached_completions(leaderboard):
    # a pair killed while lm-eval was saving: its generations are in the checkpoint's cache and
    # its results file is written, but its sample log is not and there is no `done` marker
    root = leaderboard["root"]
    pair = root / "board" / "qwen" / TASKS[0]
    (old,) = rundirs.results_files(pair)
    before = metric_values(old)
    (pair / rundirs.DONE_MARKER).unlink()
    for samples in pair.rglob("samples_*.jsonl"):
        samples.unlink()
    requests_before = requests_by_task(root / "qwen.log")
    rerun = evalpack_process(*board_command(root, leaderboard["files"]), stderr=subprocess.DEVNULL)
    rerun.wait()
    assert requests_by_task(root / "qwen.log") == requests_before  # nothing regenerated
    (new,) = rundirs.results_files(pair)  # the unfinished attempt's results file is gone
    assert new != old and metric_values(new) == before
    assert len(read_jsonl(next(pair.rglob("samples_*.jsonl")))) == LIMIT
    assert rundirs.pair_is_done(pair)


def test_a_results_file_without_the_marker_is_unfinished(tmp_path):
    pair = tmp_path / "ckpt" / "task"
    (pair / "model").mkdir(parents=True)
    (pair / "model" / "results_2024-01-01.json").write_text("{}")
    (pair / "model" / "samples_task_2024-01-01.jsonl").write_text("")
    (pair / rundirs.PAIR_LOG).write_text("log")
    assert not rundirs.pair_is_done(pair)
    rundirs.clear_unfinished(pair)
    assert sorted(p.name for p in pair.rglob("*") if p.is_file()) == [rundirs.PAIR_LOG]


def test_a_checkpoint_directory_of_another_model_is_refused(tmp_path, caplog):
    entries = [{"task": "t", "chat": False}]
    first = [
        {"name": "a", "model": "hf", "model_args": "pretrained=step1000"},
        {"name": "b", "model": "replay"},
    ]
    for ckpt in first:
        board_run.claim_checkpoint_dir(ckpt, tmp_path / ckpt["name"])
        (tmp_path / ckpt["name"] / "t").mkdir()
        (tmp_path / ckpt["name"] / "t" / rundirs.DONE_MARKER).write_text("{}")
    changed = [{**first[0], "model_args": "pretrained=step2000"}, first[1]]
    with caplog.at_level(logging.ERROR, logger="evalpack.leaderboard.board"):
        outcome = board_run.run_leaderboard(changed, entries, tmp_path, [])
    assert outcome == {"done": ["b/t"], "ran": [], "failed": ["a/t"], "cannot": []}
    assert "model_args.pretrained: 'step1000' -> 'step2000'" in caplog.text
    assert "new name" in caplog.text
    recorded = json.loads((tmp_path / "a" / rundirs.CHECKPOINT_FILE).read_text())
    assert recorded == first[0]  # the directory still describes what it holds


@requires_shared
def test_rescoring_a_saved_run_gives_the_same_metrics(leaderboard, mirror, tmp_path):
    source = leaderboard["root"] / "board" / "qwen"
    assert rescoring.rescore(source, tmp_path) == []
    flex = []
    for original in rundirs.results_files(source):
        task = rundirs.run_folder(original).name
        (rescored,) = rundirs.results_files(tmp_path / task)
        assert metric_values(rescored) == metric_values(original)
        assert json.loads(rescored.read_text())["config"]["model"] == "replay"
        flex.append(metric_values(original)[task]["exact_match_flex,olmes"])
    assert len(flex) == 2 and max(flex) > 0  # real answers were scored, not just empty ones


@requires_shared
def test_rescoring_a_subset_of_tasks(leaderboard, mirror, tmp_path, caplog):
    source = leaderboard["root"] / "board" / "qwen"
    with caplog.at_level(logging.INFO, logger="evalpack.rescore"):
        assert rescoring.rescore(source, tmp_path, ["minerva_math_tulu_geometry"]) == []
    assert [rundirs.run_folder(p).name for p in rundirs.results_files(tmp_path)] == [
        "minerva_math_tulu_geometry"
    ]
    assert "rescored minerva_math_tulu_geometry in " in caplog.text
    with pytest.raises(ValueError, match="no run under .* names gsm8k_tulu"):
        rescoring.rescore(source, tmp_path, ["gsm8k_tulu"])


def test_rescoring_needs_sample_logs(tmp_path):
    (tmp_path / "results_x.json").write_text(json.dumps({"configs": {"t": {}}}))
    with pytest.raises(FileNotFoundError, match="--log_samples"):
        rescoring.rescore(tmp_path, tmp_path / "out")


@requires_shared
def test_an_interrupted_sampled_pair_regenerates_nothing(tmp_path):
    # lm-eval's --use_cache never reuses sampled completions; the pair's completion log does
    models = tmp_path / "models.yaml"
    models.write_text(
        json.dumps(
            {
                "checkpoints": [
                    {
                        "name": "s",
                        "model": "replay",
                        "model_args": {
                            "from_doc": "{solution}",
                            "request_log": str(tmp_path / "asked.log"),
                        },
                    }
                ]
            }
        )
    )
    suites = tmp_path / "suites.yaml"
    suites.write_text(
        json.dumps(
            {"sampled": {"tasks": [{"task": "math500", "args": ["--metadata", '{"repeats": 3}']}]}}
        )
    )
    command = [
        "leaderboard",
        "run",
        "--models",
        str(models),
        "--suites",
        str(suites),
        "--suite",
        "sampled",
        "--output",
        str(tmp_path / "board"),
        "--limit",
        "2",
    ]
    pair = tmp_path / "board" / "s" / "math500"
    assert evalpack_process(*command, stderr=subprocess.DEVNULL).wait() == 0
    (first,) = rundirs.results_files(pair)
    assert len(read_jsonl(tmp_path / "asked.log")) == 6  # 2 problems x 3 samples
    # killed while scoring: completions logged, no results, no marker
    (pair / rundirs.DONE_MARKER).unlink()
    before = metric_values(first)
    assert evalpack_process(*command, stderr=subprocess.DEVNULL).wait() == 0
    assert len(read_jsonl(tmp_path / "asked.log")) == 6  # nothing regenerated
    (again,) = rundirs.results_files(pair)
    assert metric_values(again)["math500"] == before["math500"]
    assert before["math500"]["pass@1,samples"] == 1.0  # the solutions were scored


def test_ctrl_c_prints_one_line_naming_the_pair(tmp_path):
    # the checkpoint reads its completions from a FIFO: once our write end opens, its worker
    # is inside the pair; Ctrl-C (SIGINT to the process group) there
    fifo = tmp_path / "answers.jsonl"
    os.mkfifo(fifo)
    models = tmp_path / "models.yaml"
    models.write_text(
        json.dumps(
            {
                "checkpoints": [
                    {"name": "slow", "model": "replay", "model_args": {"completions": str(fifo)}}
                ]
            }
        )
    )
    suites = tmp_path / "suites.yaml"
    suites.write_text(json.dumps({"one": {"tasks": [{"task": TASKS[0], "chat": True}]}}))
    err = tmp_path / "stderr.txt"
    sigint_as_at_a_terminal()
    with open(err, "w") as out:
        run = evalpack_process(
            "leaderboard",
            "run",
            "--models",
            str(models),
            "--suites",
            str(suites),
            "--suite",
            "one",
            "--output",
            str(tmp_path / "board"),
            data_dir=MATH_DATA,
            stderr=out,
            start_new_session=True,
        )
    try:
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                assert run.poll() is None, err.read_text()
                time.sleep(0.2)
        time.sleep(0.5)
        before = err.read_text().splitlines()
        os.killpg(run.pid, signal.SIGINT)
        assert run.wait(timeout=BACKSTOP) == 130  # it stops though its pair's FIFO stays open
        os.close(fd)
    finally:
        if run.poll() is None:  # it did not stop: the test stops it, its pair's worker too
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    after = err.read_text().splitlines()[len(before) :]
    assert after == [
        (
            f"evalpack leaderboard: interrupted during slow x {TASKS[0]}; finished "
            "pairs are kept, rerun the same command to resume"
        )
    ]
    assert "Traceback" not in err.read_text() and "KeyboardInterrupt" not in err.read_text()


def test_a_failed_rescore_says_why(tmp_path, caplog):
    run = tmp_path / "run" / "model"
    run.mkdir(parents=True)
    (run / "results_x.json").write_text(json.dumps({"configs": {"no_such_task": {}}}))
    (run / "samples_no_such_task_x.jsonl").write_text(
        json.dumps({"doc_id": 0, "resps": [["x"]]}) + "\n"
    )
    with caplog.at_level(logging.ERROR, logger="evalpack.rescore"):
        assert rescoring.rescore(tmp_path / "run", tmp_path / "out") == [run / "results_x.json"]
    (line,) = [r.getMessage() for r in caplog.records if "FAILED" in r.getMessage()]
    assert "no_such_task" in line.split("FAILED: ")[1].split(" (log: ")[0]


def test_the_reason_line_is_the_error_not_the_traceback(tmp_path):
    log = tmp_path / "lm_eval.log"
    log.write_text(
        "$ evalpack --model x\nINFO lm_eval: Building contexts\nTraceback (most recent "
        'call last):\n  File "x.py", line 1\nValueError: replay needs exactly one of '
        "completions=<file.jsonl> or from_doc=\nINFO done\n"
    )
    assert rundirs.reason_line(log) == (
        "ValueError: replay needs exactly one of completions=<file.jsonl> or from_doc="
    )
    log.write_text("$ evalpack --model x\nall fine until killed\n")
    assert rundirs.reason_line(log) == "all fine until killed"
