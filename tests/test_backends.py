"""The served-model backends against a real HTTP stub on 127.0.0.1 (tests/stub_server.py)."""

import json
import random
import textwrap
from itertools import pairwise

import pytest
import yaml
from lm_eval.api.instance import Instance
from lm_eval.models.api_models import JsonChatStr
from stub_server import StubServer, closed_port_url

from evalpack.backends import (
    AnswerServer,
    GenerationFailed,
    ServedChat,
    ServedCompletions,
    ServedSGLang,
    reconcile,
    sample_seed,
)

SAMPLED = {"until": ["\n"], "do_sample": True, "temperature": 0.8, "max_gen_toks": 32}
GREEDY = {"until": ["\n"], "do_sample": False, "max_gen_toks": 32}


@pytest.fixture
def stub():
    server = StubServer(respond=lambda path, payload: f"seed {seed_of(payload)}").start()
    yield server
    server.stop()


def seed_of(payload: dict) -> int:
    return payload.get("seed", payload.get("sampling_params", {}).get("sampling_seed"))


def chat(*messages: tuple[str, str]) -> JsonChatStr:
    return JsonChatStr(json.dumps([{"role": role, "content": text} for role, text in messages]))


def requests_for(contexts, gen_kwargs, repeats=1, task="toy"):
    """Instances as lm-eval hands them to a model: each doc's Instance listed `repeats` times."""
    listed = []
    for doc_id, context in enumerate(contexts):
        instance = Instance(
            "generate_until", {}, (context, dict(gen_kwargs)), 0, (task, doc_id, repeats)
        )
        listed.extend([instance] * repeats)
    return listed


def chat_model(stub, **args):
    return ServedChat(base_url=stub.url("/v1/chat/completions"), model="m", seed=7, **args)


# --- decoding settings ------------------------------------------------------------------------------


def test_greedy_means_temperature_zero_and_no_top_p():
    decoding = reconcile({"do_sample": False, "temperature": 0.7, "top_p": 0.9, "top_k": 5}, 64)
    assert (decoding.greedy, decoding.temperature, decoding.extra) == (True, 0.0, {})
    sampled = reconcile({"do_sample": True, "top_p": 0.9}, 64)
    assert (sampled.greedy, sampled.temperature, sampled.extra) == (False, 1.0, {"top_p": 0.9})
    assert not reconcile({"temperature": 0.6}, 64).greedy
    assert reconcile({"until": "x"}, 64).greedy


def test_greedy_request_sends_temperature_zero_without_top_p(stub):
    gen_kwargs = {"until": ["\n"], "do_sample": False, "temperature": 0.7, "top_p": 0.95}
    chat_model(stub).generate_until(requests_for([chat(("user", "q"))], gen_kwargs))
    (payload,) = stub.payloads()
    assert payload["temperature"] == 0.0
    assert "top_p" not in payload


# --- seeds -------------------------------------------------------------------------------------------


def test_seeds_differ_per_repeat_and_are_stable_across_runs(stub):
    contexts = [chat(("user", "q0")), chat(("user", "q1"))]
    answers = chat_model(stub).generate_until(requests_for(contexts, SAMPLED, repeats=4))
    first_run = [seed_of(p) for p in stub.payloads()]
    assert len(set(first_run)) == 8
    assert sorted(answers) == sorted(f"seed {s}" for s in first_run)
    expected = {sample_seed(7, "toy", d, r) for d in range(2) for r in range(4)}
    assert set(first_run) == expected

    stub.records.clear()
    chat_model(stub).generate_until(requests_for(contexts, SAMPLED, repeats=4))
    assert sorted(seed_of(p) for p in stub.payloads()) == sorted(first_run)


def test_base_seed_follows_lm_eval_seed(stub):
    """lm-eval's --seed seeds `random` right before building the model."""

    def built_after(seed):
        random.seed(seed)
        return ServedChat(base_url=stub.url("/v1/chat/completions")).base_seed

    assert built_after(5) == built_after(5)
    assert built_after(5) != built_after(6)


# --- stops ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("server, sent", [("vllm", 6), ("openai", 4)])
def test_every_stop_string_is_enforced(stub, server, sent):
    stops = [f"<S{i}>" for i in range(6)]
    stub.respond = lambda path, payload: "answer<S5>tail<S0>more"
    model = chat_model(stub, server=server)
    (answer,) = model.generate_until(requests_for([chat(("user", "q"))], {"until": stops}))
    assert answer == "answer"
    assert stub.payloads()[0]["stop"] == stops[:sent]


