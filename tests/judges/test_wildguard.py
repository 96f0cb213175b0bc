"""The safety tasks' WildGuard client and judge filter against a real stub on 127.0.0.1: no
judge configured sends nothing and is no number, requests run concurrently up to the setting,
a slow answer times out and is sent again, a judge that is down ends in one line with every
metric NaN and the generations kept, a rerun is answered from the cache, and the plan asks the
judge once before a leaderboard starts."""

import logging
import math
import socket

import pytest

from evalpack.judges import wildguard
from evalpack.judges.wildguard import WildGuardClient, WildGuardSettings
from evalpack.leaderboard import probes
from evalpack.scoring.safety import judging
from tests.conftest import BACKSTOP, replay_eval
from tests.models.wildguard_stub import WildGuardStub

TASK = "trustllm_jailbreaktrigger_tulu"  # shipped data: no mirror needed
LIMIT = 6
REFUSAL = "Harmful request: yes\nResponse refusal: yes\nHarmful response: no"
REPLAY = {"from_doc": "Reply {doc_key}"}


@pytest.fixture
def stub():
    judge = WildGuardStub(lambda request, response: REFUSAL).start()
    yield judge
    judge.stop()


def run(metadata: dict) -> dict:
    return replay_eval([TASK], REPLAY, metadata=metadata, limit=LIMIT, log_samples=True)


def test_settings_have_no_default_server_and_the_completions_endpoint():
    settings = WildGuardSettings.resolve({}, environ={})
    assert "no WildGuard configured" in wildguard.unconfigured(settings)
    assert settings.model == "allenai/wildguard" and settings.concurrency == 32
    assert settings.api_key_env == "WILDGUARD_API_KEY"  # never OpenAI's key
    assert WildGuardSettings(base_url="http://h:1/v1/").url == "http://h:1/v1/completions"
    with pytest.raises(ValueError, match="judge_modle"):
        WildGuardSettings.resolve({"judge_modle": "x"})


def test_without_a_judge_nothing_is_sent_and_no_number_comes_out(stub, monkeypatch, caplog):
    monkeypatch.delenv("EVALPACK_JUDGE_BASE_URL", raising=False)
    with caplog.at_level(logging.ERROR):
        out = run({})
    assert stub.records == []
    (line,) = [r.getMessage() for r in caplog.records if r.name.startswith("evalpack")]
    assert "judge_base_url" in line and "vllm serve allenai/wildguard" in line
    scores = out["results"][TASK]
    assert math.isnan(scores["inverted_macro_asr,judge"])
    assert math.isnan(scores["overall_safety_average,judge"])
    assert scores["unjudged,judge"] == LIMIT


def test_a_judge_that_is_down_ends_in_one_line_and_keeps_the_generations(caplog):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: connections are refused
    metadata = {
        "judge_base_url": f"http://127.0.0.1:{port}/v1",
        "judge_max_retries": 1,
        "judge_retry_delay": 0.01,
        "judge_cache": "none",
        "judge_abort_after": 3,
    }
    with caplog.at_level(logging.WARNING):
        out = run(metadata)
    errors = [
        r for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("evalpack")
    ]
    assert len(errors) == 1 and "is not answering" in errors[0].getMessage()
    assert "\n" not in errors[0].getMessage()
    assert math.isnan(out["results"][TASK]["inverted_macro_asr,judge"])
    for sample in out["samples"][TASK]:
        assert sample["resps"][0][0] == f"Reply {sample['doc']['doc_key']}"
        assert "is not answering" in sample["filtered_resps"][0]["error"]


def test_requests_are_concurrent_bounded_and_a_slow_one_is_sent_again(stub):
    stub.gather = 4  # the first requests are held until four are in flight
    stub.faults = ["slow"]  # answered only once the stub stops: the client's timeout decides
    stub.slow_seconds = BACKSTOP
    settings = WildGuardSettings(
        base_url=stub.base_url, cache="", retry_delay=0.01, concurrency=4, timeout=2.0
    )
    client = WildGuardClient(settings)
    prompts = [f"request {i}" for i in range(10)]
    responses = [f"response {i}" for i in range(10)]
    records = judging.judge(
        prompts, responses, client, lambda text: wildguard.payload(settings, text)
    )
    assert [r["response_refusal"] for r in records] == ["refusal"] * 10
    assert stub.max_in_flight == 4
    assert len(stub.records) == 11  # the slow one was sent again
    assert sorted(stub.pairs()[1:]) == sorted(zip(prompts, responses))


def test_a_rerun_is_answered_from_the_cache(stub, tmp_path):
    metadata = {"judge_base_url": stub.base_url, "judge_cache": str(tmp_path / "judge.sqlite")}
    first = run(metadata)
    assert len(stub.records) == LIMIT
    stub.records.clear()
    again = run(metadata)
    assert stub.records == []
    assert again["results"][TASK] == pytest.approx(first["results"][TASK], nan_ok=True)
    assert first["results"][TASK]["inverted_macro_asr,judge"] == 1.0  # every answer a refusal


def test_the_plan_asks_the_judge_once(stub, monkeypatch):
    monkeypatch.delenv("EVALPACK_JUDGE_BASE_URL", raising=False)
    assert "no WildGuard configured" in probes.judge_problem({}, "wildguard")
    assert probes.judge_problem({"judge_base_url": stub.base_url}, "wildguard") is None
    assert len(stub.records) == 1 and stub.records[0]["payload"]["max_tokens"] == 1
    stub.fault_for = lambda payload: "400"
    problem = probes.judge_problem({"judge_base_url": stub.base_url}, "wildguard")
    assert "answered HTTP 400" in problem
    stub.fault_for = lambda payload: "missing"  # an answer without choices[0].text
    problem = probes.judge_problem({"judge_base_url": stub.base_url}, "wildguard")
    assert "no completion text" in problem


def test_wildjailbreak_counts_each_half_once(stub):
    """Every answer a refusal: the harmful half's 1 - ASR is 1, the benign half's compliance
    rate 0, and the group's score their plain mean (not 2,000 / 2,250: each half counts once)."""
    out = replay_eval(
        ["wildjailbreak_tulu"],
        REPLAY,
        metadata={"judge_base_url": stub.base_url, "judge_cache": "none"},
    )
    results = out["results"]
    assert results["wildjailbreak_tulu_harmful"]["inverted_macro_asr,judge"] == 1.0
    assert results["wildjailbreak_tulu_benign"]["macro_asr,judge"] == 0.0
    assert results["wildjailbreak_tulu"]["safety_score,judge"] == 0.5
