"""The leaderboard report (`evalpack.report.report`)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evalpack.leaderboard import rundirs
from evalpack.report import plots, render
from evalpack.report import report as reports
from tests.boards import LIMIT, TASKS
from tests.conftest import read_jsonl, requires_shared

CHROMIUM = Path("/usr/bin/chromium")
requires_chromium = pytest.mark.skipif(
    not CHROMIUM.is_file(), reason=f"{CHROMIUM} missing (`apt-get install -y chromium`)"
)


@pytest.fixture
def report(leaderboard, tmp_path):
    built = leaderboard
    reference = tmp_path / "reference.yaml"
    reference.write_text(
        json.dumps(
            {
                "name": "ref",
                "scores": {
                    TASKS[0]: {"value": 50.0, "metric": "exact_match_flex", "source": "test"}
                },
            }
        )
    )
    data = reports.build_report(
        reports.collect([str(built["root"] / "board")]),
        reports.load_reference(str(reference), TASKS),
        "test board",
        baseline="qwen",
    )
    return {
        "data": data,
        "files": render.write_report(data, tmp_path / "report"),
        "board": built["root"] / "board",
    }


@requires_shared
def test_report_numbers_equal_the_result_files(report):
    data, board_dir = report["data"], report["board"]
    assert {row["checkpoint"] for row in data["rows"]} == {"solutions", "qwen", "broken"}
    assert [c["task"] for c in data["columns"]] == TASKS
    markdown = report["files"]["markdown"].read_text()
    (broken,) = [row for row in data["rows"] if row["checkpoint"] == "broken"]
    assert all(broken["scores"][task] is None for task in TASKS)  # shown, as failed
    assert all(broken["missing"][task].startswith("failed: FileNotFoundError") for task in TASKS)
    for row in data["rows"]:
        if row is broken:
            continue
        for task in TASKS:
            (results_file,) = rundirs.results_files(board_dir / row["checkpoint"] / task)
            expected = json.loads(results_file.read_text())["results"][task]
            score = row["scores"][task]
            assert score["value"] == expected["exact_match_flex,olmes"]
            assert score["stderr"] == expected["exact_match_flex_stderr,olmes"]
            if task == TASKS[0]:
                assert score["delta"] == pytest.approx(100 * score["value"] - 50.0)
            # a --limit run: docs counted, its delta marked as not comparable
            assert (score["scored"], score["comparable"]) == (LIMIT, False)
            assert score["total"] == expected_total(results_file, task)
            assert render.score_text(score) in markdown
    assert f"(+50.0{render.PARTIAL})" in markdown or f"{render.PARTIAL})" in markdown
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
    data = reports.build_report(checkpoints, reports.load_reference(None, ["bbh_cot_v1_tulu"]), "t")
    (subtasks,) = data["breakdowns"]
    assert subtasks["by"] == "subtasks" and subtasks["task"] == "bbh_cot_v1_tulu"
    assert subtasks["scores"] == {"a": {"snarks": 0.25, "navigate": 0.75}}
    assert data["rows"][0]["scores"]["bbh_cot_v1_tulu"]["delta"] == pytest.approx(50 - 69.7)
    images = render.plots(data)
    assert set(images) == {"scores.png", "bbh_cot_v1_tulu_heatmap.png"}
    assert all(png.startswith(b"\x89PNG") for png in images.values())


def expected_total(results_file: Path, task: str) -> int:
    return json.loads(results_file.read_text())["n-samples"][task]["original"]


def flex_by_doc(samples: Path) -> dict:
    return {row["doc_id"]: row["exact_match_flex"] for row in read_jsonl(samples)}


@requires_shared
def test_baseline_deltas_are_paired_over_the_same_docs(report):
    board_dir, baseline = report["board"], report["data"]["baseline"]
    assert baseline["name"] == "qwen" and set(baseline["rows"]) == {"solutions", "broken"}
    assert all("why" in cell for cell in baseline["rows"]["broken"].values())
    for task in TASKS:
        (mine,) = (board_dir / "solutions" / task).rglob("samples_*.jsonl")
        (theirs,) = (board_dir / "qwen" / task).rglob("samples_*.jsonl")
        a, b = flex_by_doc(mine), flex_by_doc(theirs)
        comparison = baseline["rows"]["solutions"][task]
        assert comparison["docs"] == LIMIT == len(a)
        assert comparison["delta"] == pytest.approx(100 * sum(a[d] - b[d] for d in a) / LIMIT)
        assert comparison["low"] <= comparison["delta"] <= comparison["high"]
    markdown = report["files"]["markdown"].read_text()
    assert "## Δ vs baseline qwen" in markdown and "## Docs scored" in markdown


def write_run(folder: Path, results: dict, samples: dict, n: dict) -> None:
    """A minimal lm-eval output: results file and sample logs."""
    folder.mkdir(parents=True)
    configs = {task: {} for task in samples} | {task: {} for task in results}
    (folder / "results_1.json").write_text(
        json.dumps({"results": results, "configs": configs, "n-samples": n})
    )
    for task, rows in samples.items():
        (folder / f"samples_{task}_1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def bbh_rows(scores: list[float]) -> list[dict]:
    return [
        {"doc_id": i, "doc_hash": str(i), "filter": "cot", "exact_match": s}
        for i, s in enumerate(scores)
    ]


def test_a_group_is_compared_the_way_it_is_averaged(tmp_path):
    # bbh's exact_match is averaged by size: the paired delta is the pooled mean difference
    runs = {"base": ([0, 0, 0], [0]), "new": ([1, 1, 0], [1])}
    for name, (snarks, navigate) in runs.items():
        write_run(
            tmp_path / name,
            {"bbh_cot_v1_tulu": {"exact_match,cot": 0.5}},
            {
                "bbh_cot_v1_tulu_snarks": bbh_rows(snarks),
                "bbh_cot_v1_tulu_navigate": bbh_rows(navigate),
            },
            {
                "bbh_cot_v1_tulu_snarks": {"original": 3, "effective": 3},
                "bbh_cot_v1_tulu_navigate": {"original": 1, "effective": 1},
            },
        )
    checkpoints = reports.collect([f"base={tmp_path / 'base'}", f"new={tmp_path / 'new'}"])
    for ckpt in checkpoints.values():  # a plain run of the group lists it as asked for
        ckpt["top"] = ["bbh_cot_v1_tulu"]
    data = reports.build_report(checkpoints, None, "t", baseline="base")
    comparison = data["baseline"]["rows"]["new"]["bbh_cot_v1_tulu"]
    assert comparison["delta"] == pytest.approx(75.0) and comparison["docs"] == 4
    cell = data["rows"][0]["scores"]["bbh_cot_v1_tulu"]
    assert (cell["scored"], cell["total"], cell["comparable"]) == (4, 4, True)


def test_boards_with_the_same_checkpoint_names_are_never_merged(tmp_path):
    for folder in ("one", "two"):
        write_run(
            tmp_path / folder / "ckpt" / "t" / "model",
            {"t": {"acc,none": 0.5 if folder == "one" else 0.25}},
            {},
            {},
        )
        (tmp_path / folder / "ckpt" / rundirs.CHECKPOINT_FILE).write_text('{"name": "ckpt"}')
    with pytest.raises(ValueError, match="'ckpt' is in both .*one and .*two: name them"):
        reports.collect([str(tmp_path / "one"), str(tmp_path / "two")])
    named = reports.collect([f"a={tmp_path / 'one'}", f"b={tmp_path / 'two'}"])
    assert {name: c["results"]["t"]["acc,none"] for name, c in named.items()} == {
        "a/ckpt": 0.5,
        "b/ckpt": 0.25,
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalpack",
            "report",
            str(tmp_path / "one"),
            str(tmp_path / "two"),
            "--output",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert [line for line in done.stderr.splitlines() if "error" in line] == [
        done.stderr.strip().splitlines()[-1]
    ]
    assert "Traceback" not in done.stderr


def test_reference_notes_list_only_the_benchmarks_present(tmp_path):
    checkpoints = {
        "a": {
            "results": {"gsm8k_tulu": {"exact_match,olmes": 0.0}},
            "top": ["gsm8k_tulu"],
            "samples": {},
            "docs": {},
        }
    }
    data = reports.build_report(
        checkpoints, reports.load_reference("Tulu-3-8B-SFT", ["gsm8k_tulu", "drop_llama3"]), "t"
    )
    assert list(data["reference"]["scores"]) == ["gsm8k_tulu"]
    assert len(render.reference_notes(data["reference"])) == 1


def test_plots_show_zeros_and_missing_scores_and_no_legend(monkeypatch):
    figures = []
    monkeypatch.setattr(plots, "figure_png", lambda fig: figures.append(fig) or b"")
    checkpoints = {
        "zero": {
            "results": {"gsm8k_tulu": {"exact_match,olmes": 0.0}},
            "top": ["gsm8k_tulu"],
            "samples": {},
            "docs": {},
        },
        "other": {
            "results": {"drop_llama3": {"f1,olmes": 0.5}},
            "top": ["drop_llama3"],
            "samples": {},
            "docs": {},
        },
    }
    data = reports.build_report(checkpoints, reports.load_reference(None, ["gsm8k_tulu"]), "t")
    plots.plots(data)
    (ax,) = [a for a in figures[0].axes if a.get_title()]
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["0.0", "–", "–", "50.0", "76.2", "–"]  # zero, not run, published row
    assert ax.get_legend() is None


def chromium(url: str, screenshot: Path, profile: Path) -> str:
    """Load `url` headless, save a screenshot; Chromium's log (console messages included)."""
    done = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,1600",
            f"--screenshot={screenshot}",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
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
    assert 'src="http' not in text and "<link" not in text  # self-contained
    assert text.count("data:image/png;base64,") == 2  # scores and Δ vs baseline (no BBH)


