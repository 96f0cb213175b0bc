"""Honest outcomes: a run whose primary metric could not be computed is a failure (a
leaderboard pair is failed, not done; `rescore` exits non-zero); only failures a retry can fix
are retried; AlpacaEval with no judge configured sends nothing; a server that refuses
connections is given up on with one line."""

import json
import logging
import math
import os
import socket
import subprocess
import sys

import pytest

from evalpack.leaderboard import outcome, rundirs
from evalpack.leaderboard.retries import retryable_reason
from tests.conftest import FIXTURES, replay_eval
from tests.models.judge_stub import JudgeStub

FIXTURE_DATA = FIXTURES / "data"
TASK = "alpaca_eval_v2_tulu"


@pytest.mark.parametrize(
    ("reason", "retry"),
    [
        (
            "DataError: EVALPACK_DATA_DIR=/m: no file for dataset 'x'; looked for /m/x/test.jsonl",
            False,
        ),
        (
            "ValueError: bad --model_args for evalpack-chat: base_ur= (did you mean base_url=?)",
            False,
        ),
        (
            (
                "ServedRequestError: 285 of 285 requests to http://h/v1/completions failed; first: task t "
                "doc 0: HTTP 422: {'detail': 'add_special_tokens'} (1 attempt: a client error, not "
                "retried)"
            ),
            False,
        ),
        ("NotImplementedError: evalpack-chat answers generation requests only", False),
        ("alpaca_eval_v2_tulu: length_controlled_winrate is nan (could not be computed)", False),
        (
            (
                "ServedRequestError: 3 of 5 requests to http://h/v1 failed; first: task t doc 1: HTTP 503: "
                "overloaded (4 attempts)"
            ),
            True,
        ),
        (
            "ServedRequestError: the server at http://h/v1 refused connections for 30 s: given up",
            True,
        ),
        ("ServedRequestError: ... Read timed out. (read timeout=300)", True),
        ("Ray: NodeDiedError: the node running this task died", True),
    ],
)
def test_only_failures_a_retry_can_fix_are_retried(reason, retry):
    assert retryable_reason(reason) is retry


@pytest.fixture
def no_network(monkeypatch):
    """Every outgoing connection attempt, refused and recorded."""
    tried = []

    def refuse(sock, address):
        tried.append(address)
        raise OSError("connections are off in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return tried


def test_alpaca_eval_without_a_judge_sends_nothing_and_is_not_a_result(
    no_network, monkeypatch, tmp_path, caplog
):
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(FIXTURE_DATA))
    for name in ("OPENAI_API_KEY", "EVALPACK_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with caplog.at_level(logging.ERROR):
        results = replay_eval([TASK], "from_doc=output", metadata={})
    assert no_network == []  # nothing was sent anywhere
    (line,) = [r.getMessage() for r in caplog.records if "not judged" in r.getMessage()]
    assert "judge_base_url" in line and "OPENAI_API_KEY" in line
    lc = results["results"][TASK]["length_controlled_winrate,judge"]
    assert math.isnan(lc)
    assert outcome.missing_primaries(results) == [
        f"{TASK}: length_controlled_winrate is nan (could not be computed)"
    ]


def test_a_server_refusing_connections_is_given_up_with_one_line(monkeypatch, caplog):
    from evalpack.models import outage
    from evalpack.models.served import ServedRequestError

    monkeypatch.setattr(outage, "GIVE_UP_AFTER", 1.0)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/answer"
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(FIXTURE_DATA))
    from lm_eval import simple_evaluate

    from evalpack.models.registry import register
    from tests.conftest import task_manager

    register()
    with caplog.at_level(logging.WARNING), pytest.raises(ServedRequestError) as error:
        simple_evaluate(
            model="answer-server",
            model_args=f"base_url={url},max_retries=50,retry_delay=0.2",
            tasks=[TASK],
            task_manager=task_manager(),
            limit=12,
        )
    text = str(error.value)
    assert f"the server at {url} refused connections for" in text and "given up" in text
    assert "0 of 12 completions were received" in text
    assert "\n" not in text
    # one warning for the outage, not one per request and attempt
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and url in r.getMessage()]
    assert len(warnings) == 1


