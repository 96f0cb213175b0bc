"""The board serving real checkpoints itself: `transformers serve` (CPU) on three tiny random
Llamas built here, two "GPU" slots (`--gpus 0,1`): every server started and stopped by the board,
and the results equal to those of the same checkpoints served by hand (one server loading
each on demand). Skipped, with the install line, where the server package is missing (as
tests/models/test_real_server.py)."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from evalpack.leaderboard import rundirs, serve
from tests.boards import evalpack
from tests.conftest import requires_shared
from tests.models.test_real_server import _wait_healthy, build_tiny_model, free_port
from tests.models.test_real_server import pytestmark as needs_server

pytestmark = needs_server
TASKS = ["minerva_math_tulu_algebra", "minerva_math_tulu_geometry"]
LIMIT = 2
TRANSFORMERS = str(Path(sys.executable).parent / "transformers")
COMMAND = f"{TRANSFORMERS} serve --host 127.0.0.1 --port {{port}} --device cpu {{model}}"
ARGS = {"max_model_len": 12, "seed": 3, "num_concurrent": 1, "max_retries": 0}


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> list[Path]:
    folders = []
    for seed in range(3):
        folder = tmp_path_factory.mktemp(f"tiny-{seed}")
        build_tiny_model(folder, seed=seed, positions=4096)
        folders.append(folder)
    return folders


def board(root: Path, checkpoints: list[dict], *flags: str) -> subprocess.CompletedProcess:
    root.mkdir(parents=True, exist_ok=True)
    (root / "models.yaml").write_text(json.dumps({"checkpoints": checkpoints}))
    (root / "suites.yaml").write_text(
        json.dumps({"two": {"tasks": [{"task": t, "chat": True} for t in TASKS]}})
    )
    return evalpack(
        *("leaderboard", "run", "--models", str(root / "models.yaml")),
        *("--suites", str(root / "suites.yaml"), "--suite", "two"),
        *("--output", str(root / "board"), "--limit", str(LIMIT), *flags),
        HF_HUB_OFFLINE="1",
    )


def outputs(pair: Path) -> dict:
    """A pair's answers by doc and its metrics."""
    samples = [
        json.loads(line)
        for file in pair.rglob("samples_*.jsonl")
        for line in file.read_text().splitlines()
    ]
    results = json.loads(rundirs.results_files(pair)[-1].read_text())["results"]
    metrics = {task: {k: v for k, v in row.items() if "," in k} for task, row in results.items()}
    return {"answers": sorted((s["doc_id"], s["resps"]) for s in samples), "metrics": metrics}


def start_by_hand(log: Path) -> tuple[subprocess.Popen, str]:
    """`transformers serve` started as a user serving several checkpoints would: one server,
    no model forced (each request's model is loaded on demand); waited for by the caller."""
    port = free_port()
    command = COMMAND.format(port=port, model="").split()
    with open(log, "w") as out:
        proc = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
    return proc, f"http://127.0.0.1:{port}"


@requires_shared
def test_the_board_serves_three_checkpoints_as_they_are_served_by_hand(
    mirror, tiny_models, tmp_path
):
    names = ["tiny-0", "tiny-1", "tiny-2"]
    served = [
        {
            "name": name,
            "model": "evalpack-chat",
            "model_args": {"model": str(folder), **ARGS},
            "serve": {"command": COMMAND, "gpus_per_replica": 1, "replicas": 1},
        }
        for name, folder in zip(names, tiny_models, strict=True)
    ]
    result = board(tmp_path / "auto", served, "--gpus", "0,1")
    assert result.returncode == 0, result.stderr
    pids = []
    for name in names:
        state = serve.recorded(tmp_path / "auto" / "board" / name)
        assert state["stopped"] is True and state["gpus"] in (["0"], ["1"])
        pids += [server["pid"] for server in state["servers"]]
    assert len(pids) == 3 and not any(serve.group_alive(pid) for pid in pids)

    proc, root = start_by_hand(tmp_path / "by_hand.log")
    try:
        _wait_healthy(root, proc, tmp_path / "by_hand.log")
        by_hand = [
            {
                "name": name,
                "model": "evalpack-chat",
                "model_args": {
                    "model": str(folder),
                    "base_url": f"{root}/v1/chat/completions",
                    **ARGS,
                },
            }
            for name, folder in zip(names, tiny_models, strict=True)
        ]
        result = board(tmp_path / "hand", by_hand)
        assert result.returncode == 0, result.stderr
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    for name in names:
        for task in TASKS:
            auto = outputs(tmp_path / "auto" / "board" / name / task)
            assert auto["answers"] and auto == outputs(tmp_path / "hand" / "board" / name / task)
    # the three random models answer differently
    firsts = [outputs(tmp_path / "auto" / "board" / n / TASKS[0])["answers"] for n in names]
    assert len({json.dumps(f) for f in firsts}) == 3
