"""The suite `olmo3_adapt` (OLMES `olmo3:adapt`): all 18 entries in `suite show` and in a
leaderboard's plan, those that cannot run here with their reason; a replay leaderboard over its
code tasks, offline, with thinking outputs, whose report shows pass@k."""

import json
import os
import subprocess
import sys

import pytest

from evalpack.core import catalog
from tests.boards import evalpack
from tests.conftest import DATA_DIR, REPO, read_jsonl, requires_shared

NOT_BUILDABLE = {
    "popqa_olmo3": "akariasai/PopQA",
    "simpleqa_olmo3": "GPT-4.1 judge",
    "zebralogic_olmo3": "gated",
    "omega_olmo3": "missing from OLMES's TASK_CONFIGS",
    "livecodebench_codegeneration_olmo3": "gigabytes",
}
CODE = ["codex_humanevalplus_olmo3", "mbppplus_olmo3"]


def test_the_suite_lists_olmes_18_entries_in_its_order():
    entries = catalog.suite_entries(catalog.load_suites(), "olmo3_adapt")
    assert len(entries) == 18
    assert [e["task"] for e in entries][:4] == [
        "mmlu_cot_olmo3",
        "popqa_olmo3",
        "simpleqa_olmo3",
        "bbh_cot_olmo3",
    ]
    reasons = {e["task"]: e.get("not_buildable") for e in entries}
    for task, why in NOT_BUILDABLE.items():
        assert why in reasons[task], task
    assert sum(bool(r) for r in reasons.values()) == 5
    unsafe = {e["task"] for e in entries if "--confirm_run_unsafe_code" in e.get("args", [])}
    assert unsafe == set(CODE)


def test_every_runnable_entry_counts_unfinished_thinking():
    """The thinking switch reaches every task of the suite: each declares `thinking_unfinished`
    (its leaves, for a group), the count its scorers give when the switch is on."""
    entries = catalog.suite_entries(catalog.load_suites(), "olmo3_adapt")
    runnable = [e["task"] for e in entries if not e.get("not_buildable")]
    assert len(runnable) == 13
    leaves = [leaf for task in runnable for leaf in catalog.leaves(task)]
    assert len(leaves) == 57 + 27 + 8 + 7 + 9  # MMLU, BBH, AGIEval, MATH, the 9 single tasks
    without = [
        leaf
        for leaf in leaves
        if "thinking_unfinished"
        not in [m["metric"] for m in catalog.task_config(leaf).get("metric_list", [])]
    ]
    assert without == []


def test_suite_show_names_every_entry_and_why_some_cannot_run():
    done = evalpack("suite", "show", "olmo3_adapt")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    runs = [line.split()[1] for line in lines if line.startswith("--tasks ")]
    notes = [line for line in lines if line.startswith("# ")]
    assert len(runs) + len(notes) == 18
    assert set(CODE) <= set(runs) and {"ifeval_olmo3", "alpaca_eval_v3_olmo3"} <= set(runs)
    for task, why in NOT_BUILDABLE.items():
        (note,) = [n for n in notes if n.startswith(f"# not buildable here: {task} (")]
        assert why in note
    mbpp = next(line for line in lines if line.startswith("--tasks mbppplus_olmo3 "))
    assert "--apply_chat_template" in mbpp and mbpp.endswith("--confirm_run_unsafe_code")


def fenced(code: str) -> str:
    return f"<think>plan</think>Here is the completed function:\n\n```python\n{code}\n```"


def completions(path):
    """Per code task, 2 docs x 10 samples: the reference solution, 8 wrong ones, an output whose
    thinking never ended."""
    plus = read_jsonl(DATA_DIR / "evalplus__humanevalplus/default/test.jsonl")
    mbpp = read_jsonl(DATA_DIR / "evalplus__mbppplus/default/test.jsonl")
    rows = []
    for row in (0, 1):
        solutions = {
            f"evalplus__humanevalplus/default/test#{row}": plus[row]["prompt"]
            + plus[row]["canonical_solution"],
            f"evalplus__mbppplus/default/test#{row}": mbpp[row]["code"].strip(),
        }
        for key, code in solutions.items():
            wrong = [fenced(f"def nothing():\n    return {i}") for i in range(8)]
            for text in (fenced(code), *wrong, "<think>still"):
                rows.append({"key": key, "completion": text})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@requires_shared
def test_a_replay_leaderboard_over_the_code_tasks_reports_pass_at_k(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text(
        json.dumps(
            {
                "checkpoints": [
                    {
                        "name": "thinker",
                        "model": "replay",
                        "model_args": {"completions": str(completions(tmp_path / "c.jsonl"))},
                        "process_output": "r1_style",  # the checkpoint's thinking switch
                    }
                ]
            }
        )
    )
    board = tmp_path / "board"
    common = ["--models", str(models), "--suite", "olmo3_adapt", "--output", str(board)]
    env = {"EVALPACK_DATA_DIR": str(DATA_DIR)}
    checked = evalpack("leaderboard", "check", *common, **env)
    for task, why in NOT_BUILDABLE.items():  # the whole suite's plan names the five
        assert f"not in the pack: {task}: " in checked.stdout and why in checked.stdout
    metadata = json.dumps({"timeout": 30})  # the run's own metadata, kept beside the switch
    run = [*common, "--tasks", ",".join(CODE), "--limit", "2", "--", "--metadata", metadata]
    done = subprocess.run(
        [sys.executable, "-m", "evalpack", "leaderboard", "run", *run],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **env, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "plan: 2 tasks x 1 checkpoints: 2 pairs will run" in done.stdout
    report_dir = tmp_path / "report"
    reported = evalpack("report", str(board), "--output", str(report_dir))
    assert reported.returncode == 0, reported.stderr[-3000:]
    report = json.loads((report_dir / "report.json").read_text())
    text = (report_dir / "report.md").read_text()
    expected = {"pass_at_1": 0.1, "pass_at_5": 0.5, "pass_at_10": 1.0}  # 1 of 10 passes
    for task, ks in zip(CODE, (("pass_at_1", "pass_at_10"), tuple(expected))):
        (entry,) = [b for b in report["breakdowns"] if b["task"] == task]
        assert entry["scores"]["thinker"] == pytest.approx({k: expected[k] for k in ks})
        results = next((board / "thinker" / task).glob("results_*.json"))
        scored = json.loads(results.read_text())
        assert scored["results"][task]["thinking_unfinished,execution"] == 2  # one per doc
        assert scored["configs"][task]["metadata"]["timeout"] == 30
    assert "pass_at_5" in text and "pass_at_10" in text


def test_a_checkpoint_thinking_switch_joins_the_run_metadata(tmp_path):
    from evalpack.leaderboard import checkpoints, thinking

    extra = ["--limit", "2", "--metadata", '{"judge_model": "j"}']
    flags = thinking.thinking_flags({"process_output": "r1_style"}, extra)
    assert flags[0] == "--metadata"
    assert json.loads(flags[1]) == {"judge_model": "j", "process_output": "r1_style"}
    assert thinking.thinking_flags({"name": "plain"}, extra) == []
    models = tmp_path / "models.yaml"
    models.write_text(
        "checkpoints:\n  - {name: a, model: replay, model_args: {from_doc: x}, process_output: r2}\n"
    )
    with pytest.raises(
        checkpoints.CheckpointsError, match="process_output must be one of r1_style"
    ):
        checkpoints.load_checkpoints(str(models))