def evalpack(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalpack.cli.cli", *args],
        text=True,
        check=False,
        capture_output=True,
        env={**os.environ, **env},
        timeout=600,
    )


def test_a_pair_whose_judge_fails_every_doc_is_failed_not_done_and_rescore_says_so(tmp_path):
    """The judge answers the plan's question, then refuses every judgement (400): the pair
    ends with NaN, which is a failure (not retried: a 400 is refused again); rescoring the run
    saved before the judge went away exits 1 with the reason."""
    judge = JudgeStub({}).start()
    judge.fault_for = lambda payload: "400" if "model_identifier" in json.dumps(payload) else None
    models = tmp_path / "models.yaml"
    models.write_text(
        json.dumps(
            {
                "checkpoints": [
                    {"name": "echo", "model": "replay", "model_args": {"from_doc": "output"}}
                ]
            }
        )
    )
    env = {"EVALPACK_DATA_DIR": str(FIXTURE_DATA)}
    metadata = json.dumps(
        {"judge_base_url": judge.base_url, "judge_cache": "none", "judge_retry_delay": 0.01}
    )
    board = tmp_path / "board"
    try:
        run = evalpack(
            "leaderboard",
            "run",
            "--models",
            str(models),
            "--suite",
            "tulu_3_dev",
            "--tasks",
            TASK,
            "--output",
            str(board),
            "--limit",
            "3",
            "--",
            "--metadata",
            metadata,
            env=env,
        )
    finally:
        judge.stop()
    pair = board / "echo" / TASK
    assert run.returncode == 1, run.stderr[-2000:]
    assert not rundirs.pair_is_done(pair)
    failed = (pair / rundirs.FAILED_MARKER).read_text()
    assert f"{TASK}: length_controlled_winrate is nan (could not be computed)" in failed
    lines = [line for line in run.stderr.splitlines() if "FAILED" in line]
    assert len(lines) == 1 and "will retry" not in lines[0] and "not retried" in lines[0]
    assert "1 failed (echo/alpaca_eval_v2_tulu)" in run.stderr
    # the judge is gone now: every judgement fails again, and rescore says so
    rescored = evalpack("rescore", str(board), "--output", str(tmp_path / "rescored"), env=env)
    assert rescored.returncode == 1
    assert "length_controlled_winrate is nan (could not be computed)" in rescored.stderr
    assert "rescored runs written" not in rescored.stderr
    assert (tmp_path / "rescored" / "plan.json").is_file()  # the report shows the same suite


def test_log_likelihoods_on_a_chat_backend_is_a_short_line():
    """MMLU's 57 subtasks on `evalpack-chat`: three names and a count, not 3,000 characters."""
    from lm_eval.api.instance import Instance

    from evalpack.models.backends import ServedChat

    lm = ServedChat(base_url="http://127.0.0.1:1/v1/chat/completions", model="m")
    requests_ = [
        Instance("loglikelihood", {}, ("Q", " A"), 0, (f"mmlu_mc_tulu_s{i:02d}", 0, 1))
        for i in range(57)
    ]
    with pytest.raises(NotImplementedError) as error:
        lm.loglikelihood(requests_)
    text = str(error.value)
    assert "tasks mmlu_mc_tulu_s00, mmlu_mc_tulu_s01, mmlu_mc_tulu_s02 and 54 more need" in text
    assert len(text) < 400


def test_a_judge_without_logprobs_is_asked_once_per_doc():
    """Its answer will not change on a retry: each judgement fails at the first attempt."""
    from evalpack.judges.client import JudgeClient, JudgeSettings

    judge = JudgeStub({}).start()
    judge.logprobs = False
    try:
        client = JudgeClient(
            JudgeSettings(
                base_url=judge.base_url, cache="", max_retries=5, retry_delay=0.01, abort_after=10
            )
        )
        payloads = [
            {"model": "j", "messages": [{"role": "user", "content": f"q{i}"}]} for i in range(3)
        ]
        results = client.judge_all(payloads)
    finally:
        judge.stop()
    assert len(judge.payloads()) == 3
    assert all("gave no log-probabilities" in r.error for r in results)
