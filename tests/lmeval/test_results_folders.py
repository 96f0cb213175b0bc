"""Where results land, readable: a plain run's `--output_path DIR` is `DIR/<model name>/` (the
backend's name where lm-eval would take 8 random characters, no hidden folder for a local
path), a leaderboard pair's results sit straight in `<board>/<checkpoint>/<task>/`, and
rescore, report and resume still find both layouts."""

import json
import os
import subprocess
import sys

from evalpack.cli import rescore as rescoring
from evalpack.leaderboard import rundirs
from evalpack.lmeval import run_names
from tests.boards import TASKS
from tests.conftest import REPO, requires_shared


def test_folder_names_are_readable_and_stable():
    name = run_names.folder_name
    assert name("replay", "from_doc=solution") == "replay"  # lm-eval: 8 random characters
    assert name("evalpack-chat", {"model": "./checkpoints/sft"}) == "checkpoints__sft"
    assert name("hf", "pretrained=allenai/Llama-3.1-Tulu-3-8B-SFT,dtype=bfloat16") == (
        "allenai__Llama-3.1-Tulu-3-8B-SFT"  # as lm-eval names it
    )


def test_a_plain_run_lands_in_the_backends_folder(tmp_path):
    """Run as a user would, from a folder outside any git repository (lm-eval's `git
    describe` printed "fatal: not a git repository" there)."""
    env = {**os.environ, "EVALPACK_DATA_DIR": str(REPO / "demo" / "data")}
    for _ in range(2):  # a rerun adds to the same folder
        done = subprocess.run(
            [sys.executable, "-m", "evalpack", "--model", "replay", "--model_args"]
            + ["from_doc=solution", "--tasks", "minerva_math_tulu_algebra", "--limit", "1"]
            + ["--apply_chat_template", "--output_path", "out", "--log_samples"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "fatal: not a git repository" not in done.stdout + done.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["replay"]
    files = rundirs.results_files(tmp_path / "out")
    assert len(files) == 2 and {rundirs.run_folder(f) for f in files} == {tmp_path / "out"}
    assert json.loads(files[0].read_text())["model_name"] == "replay"


@requires_shared
def test_leaderboard_pairs_hold_their_results_and_rescore_keeps_the_layout(
    leaderboard, mirror, tmp_path
):
    board = leaderboard["root"] / "board"
    for task in TASKS:
        pair = board / "solutions" / task
        (results,) = rundirs.results_files(pair)
        assert results.parent == pair and rundirs.run_folder(results) == pair
        assert list(pair.glob(f"samples_{task}_*.jsonl"))
    assert rescoring.rescore(board / "solutions", tmp_path) == []
    for task in TASKS:
        (rescored,) = rundirs.results_files(tmp_path / task)
        assert rescored.parent == tmp_path / task  # no random lm-eval folder below it