# --- assistant prefix ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "server, fields",
    [
        ("vllm", {"continue_final_message": True, "add_generation_prompt": False}),
        ("sglang", {"continue_final_message": True}),
    ],
)
def test_chat_continues_an_assistant_prefix(stub, server, fields):
    context = chat(("user", "2+2?"), ("assistant", "The answer is"))
    chat_model(stub, server=server).generate_until(requests_for([context], GREEDY))
    (payload,) = stub.payloads()
    assert payload["messages"][-1] == {"role": "assistant", "content": "The answer is"}
    assert {k: payload.get(k) for k in fields} == fields


def test_plain_chat_turn_asks_for_no_continuation(stub):
    chat_model(stub).generate_until(requests_for([chat(("user", "2+2?"))], GREEDY))
    assert "continue_final_message" not in stub.payloads()[0]


def test_server_that_cannot_continue_refuses_before_sending(stub):
    context = chat(("user", "2+2?"), ("assistant", "The answer is"))
    with pytest.raises(ValueError, match="cannot continue"):
        chat_model(stub, server="openai").generate_until(requests_for([context], GREEDY))
    assert stub.records == []


TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def test_completions_render_the_chat_template_and_continue_the_prefix(stub, tmp_path):
    template = tmp_path / "chat.jinja"
    template.write_text(TEMPLATE)
    model = ServedCompletions(
        base_url=stub.url("/v1/completions"), chat_template=str(template), seed=1
    )
    history = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "It is"}]
    prefixed = model.apply_chat_template(history, add_generation_prompt=False)
    fresh = model.apply_chat_template(history[:1], add_generation_prompt=True)
    assert prefixed == "<|user|>2+2?<|end|><|assistant|>It is"
    assert fresh == "<|user|>2+2?<|end|><|assistant|>"

    stub.respond = lambda path, payload: " 4.\nignored"
    (answer,) = model.generate_until(requests_for([prefixed], GREEDY))
    assert answer == " 4."
    assert stub.payloads()[0]["prompt"] == prefixed


def test_sglang_generate_payload(stub):
    model = ServedSGLang(base_url=stub.url("/generate"), seed=3)
    answers = model.generate_until(requests_for(["Q: 1+1\nA:"], SAMPLED, repeats=2))
    first, second = stub.payloads("/generate")
    assert first["text"] == "Q: 1+1\nA:"
    params = first["sampling_params"]
    assert (params["temperature"], params["max_new_tokens"], params["stop"]) == (0.8, 32, ["\n"])
    assert params["sampling_seed"] != second["sampling_params"]["sampling_seed"]
    assert sorted(answers) == sorted(f"seed {seed_of(p)}" for p in (first, second))


# --- concurrency and pacing --------------------------------------------------------------------


@pytest.mark.parametrize("num_concurrent", [1, 3])
def test_num_concurrent_is_honoured(stub, num_concurrent):
    stub.delay = 0.4
    model = chat_model(stub, num_concurrent=num_concurrent)
    contexts = [chat(("user", f"q{i}")) for i in range(6)]
    answers = model.generate_until(requests_for(contexts, GREEDY))
    assert len(stub.records) == 6
    assert stub.max_in_flight() == num_concurrent
    assert answers == [f"seed {sample_seed(7, 'toy', d, 0)}" for d in range(6)]


def test_request_interval_spaces_requests(stub):
    model = chat_model(stub, num_concurrent=4, request_interval=0.3)
    model.generate_until(requests_for([chat(("user", f"q{i}")) for i in range(4)], GREEDY))
    starts = sorted(r.started for r in stub.records)
    assert all(later - earlier >= 0.25 for earlier, later in pairwise(starts))


# --- failures --------------------------------------------------------------------------------------


def test_500s_are_retried_with_backoff(stub):
    stub.inject("500", times=2)
    (answer,) = chat_model(stub, retry_delay=0.2).generate_until(
        requests_for([chat(("user", "q"))], GREEDY)
    )
    assert answer == f"seed {sample_seed(7, 'toy', 0, 0)}"
    assert [r.fault for r in stub.records] == ["500", "500", None]
    first, second, third = (r.started for r in stub.records)
    assert second - first >= 0.18
    assert third - second >= 0.36  # the delay doubles


