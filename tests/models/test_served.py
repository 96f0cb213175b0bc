"""The served-model backends against a real HTTP server on 127.0.0.1 (tests/models/http_stub.py):
seeds, stops, greedy, prefixes, concurrency and the answer server; their failures:
test_served_failures.py."""

import itertools
import json
from collections import defaultdict

import pytest
from lm_eval import simple_evaluate

from evalpack.models.backends import ServedCompletions, ServedSGLang
from evalpack.models.chat_render import render_chat
from evalpack.models.served import ServedRequestError
from tests.conftest import task_manager
from tests.models.conftest import CHAT, PREFIXED, SAMPLED, chat_context, chat_model, repeated

# --- seeds -----------------------------------------------------------------------------------


def test_seeds_differ_per_repeat_and_doc_and_follow_the_base_seed(stub):
    def seeds(**args):
        stub.records.clear()
        lm = chat_model(stub, **args)
        lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED, docs=2, repeats=4))
        return [p["seed"] for p in stub.payloads()]

    first = seeds(seed=7)
    assert len(set(first)) == 8  # 2 docs x 4 repeats, all distinct
    assert seeds(seed=7) == first  # same base seed, same seeds, same order
    assert set(seeds(seed=8)).isdisjoint(first)


def _aime_file(tmp_path, rows=(("What is 6*7?", "42"), ("What is 2+3?", "5"))):
    path = tmp_path / "problems.jsonl"
    path.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in rows))
    return str(path)


def _evaluate(model, model_args, data_file, repeats=4, **kwargs):
    metadata = {"data_file": data_file, "repeats": repeats}
    return simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=["aime24_reasoning"],
        task_manager=task_manager(metadata),
        metadata=metadata,
        **kwargs,
    )


def test_seeds_derive_from_lm_evals_seed_and_repeats_stay_distinct(stub, tmp_path):
    data = _aime_file(tmp_path)
    args = {"base_url": stub.url("/v1/chat/completions"), "model": "m"}

    def seeds_by_prompt(random_seed):
        stub.records.clear()
        _evaluate("evalpack-chat", args, data, apply_chat_template=True, random_seed=random_seed)
        by_prompt = defaultdict(list)
        for payload in stub.payloads():
            by_prompt[payload["messages"][-1]["content"]].append(payload["seed"])
        return {prompt: sorted(seeds) for prompt, seeds in by_prompt.items()}

    first = seeds_by_prompt(1)
    assert len(first) == 2 and all(len(set(s)) == 4 for s in first.values())
    assert seeds_by_prompt(1) == first
    assert seeds_by_prompt(2) != first


# --- stops, greedy, prefixes -----------------------------------------------------------------

STOPS = ["<a>", "<b>", "<c>", "<d>", "<e>", "<f>"]


@pytest.mark.parametrize("server,sent", [("vllm", STOPS), ("openai", STOPS[:4])])
def test_every_stop_string_is_enforced_client_side(stub, server, sent):
    stub.reply = lambda payload: "kept text<f>cut off<a>"
    lm = chat_model(stub, server=server)
    answers = lm.generate_until(repeated(chat_context(lm, CHAT), {**SAMPLED, "until": STOPS}))
    assert answers == ["kept text"]
    assert stub.payloads()[0]["stop"] == sent


def test_greedy_is_temperature_zero_without_top_p(stub):
    lm = chat_model(stub)
    context = chat_context(lm, CHAT)
    greedy = {"until": [], "do_sample": False, "temperature": 0.7, "top_p": 0.9, "top_k": 5}
    lm.generate_until(repeated(context, greedy) + repeated(context, SAMPLED))
    greedy_payload, sampled_payload = sorted(stub.payloads(), key=lambda p: p["temperature"])
    assert greedy_payload["temperature"] == 0
    assert not {"top_p", "top_k", "do_sample"} & greedy_payload.keys()
    assert (sampled_payload["temperature"], sampled_payload["top_p"]) == (0.6, 0.95)
    assert sampled_payload["max_tokens"] == 64


@pytest.mark.parametrize(
    "server,fields",
    [
        ("vllm", {"continue_final_message": True, "add_generation_prompt": False}),
        ("sglang", {"continue_final_message": True}),
    ],
)
def test_assistant_prefix_is_continued(stub, server, fields):
    lm = chat_model(stub, server=server)
    lm.generate_until(repeated(chat_context(lm, PREFIXED, add_generation_prompt=False), SAMPLED))
    payload = stub.payloads()[0]
    assert payload["messages"] == PREFIXED
    assert {key: payload.get(key) for key in fields} == fields
    plain = chat_model(stub, server=server)
    plain.generate_until(repeated(chat_context(plain, CHAT), SAMPLED))
    assert "continue_final_message" not in stub.payloads()[1]


def test_prefix_refused_where_the_server_cannot_continue_it(stub):
    lm = chat_model(stub, server="openai")
    with pytest.raises(ValueError, match="assistant prefix.*server=openai cannot continue"):
        lm.generate_until(repeated(chat_context(lm, PREFIXED, False), SAMPLED))
    assert stub.records == []


TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def test_completions_render_the_chat_template_locally_and_continue_a_prefix(stub, tmp_path):
    template = tmp_path / "chat.jinja"
    template.write_text(TEMPLATE)
    lm = ServedCompletions(
        base_url=stub.url("/v1/completions"),
        model="m",
        tokenizer_backend="none",
        chat_template_file=str(template),
        seed=1,
    )
    lm.generate_until(
        repeated(chat_context(lm, CHAT), SAMPLED)
        + repeated(chat_context(lm, PREFIXED, False), SAMPLED)
    )
    prompts = sorted(p["prompt"] for p in stub.payloads())
    assert prompts == [
        "<|user|>What is 6*7?<|end|><|assistant|>",
        "<|user|>What is 6*7?<|end|><|assistant|>The answer is",
    ]


