"""docs/first_leaderboard.md, run as written: its `sh` blocks in order, in a fresh folder
beside `../shared`, against `transformers serve` (started from the guide's own command) serving
two tiny models built as `checkpoints/sft` and `checkpoints/dpo`. Only the port is changed (to
a free one). Stopped by its pid."""

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED, requires_shared
from tests.models.test_real_server import _wait_healthy, build_tiny_model, free_port, missing

GUIDE = REPO / "docs" / "first_leaderboard.md"
pytestmark = pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)} not installed")


def sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)


def with_port(text: str, port: int) -> str:
    return text.replace("127.0.0.1:8000", f"127.0.0.1:{port}").replace(
        "--port 8000", f"--port {port}"
    )


@requires_shared
def test_the_guide_runs_from_models_yaml_to_a_baseline_report(tmp_path):
    (tmp_path / "shared").symlink_to(SHARED)  # `../shared` as beside a checkout
    work = tmp_path / "work"
    for seed, name in enumerate(("sft", "dpo")):
        build_tiny_model(work / "checkpoints" / name, seed=seed, positions=4096)
    port = free_port()
    blocks = [with_port(block, port) for block in sh_blocks()]
    (serve,) = [b for b in blocks if b.startswith("transformers serve")]
    script = "\n".join(b for b in blocks if b is not serve)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    env.pop("EVALPACK_DATA_DIR", None)  # the guide sets it
    command = shlex.split(serve)
    command[0] = str(Path(bin_dir) / command[0])
    with open(tmp_path / "serve.log", "w") as log:
        server = subprocess.Popen(
            command, cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
    try:
        _wait_healthy(f"http://127.0.0.1:{port}", server, tmp_path / "serve.log")
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=work,
            env=env,
            text=True,
            capture_output=True,
            check=False,
            timeout=1200,
        )
    finally:
        os.kill(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            server.wait()
    (tmp_path / "guide.log").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, f"see {tmp_path / 'guide.log'}"
    assert "reasoning_math" in done.stdout  # suite list / show
    assert (
        "plan: 1 tasks x 2 checkpoints: 2 pairs will run, 0 finished earlier, 0 cannot run"
        in done.stdout
    )
    for ckpt in ("sft", "dpo"):
        pair = work / "board" / ckpt / "reasoning_math"  # where the guide says the files are
        assert (pair / "done").is_file() and len(list(pair.glob("results_*.json"))) == 1
    report = (work / "board" / "report" / "report.md").read_text()
    assert "vs sft" in report and "(n=" in report and ", p=" in report
