"""Helpers of the command-line, leaderboard and report tests: the `evalpack` command as a user
runs it, and one real leaderboard (interrupted and resumed) for the whole session (the fixture
`leaderboard`, which tests/conftest.py makes every test folder's)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalpack.leaderboard import rundirs
from tests.conftest import DATA_DIR, OUTPUTS, REPO, read_jsonl

# the leaderboard built once per session: 3 checkpoints x these tasks, LIMIT docs each
TASKS = ["minerva_math_tulu_algebra", "minerva_math_tulu_geometry"]
LIMIT = 5
# MATH: the mirror's where there is one, else the sample the pack ships for `make demo`
MATH_DATA = DATA_DIR if DATA_DIR.is_dir() else REPO / "demo" / "data"


def evalpack(*argv: str, **env: str) -> subprocess.CompletedProcess:
    """`python -m evalpack ARGV` to completion (2 minutes at most), output captured; `env`
    added to the environment."""
    return subprocess.run(
        [sys.executable, "-m", "evalpack", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env, "PYTHONPATH": str(REPO)},
    )


def evalpack_process(*argv: str, data_dir: Path = DATA_DIR, **popen) -> subprocess.Popen:
    """`python -m evalpack ARGV` started on the real mirror (or `data_dir`); `popen`: Popen's
    arguments."""
    env = {**os.environ, "EVALPACK_DATA_DIR": str(data_dir)}
    return subprocess.Popen([sys.executable, "-m", "evalpack", *argv], env=env, **popen)


# --- the leaderboard, end to end ----------------------------------------------------------------


def board_files(root: Path) -> dict:
    models = root / "models.yaml"
    models.write_text(
        json.dumps(
            {
                "checkpoints": [
                    {
                        "name": "broken",
                        "model": "replay",
                        "model_args": {"completions": str(root / "nonexistent.jsonl")},
                    },
                    {
                        "name": "solutions",
                        "model": "replay",
                        "model_args": {
                            "from_doc": "{solution}",
                            "request_log": str(root / "solutions.log"),
                        },
                    },
                    {
                        "name": "qwen",
                        "model": "replay",
                        "model_args": {
                            "completions": str(root / "qwen.jsonl"),
                            "missing": "empty",
                            "request_log": str(root / "qwen.log"),
                        },
                    },
                ]
            }
        )
    )
    suites = root / "suites.yaml"
    suites.write_text(json.dumps({"two": {"tasks": [{"task": t} for t in TASKS]}}))
    return {"models": models, "suites": suites}


def board_command(root: Path, files: dict) -> list[str]:
    return [
        "leaderboard",
        "run",
        "--models",
        str(files["models"]),
        "--suite",
        "two",
        "--suites",
        str(files["suites"]),
        "--output",
        str(root / "board"),
        "--limit",
        str(LIMIT),
        "--max_retries",
        "1",
    ]


def requests_by_task(log: Path) -> dict:
    counts = {task: 0 for task in TASKS}
    for row in read_jsonl(log) if log.exists() else []:
        counts[row["task"]] += 1
    return counts


def kill_when_qwen_starts(proc: subprocess.Popen, fifo: Path) -> None:
    """The qwen checkpoint reads its completions from a FIFO: once our write end opens, its
    first pair is running (so every earlier pair has ended). Kill the whole run there."""
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:  # no reader yet
            assert proc.poll() is None, "the leaderboard ended before reaching qwen"
            time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    os.close(fd)


def build_board(root: Path) -> dict:
    """Run 3 checkpoints (one broken) x 2 tasks, kill it in qwen's first pair, resume."""
    files = board_files(root)
    fifo = root / "qwen.jsonl"
    os.mkfifo(fifo)
    with open(root / "first.log", "w") as out:
        first = evalpack_process(
            *board_command(root, files),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        kill_when_qwen_starts(first, fifo)
    at_kill = {
        "solutions": requests_by_task(root / "solutions.log"),
        "qwen": requests_by_task(root / "qwen.log"),
        "done": {
            rundirs.run_folder(p).relative_to(root / "board").as_posix()
            for p in (root / "board").rglob("results_*.json")
        },
    }
    fifo.unlink()
    fifo.symlink_to(OUTPUTS / "math.jsonl")
    resumed = evalpack_process(*board_command(root, files), stderr=subprocess.PIPE, text=True)
    _, resume_log = resumed.communicate()
    return {
        "root": root,
        "files": files,
        "at_kill": at_kill,
        "resume_rc": resumed.returncode,
        "resume_log": resume_log,
    }


@pytest.fixture(scope="session")
def leaderboard(tmp_path_factory) -> dict:
    """The leaderboard of `build_board`, built once per session (test_runs, test_reports)."""
    return build_board(tmp_path_factory.mktemp("leaderboard"))
