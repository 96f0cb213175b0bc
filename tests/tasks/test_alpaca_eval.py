"""alpaca_eval_v2_tulu: OLMES's generation requests, and judging through a real HTTP judge stub
(annotator prompts, log-probability preferences, retries, cache, failures) with the metrics
checked against hand computations and the `alpaca-eval` package itself.

The fixture rows are our own, in the dataset's schema. `df_gamed.csv` beside them is a
synthetic stand-in (two "gamed" models over the 12 fixture indices) for the hub file the
package's length-controlled GLM reads; the LC win rate is compared with the package's own
`get_length_controlled_winrate` on the same file.
"""

import json
import logging
import math
import socket

import pytest
from alpaca_eval import constants
from alpaca_eval import utils as ae_utils
from alpaca_eval.metrics import get_length_controlled_winrate, glm_winrate

from evalpack.core.data import DataError
from evalpack.hooks import alpaca_eval as hooks
from evalpack.judges.client import JudgeClient, JudgeSettings
from evalpack.scoring.alpaca_judge import ANNOTATOR, item_of, judge, leaderboard
from tests.conftest import BACKSTOP, FIXTURES, chat_requests, read_jsonl, replay_eval, task_manager
from tests.models.judge_stub import JudgeStub, prompt_outputs

TASK = "alpaca_eval_v2_tulu"
ALPACA = FIXTURES / "data" / "tatsu-lab__alpaca_eval"
DOCS = read_jsonl(ALPACA / "alpaca_eval_gpt4_baseline" / "eval.jsonl")
OUTPUTS = [f"Answer {i}: " + "detail " * (3 * i + 1) for i in range(len(DOCS))]
P_MODEL = [0.05, 0.9, 0.3, 0.75, 0.6, 0.2, 0.95, 0.4, 0.85, 0.1, 0.65, 0.35]
PRICE_PER_TOKEN = 0.01 / 1000  # the package's price for gpt-4-1106-preview


@pytest.fixture
def stub():
    judge_stub = JudgeStub(dict(zip(OUTPUTS, P_MODEL, strict=True))).start()
    yield judge_stub
    judge_stub.stop()


def settings(stub, tmp_path, **extra) -> dict:
    return {
        "judge_base_url": stub.base_url,
        "judge_cache": str(tmp_path / "judge.sqlite"),
        "judge_retry_delay": 0.01,
        **extra,
    }


def run(tmp_path, metadata: dict) -> dict:
    completions = tmp_path / "completions.jsonl"
    completions.write_text(
        "".join(
            json.dumps(
                {
                    "key": f"tatsu-lab__alpaca_eval/alpaca_eval_gpt4_baseline/eval#{i}",
                    "completion": output,
                }
            )
            + "\n"
            for i, output in enumerate(OUTPUTS)
        )
    )
    return replay_eval([TASK], f"completions={completions}", metadata=metadata, log_samples=True)


def by_hand(p_model: list[float | None]) -> dict:
    judged = [p for p in p_model if p is not None]
    return {
        "win_rate": 100 * sum(judged) / len(judged),
        "n_wins": sum(p > 0.5 for p in judged),
        "discrete_win_rate": 100 * sum(p > 0.5 for p in judged) / len(judged),
        "n_draws": 0,
        "avg_length": int(sum(map(len, OUTPUTS)) / len(OUTPUTS)),
        "n_failed": len(p_model) - len(judged),
    }


def lc_by_the_package(p_model: list[float | None], monkeypatch) -> float:
    monkeypatch.setattr(
        glm_winrate, "hf_hub_download", lambda repo_id, filename, **kw: str(ALPACA / filename)
    )
    annotations = [
        {
            "instruction": d["instruction"],
            "output_1": d["output"],
            "output_2": out,
            "generator_1": d["generator"],
            "generator_2": "EVAL_MODEL",
            "preference": math.nan if p is None else 1 + p,
        }
        for d, out, p in zip(DOCS, OUTPUTS, p_model, strict=True)
    ]
    return get_length_controlled_winrate(annotations, save_weights_dir=None)[
        "length_controlled_winrate"
    ]


