"""A report that says what it lacks: suite members that did not run and pairs that failed are
shown as such (never as scores, never silently missing), an average over part of the suite is
marked, `--checkpoints` leaves out folders of earlier checkpoints, and a difference on 5 docs
is not called significant on 3 flips."""

import json
import subprocess
import sys
from pathlib import Path

from evalpack.leaderboard import plan, rundirs

GSM8K = "gsm8k_tulu"
IFEVAL = "ifeval_tulu"
DROP = "drop_llama3"
NAN_REASON = f"{IFEVAL}: prompt_level_loose_acc is nan (could not be computed)"


def write_pair(
    board: Path,
    ckpt: str,
    task: str,
    results: dict,
    scores: list[float],
    metric: str,
    filt: str,
    failed: str | None = None,
) -> None:
    """One leaderboard pair as lm-eval and the worker leave it (results, samples, marker)."""
    folder = board / ckpt / task / "model"
    folder.mkdir(parents=True)
    n = {"original": len(scores), "effective": len(scores)}
    (folder / "results_1.json").write_text(
        json.dumps({"results": {task: results}, "configs": {task: {}}, "n-samples": {task: n}})
    )
    (folder / f"samples_{task}_1.jsonl").write_text(
        "".join(
            json.dumps({"doc_id": i, "doc_hash": str(i), "filter": filt, metric: s}) + "\n"
            for i, s in enumerate(scores)
        )
    )
    marker = folder.parent / (rundirs.FAILED_MARKER if failed else rundirs.DONE_MARKER)
    marker.write_text(failed or "{}")
    (board / ckpt / rundirs.CHECKPOINT_FILE).write_text(json.dumps({"name": ckpt}))


def build_board(root: Path) -> Path:
    board = root / "board"
    base, new = [0, 0, 0, 1, 0], [1, 1, 1, 1, 0]  # 3 of 5 docs flip, all the same way
    for ckpt, scores in (("base", base), ("new", new), ("old", new)):
        write_pair(
            board,
            ckpt,
            GSM8K,
            {"exact_match,olmes": sum(scores) / 5},
            scores,
            "exact_match",
            "olmes",
        )
    write_pair(
        board,
        "base",
        IFEVAL,
        {"prompt_level_loose_acc,olmes": 0.5},
        [1, 0],
        "prompt_level_loose_acc",
        "olmes",
    )
    write_pair(
        board,
        "new",
        IFEVAL,
        {"prompt_level_loose_acc,olmes": float("nan")},
        [],
        "prompt_level_loose_acc",
        "olmes",
        failed=NAN_REASON,
    )
    missing = (
        "data missing: /m/EleutherAI__drop/default/validation.jsonl is not in EVALPACK_DATA_DIR"
    )
    statuses = {GSM8K: "run", IFEVAL: "run", DROP: missing}
    plan.save(
        {
            "tasks": [GSM8K, IFEVAL, DROP],
            "checkpoints": ["base", "new"],
            "pairs": {"base": statuses, "new": statuses},
        },
        board,
        "mine",
    )
    return board


def test_the_report_shows_what_did_not_run_and_what_failed(tmp_path):
    board = build_board(tmp_path)
    models = tmp_path / "models.yaml"
    models.write_text("checkpoints:\n  - {name: base, model: hf}\n  - {name: new, model: hf}\n")
    out = tmp_path / "report"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalpack",
            "report",
            str(board),
            "--output",
            str(out),
            "--baseline",
            "base",
            "--checkpoints",
            str(models),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "report.json").read_text())
    assert [row["checkpoint"] for row in data["rows"]] == ["base", "new"]  # not `old`
    assert [c["task"] for c in data["columns"]] == [GSM8K, IFEVAL, DROP]
    new = data["rows"][1]
    assert new["scores"][IFEVAL] is None and new["scores"][DROP] is None
    assert new["missing"][IFEVAL] == f"failed: {NAN_REASON}"
    assert new["missing"][DROP].startswith("not run: data missing: /m/EleutherAI__drop")
    assert data["average"]["tasks"] == [GSM8K, IFEVAL]
    assert data["average"]["left_out"] == [DROP]
    markdown = (out / "report.md").read_text()
    table = [line for line in markdown.splitlines() if line.startswith("| new ")]
    assert "| failed |" in table[0] and "| not run |" in table[0]
    assert "average of 2‡" in markdown and "leaves out drop_llama3" in markdown
    assert f"new x {IFEVAL}: failed: {NAN_REASON}" in markdown
    # 3 of 5 flips: Δ +60 with an interval that excludes 0, but p = 0.25: no star
    comparison = data["baseline"]["rows"]["new"][GSM8K]
    assert (comparison["delta"], comparison["docs"], comparison["p"]) == (60.0, 5, 0.25)
    assert comparison["low"] > 0 and not comparison["significant"]
    assert "+60.0 [" in markdown and "] (n=5, p=0.25)" in markdown


def test_an_unknown_checkpoint_name_is_one_line(tmp_path):
    board = build_board(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalpack",
            "report",
            str(board),
            "--output",
            str(tmp_path / "r"),
            "--checkpoints",
            "base,nwe",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "--checkpoints: no row named 'nwe' (did you mean 'new'?); the rows: base, new, old "
            "(--verbose or EVALPACK_TRACEBACK=1 shows the traceback)"
        )
    )


def test_a_sample_of_math_is_not_compared_as_the_whole(tmp_path):
    """The demo's 15 MATH problems, every one scored: still not the 5000 the published figure
    is on, so its difference is marked partial."""
    from evalpack.report import render
    from evalpack.report import report as reports

    write_pair(
        tmp_path / "board",
        "demo",
        "minerva_math_tulu",
        {"exact_match_flex,olmes": 1.0},
        [1.0] * 15,
        "exact_match_flex",
        "olmes",
    )
    checkpoints = reports.collect([str(tmp_path / "board")])
    data = reports.build_report(
        checkpoints, reports.load_reference(None, ["minerva_math_tulu"]), "t"
    )
    cell = data["rows"][0]["scores"]["minerva_math_tulu"]
    assert (cell["scored"], cell["total"], cell["comparable"]) == (15, 15, False)
    assert cell["delta"] is not None
    assert f"{render.PARTIAL})" in render.to_markdown(data)
