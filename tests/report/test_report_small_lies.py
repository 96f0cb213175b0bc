"""What a report says, taken at its word: no Δ legend where nothing is published, reasons in one
cut line, a board whose pairs all failed reported as failures, a plain run's row named after its
model, docs scored out of the benchmark's docs, `rescore`'s progress lines, `report --help`. On
the MATH sample the pack ships and AGIEval's shipped data: no ../shared needed."""

import json
import logging

from evalpack.cli import rescore
from evalpack.report import render
from tests.boards import evalpack
from tests.conftest import REPO

DEMO = {"EVALPACK_DATA_DIR": str(REPO / "demo" / "data")}


def leaderboard(tmp_path, checkpoints: list[dict], task: str) -> str:
    """`evalpack leaderboard run` of `checkpoints` on one task; the board's folder."""
    (tmp_path / "models.yaml").write_text(json.dumps({"checkpoints": checkpoints}))
    (tmp_path / "suites.yaml").write_text(json.dumps({"one": {"tasks": [{"task": task}]}}))
    board = str(tmp_path / "board")
    command = ["leaderboard", "run", "--models", str(tmp_path / "models.yaml")]
    command += ["--suites", str(tmp_path / "suites.yaml"), "--suite", "one", "--output", board]
    evalpack(*command, **DEMO)
    return board


def test_a_board_whose_pairs_all_failed_is_reported_with_one_line_reasons(tmp_path):
    missing = tmp_path / ("a-file-whose-name-makes-a-long-reason-" * 4 + ".jsonl")
    broken = {"name": "broken", "model": "replay", "model_args": {"completions": str(missing)}}
    board = leaderboard(tmp_path, [broken], "minerva_math_tulu")
    done = evalpack("report", board, "--output", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "| broken | failed |" in text
    (reason,) = [line for line in text.splitlines() if line.startswith("broken x ")]
    assert reason.endswith("… (in full in the pair's lm_eval.log)")
    assert len(reason) < render.REASON_WIDTH + 40


def test_docs_scored_are_counted_against_the_benchmark(tmp_path):
    good = {"name": "good", "model": "replay", "model_args": {"from_doc": "solution"}}
    board = leaderboard(tmp_path, [good], "minerva_math_tulu")
    done = evalpack("report", board, "--output", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    (score,) = [row["scores"]["minerva_math_tulu"] for row in report["rows"]]
    assert score["comparable"] is False  # 15 of MATH's 5000 problems
    text = (tmp_path / "report" / "report.md").read_text()
    assert "| good | 15/5000 |" in text  # not 15/15 beside the † that says otherwise
    assert text.splitlines()[2] == render.LEGEND


def test_a_plain_runs_row_is_its_model_and_no_reference_means_no_delta_legend(tmp_path):
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    args = json.dumps({"completions": str(empty), "missing": "empty"})
    out = tmp_path / "out"
    run = ["--model", "replay", "--model_args", args, "--tasks", "agi_eval_english_cot_tulu"]
    ran = evalpack(*run, "--limit", "1", "--apply_chat_template", "--output_path", str(out))
    assert ran.returncode == 0, ran.stderr
    done = evalpack("report", str(out), "--output", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [row["checkpoint"] for row in report["rows"]] == ["replay"]  # not "out"
    text = (tmp_path / "report" / "report.md").read_text()
    assert text.splitlines()[2] == render.LEGEND_UNREFERENCED
    assert "published figures)" not in text


def test_report_help_says_where_the_report_goes():
    assert "(default: ./report)" in " ".join(evalpack("report", "--help").stdout.split())


def test_a_run_that_fails_to_rescore_is_not_said_rescored(tmp_path, monkeypatch, caplog):
    run = tmp_path / "runs" / "m"
    run.mkdir(parents=True)
    (run / "results_2026-01-01T00-00-00.json").write_text("{}")
    monkeypatch.setattr(rescore, "rescore_results", lambda results, output: False)
    with caplog.at_level(logging.INFO, logger="evalpack.rescore"):
        failed = rescore.rescore(tmp_path / "runs", tmp_path / "rescored")
    assert len(failed) == 1
    lines = [r.getMessage() for r in caplog.records]
    assert not any("] rescored" in line for line in lines)
    assert any(line.startswith("[1/1] rescoring ") and " FAILED: " in line for line in lines)