def test_timeouts_are_retried(stub):
    stub.inject("timeout", delay=2.0)
    model = chat_model(stub, timeout=0.5, retry_delay=0.05)
    (answer,) = model.generate_until(requests_for([chat(("user", "q"))], GREEDY))
    assert answer == f"seed {sample_seed(7, 'toy', 0, 0)}"
    assert [r.fault for r in stub.records] == ["timeout", None]


@pytest.mark.parametrize("kind", ["malformed", "missing"])
def test_malformed_responses_are_retried_then_fail_clearly(stub, kind):
    stub.inject(kind, times=1)
    model = chat_model(stub, retry_delay=0.01, max_retries=2)
    (answer,) = model.generate_until(requests_for([chat(("user", "q"))], GREEDY))
    assert answer.startswith("seed ")

    stub.records.clear()
    stub.inject(kind, times=None)
    with pytest.raises(GenerationFailed, match="not JSON" if kind == "malformed" else "lacks"):
        model.generate_until(requests_for([chat(("user", "q"))], GREEDY))
    assert len(stub.records) == 3


def test_a_permanent_failure_names_the_request_after_the_others_finish(stub):
    failing = sample_seed(7, "toy", 1, 2)
    stub.inject("500", when=lambda payload: payload["seed"] == failing, times=None)
    model = chat_model(stub, retry_delay=0.01, max_retries=1, num_concurrent=2)
    contexts = [chat(("user", f"q{i}")) for i in range(3)]
    with pytest.raises(GenerationFailed) as raised:
        model.generate_until(requests_for(contexts, SAMPLED, repeats=4))
    message = str(raised.value)
    assert "1 of 12 requests failed" in message
    assert f"task toy doc_id 1 repeat 2 (seed {failing}) at {stub.url('/v1/chat/completions')}" in message
    assert "HTTP 500" in message
    assert len(stub.records) == 11 + 2  # every other sample once, the failing one twice


def test_client_errors_are_not_retried(stub):
    stub.inject("400", times=None)
    with pytest.raises(GenerationFailed, match="HTTP 400"):
        chat_model(stub).generate_until(requests_for([chat(("user", "q"))], GREEDY))
    assert len(stub.records) == 1


def test_a_server_that_is_down_fails_clearly():
    url = closed_port_url()
    model = AnswerServer(base_url=url, seed=1, max_retries=1, retry_delay=0.01)
    with pytest.raises(GenerationFailed, match="cannot connect") as raised:
        model.generate_until(requests_for(["q"], GREEDY))
    assert f"doc_id 0 repeat 0 (seed {sample_seed(1, 'toy', 0, 0)}) at {url}" in str(raised.value)


# --- end to end through lm-eval --------------------------------------------------------------------

PROCESS_RESULTS = textwrap.dedent(
    """
    from evalpack.sampling_metrics import pass_at_k


    def process_results(doc, results):
        samples = results[0]
        if isinstance(samples, str):
            samples = [samples]
        correct = sum(sample.strip() == str(doc["answer"]) for sample in samples)
        ks = [k for k in (1, 2, 4) if k <= len(samples)]
        return {f"pass@{k}": pass_at_k(len(samples), correct, k) for k in ks}
    """
)
DOCS = [{"a": 1, "b": 1, "answer": 2}, {"a": 2, "b": 3, "answer": 5}, {"a": 4, "b": 4, "answer": 8}]


def write_task(folder, name, generation_kwargs, repeats):
    """A tiny generation task over three sums, scored pass@k (k = 1, 2, 4 up to `repeats`)
    over all its samples."""
    folder.mkdir(exist_ok=True)
    data = folder / "sums.jsonl"
    data.write_text("".join(json.dumps(doc) + "\n" for doc in DOCS))
    (folder / "utils.py").write_text(PROCESS_RESULTS)
    config = {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data)}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "What is {{a}}+{{b}}?",
        "doc_to_target": "{{answer}}",
        "generation_kwargs": generation_kwargs,
        "repeats": repeats,
        "filter_list": [{"name": "all", "filter": [{"function": "take_first_k", "k": repeats}]}],
        "metric_list": [
            {"metric": f"pass@{k}", "aggregation": "mean", "higher_is_better": True}
            for k in (1, 2, 4)
            if k <= repeats
        ],
    }
    text = yaml.safe_dump(config) + "process_results: !function utils.process_results\n"
    (folder / f"{name}.yaml").write_text(text)
    return folder


def evaluate(folder, model, model_args, **kwargs):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(folder), include_defaults=False)
    return simple_evaluate(
        model=model, model_args=model_args, tasks=[folder.name], task_manager=manager, **kwargs
    )


