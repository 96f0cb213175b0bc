"""The leaderboard report (`evalpack.commands.report`)."""

import json
import re
import subprocess
from pathlib import Path

import pytest
from test_runs import LIMIT, TASKS, board

from conftest import read_jsonl, requires_shared
from evalpack.commands import render
from evalpack.commands import report as reports
from evalpack.commands import rundirs

CHROMIUM = Path("/usr/bin/chromium")
requires_chromium = pytest.mark.skipif(
    not CHROMIUM.is_file(), reason=f"{CHROMIUM} missing (`apt-get install -y chromium`)"
)


@pytest.fixture
def report(tmp_path_factory, tmp_path):
    built = board(tmp_path_factory)
    reference = tmp_path / "reference.yaml"
    reference.write_text(json.dumps({"name": "ref", "scores": {
        TASKS[0]: {"value": 50.0, "metric": "exact_match_flex", "source": "test"}}}))
    data = reports.build_report(
        reports.collect([str(built["root"] / "board")]),
        reports.load_reference(str(reference), TASKS), "test board",
    )
    return {"data": data, "files": render.write_report(data, tmp_path / "report"),
            "board": built["root"] / "board"}


@requires_shared
def test_report_numbers_equal_the_result_files(report):
    data, board_dir = report["data"], report["board"]
    assert {row["checkpoint"] for row in data["rows"]} == {"solutions", "qwen"}
    assert [c["task"] for c in data["columns"]] == TASKS
    markdown = report["files"]["markdown"].read_text()
    for row in data["rows"]:
        for task in TASKS:
            (results_file,) = rundirs.results_files(board_dir / row["checkpoint"] / task)
            expected = json.loads(results_file.read_text())["results"][task]
            score = row["scores"][task]
            assert score["value"] == expected["exact_match_flex,olmes"]
            assert score["stderr"] == expected["exact_match_flex_stderr,olmes"]
            if task == TASKS[0]:
                assert score["delta"] == pytest.approx(100 * score["value"] - 50.0)
            assert render.score_text(score) in markdown
    on_disk = json.loads(report["files"]["json"].read_text())
    assert on_disk["rows"] == data["rows"]


@requires_shared
def test_math_levels_come_from_the_sample_logs(report):
    (by_level,) = [b for b in report["data"]["breakdowns"] if b["by"] == "doc_field"]
    assert by_level["field"] == "level" and by_level["metric"] == "exact_match_flex"
    levels = by_level["scores"]["solutions"]["algebra"]
    assert sum(level["n"] for level in levels.values()) == LIMIT
    (samples,) = (report["board"] / "solutions" / TASKS[0]).rglob("samples_*.jsonl")
    for level, scores in levels.items():
        rows = [s for s in read_jsonl(samples) if s["doc"]["level"] == level]
        assert scores["correct"] == sum(s["exact_match_flex"] for s in rows)


def test_bbh_breakdown_and_heat_map():
    results = {
        "bbh_cot_v1_tulu": {"exact_match,cot": 0.5},
        "bbh_cot_v1_tulu_snarks": {"exact_match,cot": 0.25},
        "bbh_cot_v1_tulu_navigate": {"exact_match,cot": 0.75},
    }
    checkpoints = {"a": {"results": results, "top": ["bbh_cot_v1_tulu"], "samples": {}}}
    data = reports.build_report(
        checkpoints, reports.load_reference(None, ["bbh_cot_v1_tulu"]), "t")
    (subtasks,) = data["breakdowns"]
    assert subtasks["by"] == "subtasks" and subtasks["task"] == "bbh_cot_v1_tulu"
    assert subtasks["scores"] == {"a": {"snarks": 0.25, "navigate": 0.75}}
    assert data["rows"][0]["scores"]["bbh_cot_v1_tulu"]["delta"] == pytest.approx(50 - 69.7)
    images = render.plots(data)
    assert set(images) == {"bars.png", "bbh_cot_v1_tulu_heatmap.png"}
    assert all(png.startswith(b"\x89PNG") for png in images.values())


def chromium(url: str, screenshot: Path, profile: Path) -> str:
    """Load `url` headless, save a screenshot; Chromium's log (console messages included)."""
    done = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
         "--window-size=1280,1600", f"--screenshot={screenshot}", url],
        capture_output=True, text=True, check=True,
    )
    return done.stderr


def console_messages(log: str) -> list[str]:
    return re.findall(r":CONSOLE[^\]]*\] (.*)", log)


@requires_chromium
def test_console_check_catches_errors(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('x'); nope();</script></body></html>")
    log = chromium(page.as_uri(), tmp_path / "bad.png", tmp_path / "profile")
    assert len(console_messages(log)) == 2


@requires_shared
@requires_chromium
def test_html_report_opens_in_chromium_without_console_errors(report, tmp_path):
    import matplotlib.image

    page = report["files"]["html"]
    screenshot = tmp_path / "report.png"
    log = chromium(page.as_uri(), screenshot, tmp_path / "profile")
    assert console_messages(log) == []
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    assert matplotlib.image.imread(screenshot).shape[:2] == (1600, 1280)
    text = page.read_text()
    assert "src=\"http" not in text and "<link" not in text  # self-contained
    assert text.count("data:image/png;base64,") == 1  # the bar chart (no BBH here)