def synthetic_board(root: Path, count: int) -> list[str]:
    """`count` checkpoints x the 11 tulu_3_dev benchmarks + MATH-500 as plain lm-eval runs with
    sample logs (30 docs per task); the first is the baseline, `ckpt-2` has a zero, `ckpt-3`
    did not run MATH-500, `ckpt-4` ran DROP on 10 docs only."""
    import numpy as np

    from evalpack.core import catalog

    rng = np.random.default_rng(0)
    benchmarks = [e["task"] for e in catalog.load_suites()["tulu_3_dev"]["tasks"]] + ["math500"]
    sources = []
    for number in range(count):
        name = "baseline" if number == 0 else f"ckpt-{number}"
        results, samples, n, groups = {}, {}, {}, {}
        for task in benchmarks:
            if name == "ckpt-3" and task == "math500":
                continue
            metric, filt, _ = reports.primary_metric(task, {})
            skill = 0.3 + 0.4 * rng.random() + 0.04 * number
            leaves = catalog.leaves(task)
            docs = 10 if (name, task) == ("ckpt-4", "drop_llama3") else 30
            percent = catalog.facts(task).get("primary", {}).get("percent")
            for leaf in leaves:
                scores = (rng.random(docs) < skill).astype(float)
                if name == "ckpt-2" and task == "gsm8k_tulu":
                    scores[:] = 0
                samples[leaf] = [
                    {
                        "doc_id": i,
                        "doc_hash": f"{leaf}{i}",
                        "filter": filt,
                        "doc": {},
                        metric: float(s),
                    }
                    for i, s in enumerate(scores)
                ]
                n[leaf] = {"original": 30, "effective": docs}
            value = float(np.mean([r[metric] for leaf in leaves for r in samples[leaf]]))
            results[task] = {f"{metric},{filt}": 100 * value if percent else value}
            if percent:  # a corpus-level metric (AlpacaEval's): no per-doc scores to pair
                for leaf in leaves:
                    del samples[leaf]
            if leaves != [task]:
                groups[task] = leaves
        folder = root / name
        write_run(folder, results, samples, n)
        data = json.loads((folder / "results_1.json").read_text())
        data["group_subtasks"] = groups
        (folder / "results_1.json").write_text(json.dumps(data))
        sources.append(f"{name}={folder}")
    return sources


