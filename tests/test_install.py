"""The pack as users install it: a wheel built from this checkout, installed (not editable)
into a fresh venv, run from a folder with no checkout on the path.

The fresh venv takes the pack's dependencies from the project's own environment (a `.pth` line
pointing at its site-packages; a path line there does not run that environment's own `.pth`
files, so its editable install of the pack is invisible): only the wheel's own files provide
`evalpack`, and CI needs no second download of lm-eval and its dependencies.
"""

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from evalpack.scoring.ifbench import resources as ifbench_resources
from tests.conftest import REPO

DEMO_DATA = REPO / "demo" / "data"


def run(command: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        text=True,
        capture_output=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def clean_copy(dest: Path) -> Path:
    """The checkout's files as a fresh clone has them (tracked, or new and not ignored): pip
    builds a local folder in place, and the checkout's own build/ may hold files an earlier
    build left (a renamed task's old YAML would ship)."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], REPO)
    for name in filter(None, listed.stdout.split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("wheel")
    source = clean_copy(root / "source")
    built = run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(root / "dist"),
            str(source),
        ],
        cwd=root,
    )
    (wheel,) = (root / "dist").glob("evalpack-*.whl")
    venv = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    (target,) = venv.glob("lib/python*/site-packages")
    (target / "project_deps.pth").write_text(site.getsitepackages()[0] + "\n")
    # this environment's pip installs into the fresh venv (`--python`): a pip of its own there
    # would cost the venv's creation 2 s
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
    run([*pip, "--quiet", "--no-deps", "--no-index", str(wheel)], cwd=root)
    work = root / "work"
    work.mkdir()
    env = {"EVALPACK_DATA_DIR": str(DEMO_DATA), "PYTHONPATH": ""}
    return {
        "bin": venv / "bin",
        "site": target,
        "work": work,
        "env": env,
        "wheel": wheel,
        "build_log": built.stdout + built.stderr,
    }


def test_the_build_prints_no_package_data_banners(installed):
    """Setuptools printed a "Package would be ignored" banner per data folder under tasks/
    (~90, on every `make demo`); only `package-data` ships now, and nothing is printed."""
    assert "would be ignored" not in installed["build_log"]


def test_the_wheel_carries_tasks_fewshot_and_suites(installed):
    import zipfile

    names = zipfile.ZipFile(installed["wheel"]).namelist()
    assert "evalpack/task_configs/suites.yaml" in names
    assert "evalpack/fewshot_data/minerva_math.json" in names
    agieval = {n for n in names if n.startswith("evalpack/task_configs/agi_eval/data/v1/")}
    assert len(agieval) == 10  # OLMES's 8 AGIEval files, their LICENSE and SHA256SUMS
    samples = [n for n in names if n.startswith("evalpack/task_configs/deepmind_math/data/")]
    assert len([n for n in samples if n.endswith("/test.jsonl.gz")]) == 56  # OLMES's sample
    assert "evalpack/task_configs/deepmind_math/data/LICENSE" in samples
    safety = {n for n in names if n.startswith("evalpack/task_configs/safety/data/")}
    assert len(safety) == 8  # safety-eval's 6 files, their LICENSE and SHA256SUMS
    assert "evalpack/scoring/safety/wildguard.py" in names
    nltk_data = {n for n in names if n.startswith("evalpack/scoring/ifbench/nltk_data/")}
    assert {f"evalpack/scoring/ifbench/nltk_data/{f}" for f in ifbench_resources.FILES} <= nltk_data
    yamls = {n for n in names if n.startswith("evalpack/task_configs/") and n.endswith(".yaml")}
    in_checkout = set((REPO / "tasks").rglob("*.yaml"))
    assert len(yamls) == len(in_checkout)


def test_installed_package_is_the_wheel_not_the_checkout(installed):
    where = run(
        [
            str(installed["bin"] / "python"),
            "-c",
            "import evalpack.core.resources as r; print(r.tasks_dir())",
        ],
        cwd=installed["work"],
        env=installed["env"],
    ).stdout.strip()
    assert Path(where).is_relative_to(installed["site"])


def test_ls_tasks_lists_the_pack(installed):
    out = run(
        [str(installed["bin"] / "evalpack"), "ls", "tasks"],
        cwd=installed["work"],
        env=installed["env"],
    ).stdout
    for task in (
        "minerva_math_tulu",
        "bbh_cot_v1_tulu",
        "codex_humaneval_tulu",
        "aime24_reasoning",
    ):
        assert task in out


def test_replay_run_on_the_demo_data(installed):
    out = installed["work"] / "out"
    run(
        [
            str(installed["bin"] / "evalpack"),
            "--model",
            "replay",
            "--model_args",
            "from_doc=solution",
            "--tasks",
            "minerva_math_tulu",
            "--apply_chat_template",
            "--limit",
            "2",
            "--output_path",
            str(out),
        ],
        cwd=installed["work"],
        env=installed["env"],
    )
    (results,) = out.rglob("results_*.json")
    flex = json.loads(results.read_text())["results"]["minerva_math_tulu"]
    assert flex["exact_match_flex,olmes"] == 1.0


def test_leaderboard_with_a_built_in_suite(installed):
    board = installed["work"] / "board"
    run(
        [
            str(installed["bin"] / "evalpack"),
            "leaderboard",
            "run",
            "--models",
            str(REPO / "demo" / "leaderboard.yaml"),
            "--suite",
            "tulu_3_dev_core",
            "--tasks",
            "minerva_math_tulu",
            "--limit",
            "1",
            "--output",
            str(board),
        ],
        cwd=installed["work"],
        env=installed["env"],
    )
    assert (board / "reference-answers" / "minerva_math_tulu" / "done").is_file()
