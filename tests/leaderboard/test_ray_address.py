"""`--executor ray` with an address nobody answers on is one line, at once, not minutes of Ray
retrying (run inside a private network namespace, as test_ray.py runs its cluster); and
SIGTERM ends a leaderboard run as Ctrl-C does (workers stopped, one line saying how to resume)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import FIXTURES
from tests.leaderboard.test_ray import requires_ray

FIXTURE_DATA = {"EVALPACK_DATA_DIR": str(FIXTURES / "data")}
from evalpack.leaderboard.ray_address import address_problem, host_port


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_addresses_are_read_and_checked(tmp_path, monkeypatch):
    assert host_port("ray://10.0.0.2:10001") == ("10.0.0.2", 10001)
    assert host_port("127.0.0.1:6379") == ("127.0.0.1", 6379)
    assert host_port("auto") is None
    port = free_port()
    problem = address_problem(f"127.0.0.1:{port}")
    assert problem.startswith(f"--address 127.0.0.1:{port}: no Ray cluster answers there")
    assert "ray start --head" in problem
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    assert address_problem(None).startswith("--address auto: no Ray cluster is running")
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{port}")
    assert address_problem("auto").startswith(
        f"--address auto (auto: 127.0.0.1:{port}): no Ray cluster answers there"
    )
    with socket.socket() as listening:  # something answers: Ray is asked
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert address_problem(f"127.0.0.1:{listening.getsockname()[1]}") is None


def models_file(root: Path, model_args: dict) -> Path:
    models = root / "models.yaml"
    models.write_text(
        json.dumps({"checkpoints": [{"name": "c", "model": "replay", "model_args": model_args}]})
    )
    return models


def popqa_board(tmp_path: Path, models: Path, *extra: str) -> list[str]:
    """`evalpack leaderboard run` of PopQA for `models` into `tmp_path/board`, then `extra`."""
    return [
        *(sys.executable, "-m", "evalpack", "leaderboard", "run", "--models", str(models)),
        *("--suite", "tulu_3_dev", "--tasks", "popqa_tulu", "--output", str(tmp_path / "board")),
        *extra,
    ]


@requires_ray
def test_an_unreachable_ray_address_is_one_line(tmp_path):
    models = models_file(tmp_path, {"from_doc": "solution"})
    command = popqa_board(tmp_path, models, "--executor", "ray", "--address", "127.0.0.1:1")
    start = time.monotonic()
    done = subprocess.run(
        [
            "unshare",
            "--net",
            "--fork",
            "--kill-child",
            "sh",
            "-c",
            'ip link set lo up && exec "$@"',
            "sh",
            *command,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, **FIXTURE_DATA},
    )
    print(f"unreachable address answered in {time.monotonic() - start:.1f} s")
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert errors == [done.stderr.strip().splitlines()[-1]]
    assert errors[0].startswith(
        "evalpack leaderboard: error: --address 127.0.0.1:1: no Ray "
        "cluster answers there (Connection refused)"
    )


def test_sigterm_stops_a_run_like_ctrl_c(tmp_path):
    fifo = tmp_path / "answers.jsonl"  # the pair blocks reading it: a run that is busy
    os.mkfifo(fifo)
    models = models_file(tmp_path, {"completions": str(fifo)})
    run = subprocess.Popen(
        popqa_board(tmp_path, models),
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, **FIXTURE_DATA},
    )
    try:
        while True:  # the worker has opened the FIFO: the pair is running
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                assert run.poll() is None, run.stderr.read()
                time.sleep(0.2)
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=120)
        os.close(fd)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == 130
    assert stderr.strip().splitlines()[-1] == (
        "evalpack leaderboard: interrupted during c x popqa_tulu; finished pairs are kept, rerun the "
        "same command to resume"
    )