def test_completions_without_a_template_refuse_chat_prompts(stub):
    lm = ServedCompletions(
        base_url=stub.url("/v1/completions"), model="m", tokenizer_backend="none"
    )
    with pytest.raises(ValueError, match="chat_template_file"):
        lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED))


def test_sglang_native_generate(stub):
    stub.reply = lambda payload: "42 is it\nQuestion: more"
    lm = ServedSGLang(base_url=stub.url("/generate"), model="m", tokenizer_backend="none", seed=3)
    answers = lm.generate_until(
        repeated("Q: 6*7?\nA:", {**SAMPLED, "until": ["\nQuestion:"]}, repeats=2)
    )
    assert answers == ["42 is it", "42 is it"]
    first, second = stub.payloads("/generate")
    assert first["text"] == "Q: 6*7?\nA:"
    params = first["sampling_params"]
    assert params["max_new_tokens"] == 64 and params["temperature"] == 0.6
    assert params["stop"] == ["\nQuestion:"]
    assert first["sampling_params"]["sampling_seed"] != second["sampling_params"]["sampling_seed"]


# --- concurrency and pacing ------------------------------------------------------------------


@pytest.mark.parametrize("num_concurrent", [1, 3])
def test_concurrency_is_honoured(stub, num_concurrent):
    stub.gather = num_concurrent  # the first requests are held until that many are in flight
    lm = chat_model(stub, num_concurrent=num_concurrent)
    answers = lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED, docs=3, repeats=2))
    assert len(set(answers)) == 6  # distinct seeds, distinct replies, all in place
    assert stub.max_in_flight == num_concurrent


def test_request_interval_spaces_requests(stub):
    lm = chat_model(stub, num_concurrent=4, request_interval=0.5)
    lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED, docs=4))
    starts = sorted(r["start"] for r in stub.records)
    # unpaced, the four would start within milliseconds; paced, 0.5 s apart, whatever delay a
    # loaded machine adds to one request's way to the server (up to a quarter of a second)
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 0.25


# --- answer server, end to end ---------------------------------------------------------------

ANSWERS = {  # sample_id -> answer; doc 0's gold is 42, doc 1's is 5
    "aime24_reasoning/0/0": "\\boxed{41}",
    "aime24_reasoning/0/1": "\\boxed{42}",
    "aime24_reasoning/0/2": "\\boxed{42}",
    "aime24_reasoning/0/3": "\\boxed{7}",
    "aime24_reasoning/1/0": "\\boxed{6}",
    "aime24_reasoning/1/1": "\\boxed{6}",
    "aime24_reasoning/1/2": "\\boxed{6}",
    "aime24_reasoning/1/3": "\\boxed{6}",
}


def test_answer_server_contract_end_to_end_with_pass_at_k(stub, tmp_path):
    stub.answer_field = "completion"
    stub.reply = lambda payload: ANSWERS[payload["sample_id"]]
    args = f"base_url={stub.url('/answer')},answer_field=completion,team=evalpack,n_gpus=2"
    results = _evaluate("answer-server", args, _aime_file(tmp_path))["results"]["aime24_reasoning"]
    payloads = stub.payloads("/answer")
    assert sorted(p["sample_id"] for p in payloads) == sorted(ANSWERS)
    first = next(p for p in payloads if p["sample_id"] == "aime24_reasoning/0/0")
    assert first["dataset"] == "aime24_reasoning" and "What is 6*7?" in first["prompt"]
    assert (first["team"], first["n_gpus"]) == ("evalpack", 2)
    assert set(first) == {"dataset", "prompt", "sample_id", "team", "n_gpus"}
    # doc 0: 2 of 4 right; doc 1: none right
    assert results["avg@4,samples"] == 0.25
    assert results["pass@4,samples"] == 0.5
    assert results["pass@2,samples"] == pytest.approx((1 - 1 / 6) / 2)  # 1 - C(2,2)/C(4,2)


def test_failed_run_keeps_completions_and_a_rerun_regenerates_only_the_failure(stub, tmp_path):
    stub.reply = lambda payload: ANSWERS[payload["sample_id"]]
    stub.fault_for = lambda payload: (
        "500" if payload["sample_id"] == "aime24_reasoning/1/2" else None
    )
    data, cache = _aime_file(tmp_path), str(tmp_path / "cache")
    args = f"base_url={stub.url('/answer')},max_retries=1,retry_delay=0.05"
    with pytest.raises(ServedRequestError, match="task aime24_reasoning doc 1 repeat 2"):
        _evaluate("answer-server", args, data, use_cache=cache)
    assert len(stub.records) == 7 + 2

    stub.records.clear()
    stub.fault_for = lambda payload: None
    results = _evaluate("answer-server", args, data, use_cache=cache)["results"]["aime24_reasoning"]
    assert [p["sample_id"] for p in stub.payloads("/answer")] == ["aime24_reasoning/1/2"]
    assert results["avg@4,samples"] == 0.25

    stub.records.clear()
    _evaluate("answer-server", args, data, use_cache=cache)
    assert stub.records == []  # everything now comes from the cache


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        # the template keeps the content as is: the fence opener's newline stays
        (TEMPLATE, "<|user|>Q<|end|><|assistant|>```python\n"),
        # a template that trims message content: the prefix ends where the template put it
        (
            TEMPLATE.replace("m['content']", "m['content'] | trim"),
            "<|user|>Q<|end|><|assistant|>```python",
        ),
    ],
)
def test_a_prefix_keeps_its_trailing_newline_where_the_template_does(template, expected):
    messages = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "```python\n"}]
    assert render_chat(template, messages) == expected
