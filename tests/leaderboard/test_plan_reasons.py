"""The plan says `cannot run: <reason>` with the command that fixes it, by reason: data neither
in the mirror nor on a reachable hub, BigCodeBench without its libraries, AlpacaEval without a
judge, a server that cannot continue an assistant prefix. `--strict` starts nothing; the
progress bar counts only the pairs that run. No ../shared needed."""

import json
import socket

import pytest

from evalpack.hooks.bigcodebench import task as bigcodebench
from evalpack.leaderboard import plan
from tests.boards import evalpack
from tests.conftest import FIXTURES, REPO
from tests.models.http_stub import Stub

REF = {"name": "ref", "model": "replay", "model_args": {"from_doc": "solution"}}


def dead_endpoint() -> str:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def no_hub(monkeypatch):
    """No mirror, and a hub nobody answers for."""
    endpoint = dead_endpoint()
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    for name in ("EVALPACK_DATA_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    return endpoint


def mirror_with(monkeypatch, root, *files):
    """A mirror holding (empty) `files`: the plan checks that a file is there, not its rows."""
    for file in files:
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        (root / file).touch()
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(root))
    return root


def reason(checkpoint, task, tmp_path, chat=True, extra=()):
    board = plan.make_plan([checkpoint], [{"task": task, "chat": chat}], tmp_path, list(extra))
    return board["pairs"][checkpoint["name"]][task]


def test_data_neither_in_a_mirror_nor_on_a_reachable_hub(no_hub, tmp_path):
    assert reason(REF, "gsm8k_tulu", tmp_path) == (
        f"data missing: EVALPACK_DATA_DIR is not set and the Hugging Face hub ({no_hub}) cannot "
        "be reached: export EVALPACK_DATA_DIR=<mirror dir> holding openai__gsm8k/main/test.jsonl"
    )
    # the pack ships AGIEval's data: nothing to fetch
    assert reason(REF, "agi_eval_english_cot_tulu", tmp_path) == "run"


def test_data_missing_from_the_mirror(monkeypatch, tmp_path):
    mirror = mirror_with(monkeypatch, tmp_path / "mirror")
    assert reason(REF, "gsm8k_tulu", tmp_path) == (
        f"data missing: {mirror / 'openai__gsm8k/main/test.jsonl'} is not in EVALPACK_DATA_DIR: "
        "copy it there, or unset EVALPACK_DATA_DIR to read the hub"
    )


def test_bigcodebench_without_its_libraries(monkeypatch, tmp_path):
    mirror_with(monkeypatch, tmp_path / "mirror", "bigcode__bigcodebench-hard/default/v0.1.2.jsonl")
    monkeypatch.setenv("EVALPACK_BIGCODEBENCH_LIBS", str(tmp_path / "no-libraries"))
    line = reason(REF, "bigcodebench_hard_tulu", tmp_path)
    assert line == bigcodebench.missing_libraries()
    assert "python -m evalpack.hooks.bigcodebench.libs install" in line


def test_alpaca_eval_without_a_judge(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(FIXTURES / "data"))
    for name in ("OPENAI_API_KEY", "EVALPACK_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    line = reason(REF, "alpaca_eval_v2_tulu", tmp_path)
    assert line.startswith("no judge configured and no key in OPENAI_API_KEY")
    assert '--metadata \'{"judge_base_url": "http://HOST:PORT/v1"' in line


def test_a_server_that_cannot_continue_an_assistant_prefix(monkeypatch, tmp_path):
    mirror_with(monkeypatch, tmp_path / "mirror", "openai__gsm8k/main/test.jsonl")
    stub = Stub().start()
    stub.refuse = {"continue_final_message"}  # as transformers serve does
    try:
        chat = {
            "name": "chat",
            "model": "evalpack-chat",
            "model_args": {"base_url": stub.url("/v1/chat/completions"), "model": "m"},
        }
        line = reason(chat, "gsm8k_tulu", tmp_path)
    finally:
        stub.stop()
    assert line.startswith("its server does not continue an assistant prefix")
    assert "HTTP 422" in line and line.endswith(
        "use evalpack-completions, or a server that takes them"
    )


def test_strict_stops_and_the_bar_counts_the_pairs_that_run(tmp_path):
    (tmp_path / "models.yaml").write_text(json.dumps({"checkpoints": [REF]}))
    suite = {"two": {"tasks": [{"task": "minerva_math_tulu_algebra"}, {"task": "gsm8k_tulu"}]}}
    (tmp_path / "suites.yaml").write_text(json.dumps(suite))
    command = ["leaderboard", "run", "--models", str(tmp_path / "models.yaml")]
    command += ["--suites", str(tmp_path / "suites.yaml"), "--suite", "two"]
    command += ["--output", str(tmp_path / "board"), "--limit", "1"]
    demo = str(REPO / "demo" / "data")  # MATH only: GSM8K cannot run
    strict = evalpack(*command, "--strict", EVALPACK_DATA_DIR=demo)
    assert strict.returncode == 2
    assert "cannot run: ref x gsm8k_tulu: data missing:" in strict.stdout
    assert not (tmp_path / "board").exists()
    ran = evalpack(*command, EVALPACK_DATA_DIR=demo)
    assert ran.returncode == 1, ran.stderr
    (line,) = [x for x in ran.stderr.splitlines() if "minerva_math_tulu_algebra: finished" in x]
    assert "] 1/1 pairs" in line