def test_requests_are_olmes_generation_requests(fixture_mirror):
    task = task_manager().load([TASK])["tasks"][TASK]
    kwargs = task.config.generation_kwargs
    assert kwargs["until"] == ["</s>"] and kwargs["max_gen_toks"] == 8192
    assert kwargs["do_sample"] is False and kwargs["temperature"] == 0.0
    instances = chat_requests(TASK)
    assert len(instances) == len(DOCS)
    for instance in instances:
        messages = json.loads(instance.args[0])
        assert messages == [{"role": "user", "content": DOCS[instance.doc_id]["instruction"]}]
    assert DOCS[3]["instruction"] == "  Write a haiku about autumn leaves.\n"  # kept untouched


def test_requests_carry_the_annotators_prompt(stub, tmp_path):
    client = JudgeClient(JudgeSettings(base_url=stub.base_url, cache="", retry_delay=0.01))
    judge(DOCS, OUTPUTS, client)
    config = ae_utils.load_configs(constants.EVALUATORS_CONFIG_DIR / ANNOTATOR)[ANNOTATOR]
    template = (constants.EVALUATORS_CONFIG_DIR / config["prompt_template"]).read_text()
    expected = {}
    for doc, output in zip(DOCS, OUTPUTS):
        switched = ae_utils.random_seeded_choice(
            seed="is_switched_outputs" + doc["instruction"] + "0", choices=[False, True]
        )
        first, second = (output, doc["output"]) if switched else (doc["output"], output)
        prompt = (
            template.replace("{instruction}", doc["instruction"])
            .replace("{output_1}", first)
            .replace("{output_2}", second)
        )
        expected[doc["instruction"]] = ae_utils.prompt_to_chatml(prompt.strip())
    payloads = stub.payloads()
    assert len(payloads) == len(DOCS)
    for payload in payloads:
        assert payload["messages"] in expected.values()
        assert {k: v for k, v in payload.items() if k != "messages"} == {
            "model": "gpt-4-1106-preview",
            "max_tokens": 1,
            "temperature": 1,
            "top_p": 1.0,
            "logprobs": True,
            "top_logprobs": 5,
        }
    assert sorted(map(json.dumps, (p["messages"] for p in payloads))) == sorted(
        map(json.dumps, expected.values())
    )
    shown_first = [prompt_outputs(p)["m"] in OUTPUTS for p in payloads]
    assert any(shown_first) and not all(shown_first)  # the package's seeded random order


def test_scripted_preferences_retries_and_a_cached_rerun(
    stub, tmp_path, fixture_mirror, monkeypatch, caplog
):
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-test-secret-1234")
    stub.faults = ["429", "500", "429", "503"]
    metadata = settings(stub, tmp_path, judge_api_key_env="JUDGE_TEST_KEY")
    with caplog.at_level(logging.INFO):
        out = run(tmp_path, metadata)
    scores = out["results"][TASK]
    expected = by_hand(P_MODEL)
    for name, value in expected.items():
        assert scores[f"{name},judge"] == pytest.approx(value), name
    assert scores["length_controlled_winrate,judge"] == pytest.approx(
        lc_by_the_package(P_MODEL, monkeypatch)
    )
    prompt_tokens = [
        sum(len(m["content"]) for m in p["messages"]) // 4 + 1 for p in stub.payloads()[4:]
    ]
    assert scores["total_price,judge"] == pytest.approx(sum(prompt_tokens) * PRICE_PER_TOKEN)
    assert len(stub.records) == len(DOCS) + 4  # every fault retried once
    assert {r["authorization"] for r in stub.records} == {"Bearer sk-test-secret-1234"}
    assert "sk-test-secret-1234" not in caplog.text
    assert "sk-test-secret-1234" not in json.dumps(out, default=str)
    samples = out["samples"][TASK]
    for sample in samples:
        record = sample["filtered_resps"][0]
        assert record["preference"] == pytest.approx(1 + P_MODEL[sample["doc_id"]])
        assert set(record["judge_top_logprobs"]) == {"m", "M", "Model"}
        assert sample["resps"][0][0] == OUTPUTS[sample["doc_id"]]

    stub.records.clear()
    rerun = run(tmp_path, metadata)
    assert stub.records == []  # every judgement came from the cache
    assert rerun["results"][TASK] == pytest.approx(scores)


