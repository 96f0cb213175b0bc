"""The plan a leaderboard makes before it starts (`evalpack.leaderboard.plan`): which pairs can
run, which cannot and why, asked of real HTTP servers on 127.0.0.1 (the stubs) once each.
The plan against a real `transformers serve` is in test_real_server.py."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalpack.leaderboard import plan, probes
from tests.conftest import DATA_DIR, FIXTURES, requires_shared
from tests.models.http_stub import Stub
from tests.models.judge_stub import JudgeStub

FIXTURE_DATA = FIXTURES / "data"
CHAT = {"task": "gsm8k_tulu", "chat": True}  # continues an "Answer:" prefix
ENTRIES = [
    CHAT,
    {"task": "mmlu_mc_tulu", "chat": False},
    {"task": "minerva_math_tulu", "chat": True},
    {"task": "drop_llama3", "chat": False},
    {"task": "codex_humaneval_tulu", "chat": True},
]


def small_mirror(root: Path) -> Path:
    """A mirror with GSM8K, MMLU, MATH and HumanEval from ../shared and AlpacaEval's fixture;
    DROP is not in it."""
    root.mkdir()
    for name in (
        "openai__gsm8k",
        "cais__mmlu",
        "EleutherAI__hendrycks_math",
        "openai__openai_humaneval",
    ):
        (root / name).symlink_to(DATA_DIR / name)
    (root / "tatsu-lab__alpaca_eval").symlink_to(FIXTURE_DATA / "tatsu-lab__alpaca_eval")
    return root


@pytest.fixture
def refusing():
    """A chat server that refuses `continue_final_message` with 422, as transformers serve."""
    stub = Stub().start()
    stub.refuse = {"continue_final_message"}
    yield stub
    stub.stop()


def dead_url() -> str:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1/chat/completions"


@requires_shared
def test_the_plan_of_a_board_mixing_backends(refusing, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(small_mirror(tmp_path / "mirror")))
    for name in ("OPENAI_API_KEY", "EVALPACK_JUDGE_BASE_URL"):  # no judge configured
        monkeypatch.delenv(name, raising=False)
    checkpoints = [
        {"name": "ref", "model": "replay", "model_args": {"from_doc": "solution"}},
        {
            "name": "chat",
            "model": "evalpack-chat",
            "model_args": {"base_url": refusing.url("/v1/chat/completions"), "model": "m"},
        },
        {"name": "gone", "model": "evalpack-chat", "model_args": {"base_url": dead_url()}},
    ]
    judged = {"task": "alpaca_eval_v2_tulu", "chat": True}
    board = plan.make_plan(checkpoints, [*ENTRIES, judged], tmp_path / "board", [])
    pairs = board["pairs"]
    assert pairs["ref"] == {
        "gsm8k_tulu": "run",
        "mmlu_mc_tulu": "run",
        "codex_humaneval_tulu": "run",
        "minerva_math_tulu": "run",
        "drop_llama3": pairs["ref"]["drop_llama3"],
        "alpaca_eval_v2_tulu": pairs["ref"]["alpaca_eval_v2_tulu"],
    }
    for ckpt in ("ref", "chat"):
        assert pairs[ckpt]["alpaca_eval_v2_tulu"].startswith("no judge configured")
    drop = tmp_path / "mirror" / "EleutherAI__drop" / "default" / "validation.jsonl"
    assert pairs["ref"]["drop_llama3"] == (
        f"data missing: {drop} is not in EVALPACK_DATA_DIR: copy it there, or unset "
        "EVALPACK_DATA_DIR to read the hub"
    )
    chat = pairs["chat"]
    assert chat["minerva_math_tulu"] == "run"
    assert "answers generation requests only" in chat["mmlu_mc_tulu"]
    for task in ("gsm8k_tulu", "codex_humaneval_tulu"):
        assert "does not continue an assistant prefix" in chat[task]
        assert "HTTP 422" in chat[task] and "evalpack-completions" in chat[task]
    # the server was asked once, for both prefix tasks
    assert [p.get("continue_final_message") for p in refusing.payloads()] == [True]
    assert all(
        "cannot be reached" in reason
        for task, reason in pairs["gone"].items()
        if task != "drop_llama3"
    )
    text = plan.render(board)
    assert text.splitlines()[0] == (
        "plan: 6 tasks x 3 checkpoints: 5 pairs will run, 0 finished earlier, 13 cannot run"
    )
    assert text.splitlines()[1].split() == ["task", "ref", "chat", "gone"]
    assert text.splitlines()[2].split() == ["gsm8k_tulu", "run", "CANNOT", "CANNOT"]
    assert f"cannot run: ref x drop_llama3: data missing: {drop}" in text


def test_the_judge_is_asked_once_whether_it_gives_logprobs(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("EVALPACK_JUDGE_BASE_URL", raising=False)
    missing = probes.judge_problem({})
    assert missing.startswith("no judge configured and no key in OPENAI_API_KEY")
    assert "judge_base_url" in missing
    judge = JudgeStub({}).start()
    try:
        assert probes.judge_problem({"judge_base_url": judge.base_url}) is None
        judge.logprobs = False
        assert "gives no log-probabilities" in probes.judge_problem(
            {"judge_base_url": judge.base_url}
        )
        assert len(judge.payloads()) == 2
    finally:
        judge.stop()
    assert "cannot be reached" in probes.judge_problem(
        {"judge_base_url": dead_url().removesuffix("/chat/completions")}
    )


def evalpack(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalpack.cli.cli", *args],
        text=True,
        check=False,
        capture_output=True,
        env={**os.environ, **env},
        timeout=300,
    )


@requires_shared
def test_strict_starts_nothing_and_check_only_prints(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text(
        json.dumps(
            {
                "checkpoints": [
                    {"name": "ref", "model": "replay", "model_args": {"from_doc": "solution"}}
                ]
            }
        )
    )
    env = {"EVALPACK_DATA_DIR": str(small_mirror(tmp_path / "mirror"))}
    board = tmp_path / "board"
    common = [
        "--models",
        str(models),
        "--suite",
        "tulu_3_dev",
        "--tasks",
        "gsm8k_tulu,drop_llama3",
        "--output",
        str(board),
    ]
    checked = evalpack("leaderboard", "check", *common, env=env)
    assert checked.returncode == 1, checked.stderr
    assert "cannot run: ref x drop_llama3: data missing:" in checked.stdout
    strict = evalpack("leaderboard", "run", *common, "--strict", env=env)
    assert strict.returncode == 2
    assert strict.stderr.strip().splitlines()[-1] == (
        "evalpack leaderboard: error: 1 pairs cannot run (listed above); --strict starts nothing"
    )
    assert not board.exists()  # nothing started, nothing written