@requires_chromium
def test_a_ten_by_twelve_report_with_a_baseline_renders(tmp_path):
    import matplotlib.image

    sources = synthetic_board(tmp_path / "runs", 10)
    checkpoints = reports.collect(sources)
    tasks = checkpoints["baseline"]["top"]
    data = reports.build_report(
        checkpoints,
        reports.load_reference("Tulu-3-8B-SFT", tasks),
        "10 checkpoints x 12 benchmarks (synthetic)",
        baseline="baseline",
    )
    assert len(data["columns"]) == 12 and len(data["rows"]) == 10
    files = render.write_report(data, tmp_path / "report")
    gsm8k = data["baseline"]["rows"]["ckpt-2"]["gsm8k_tulu"]
    assert gsm8k["high"] < 0 and gsm8k["significant"]  # all wrong: significantly worse
    assert data["rows"][2]["scores"]["gsm8k_tulu"]["value"] == 0.0
    assert data["rows"][4]["scores"]["drop_llama3"]["comparable"] is False
    screenshot = tmp_path / "report.png"
    log = chromium(files["html"].as_uri(), screenshot, tmp_path / "profile")
    assert console_messages(log) == []
    assert matplotlib.image.imread(screenshot).shape[:2] == (1600, 1280)
    if os.environ.get("EVALPACK_SAVE_SCREENSHOT"):
        Path(os.environ["EVALPACK_SAVE_SCREENSHOT"]).write_bytes(screenshot.read_bytes())