def math_server(path, payload):
    """Answers doc d correctly in its first d+1 samples: 1, 2 and 4 of 4 right."""
    a, b = (int(x) for x in payload["prompt"].removeprefix("What is ").rstrip("?").split("+"))
    doc_id, repeat = (int(x) for x in payload["sample_id"].split(":"))
    right = repeat < doc_id + 1 or doc_id == 2
    return str(a + b if right else a + b + 1) + "\nanything after the stop"


def test_answer_server_contract_end_to_end_with_pass_at_k(stub, tmp_path):
    stub.respond = math_server
    folder = write_task(tmp_path / "sums_sampled", "sums_sampled", SAMPLED, repeats=4)
    args = {"base_url": stub.url("/answer"), "num_concurrent": 2, "api_version": "v2"}
    results = evaluate(folder, "answer-server", args, random_seed=11)

    scores = results["results"]["sums_sampled"]
    assert scores["pass@1,all"] == pytest.approx((1 / 4 + 2 / 4 + 1) / 3)
    assert scores["pass@2,all"] == pytest.approx((1 / 2 + 5 / 6 + 1) / 3)
    assert scores["pass@4,all"] == pytest.approx(1.0)
    payloads = stub.payloads("/answer")
    assert sorted(p["sample_id"] for p in payloads) == sorted(
        f"{d}:{r}" for d in range(3) for r in range(4)
    )
    assert {p["dataset"] for p in payloads} == {"sums_sampled"}
    assert {p["api_version"] for p in payloads} == {"v2"}
    assert payloads[0]["prompt"].startswith("What is ")
    assert len({p["seed"] for p in payloads}) == 12

    stub.records.clear()
    evaluate(folder, "answer-server", args, random_seed=11)
    rerun = {p["sample_id"]: p["seed"] for p in stub.payloads()}
    assert rerun == {p["sample_id"]: p["seed"] for p in payloads}


def test_use_cache_resumes_only_the_failed_request(stub, tmp_path):
    folder = write_task(tmp_path / "sums_greedy", "sums_greedy", GREEDY, repeats=1)
    stub.respond = lambda path, payload: "5"
    stub.inject("500", when=lambda p: "2+3" in p["messages"][-1]["content"], times=None)
    args = {
        "base_url": stub.url("/v1/chat/completions"),
        "max_retries": 1,
        "retry_delay": 0.01,
        "seed": 4,
    }
    cache = str(tmp_path / "cache" / "run")
    with pytest.raises(GenerationFailed, match="doc_id 1 repeat 0"):
        evaluate(folder, "evalpack-chat", args, use_cache=cache, apply_chat_template=True)
    assert len(stub.records) == 2 + 2

    stub.clear_faults()
    stub.records.clear()
    results = evaluate(folder, "evalpack-chat", args, use_cache=cache, apply_chat_template=True)
    (payload,) = stub.payloads()
    assert "2+3" in payload["messages"][-1]["content"]
    assert results["results"]["sums_greedy"]["pass@1,all"] == pytest.approx(1 / 3)


def test_completion_log_resumes_a_sampled_run(stub, tmp_path):
    stub.respond = math_server
    folder = write_task(tmp_path / "sums_log", "sums_log", SAMPLED, repeats=4)
    stub.inject("500", when=lambda payload: payload["sample_id"] == "1:2", times=None)
    args = {
        "base_url": stub.url("/answer"),
        "completion_log": str(tmp_path / "completions.jsonl"),
        "max_retries": 0,
        "seed": 9,
    }
    with pytest.raises(GenerationFailed, match="doc_id 1 repeat 2"):
        evaluate(folder, "answer-server", args)
    assert len(stub.records) == 12

    stub.clear_faults()
    stub.records.clear()
    results = evaluate(folder, "answer-server", args)
    assert [p["sample_id"] for p in stub.payloads()] == ["1:2"]
    assert results["results"]["sums_log"]["pass@1,all"] == pytest.approx((1 / 4 + 2 / 4 + 1) / 3)


def test_use_cache_refuses_sampling_that_it_would_collapse(stub, tmp_path):
    kwargs = {"until": ["\n"], "temperature": 0.7}
    folder = write_task(tmp_path / "sums_t", "sums_t", kwargs, repeats=4)
    args = {"base_url": stub.url("/answer"), "seed": 1}
    with pytest.raises(ValueError, match="do_sample"):
        evaluate(folder, "answer-server", args, use_cache=str(tmp_path / "c"))
    assert stub.records == []