def test_a_judge_that_is_down_ends_in_one_line_and_keeps_the_generations(
    tmp_path, fixture_mirror, caplog
):
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
        out = run(tmp_path, metadata)
    errors = [
        r for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("evalpack")
    ]
    assert len(errors) == 1 and "\n" not in errors[0].getMessage()
    assert "is not answering" in errors[0].getMessage() and str(port) in errors[0].getMessage()
    scores = out["results"][TASK]
    assert scores["n_failed,judge"] == len(DOCS)
    assert math.isnan(scores["length_controlled_winrate,judge"])
    assert math.isnan(scores["win_rate,judge"])
    samples = out["samples"][TASK]
    assert [s["resps"][0][0] for s in sorted(samples, key=lambda s: s["doc_id"])] == OUTPUTS
    assert all("is not answering" in s["filtered_resps"][0]["error"] for s in samples)


def test_docs_without_a_judgement_are_counted_not_lost(stub, monkeypatch):
    failing = DOCS[4]["instruction"]
    stub.fault_for = lambda payload: "500" if failing in json.dumps(payload) else None
    stub.prefer[OUTPUTS[7]] = None  # the judge answers with neither "m" nor "M"
    client = JudgeClient(
        JudgeSettings(base_url=stub.base_url, cache="", retry_delay=0.01, max_retries=2)
    )
    records = judge(DOCS, OUTPUTS, client)
    assert records[4]["preference"] is None and "HTTP 500" in records[4]["error"]
    assert records[7]["preference"] is None and "neither 'm' nor 'M'" in records[7]["error"]
    assert sum(r["error"] is not None for r in records) == 2
    assert len(stub.records) == len(DOCS) + 2  # doc 4: three attempts
    p_model = [None if i in (4, 7) else p for i, p in enumerate(P_MODEL)]
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(FIXTURES / "data"))
    scores = leaderboard(tuple(item_of(r) for r in records))
    for name, value in by_hand(p_model).items():
        assert scores[name] == pytest.approx(value), name
    assert scores["length_controlled_winrate"] == pytest.approx(
        lc_by_the_package(p_model, monkeypatch)
    )


def test_requests_run_concurrently_and_a_slow_answer_times_out_and_is_retried(stub, tmp_path):
    stub.gather = 4  # the first requests are held until four are in flight
    stub.faults = ["slow"]  # answered only once the stub stops: the client's timeout decides
    stub.slow_seconds = BACKSTOP
    client = JudgeClient(
        JudgeSettings(
            base_url=stub.base_url, cache="", retry_delay=0.01, concurrency=4, timeout=2.0
        )
    )
    records = judge(DOCS, OUTPUTS, client)
    assert [r["preference"] for r in records] == pytest.approx([1 + p for p in P_MODEL])
    assert len(stub.records) == len(DOCS) + 1  # the slow one was sent again
    assert stub.max_in_flight == 4


def test_without_the_glms_file_the_lc_win_rate_is_missing_not_fatal(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(tmp_path))  # a mirror without df_gamed.csv
    items = ((1.8, 10, 20, 0.0), (1.3, 30, 20, 0.0), (None, 5, 20, 0.0))
    scores = leaderboard(items)
    assert scores["win_rate"] == pytest.approx(55.0) and scores["n_failed"] == 1
    assert math.isnan(scores["length_controlled_winrate"])
    assert "length-controlled win rate not computed (2 judged docs): DataError" in caplog.text
    assert "df_gamed.csv" in caplog.text


def test_a_bad_row_is_one_clear_error(tmp_path, monkeypatch):
    folder = tmp_path / "tatsu-lab__alpaca_eval" / "alpaca_eval_gpt4_baseline"
    folder.mkdir(parents=True)
    rows = [dict(DOCS[0]), {k: v for k, v in DOCS[1].items() if k != "output"}]
    (folder / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"eval row 1: field 'output'"):
        hooks.load()
