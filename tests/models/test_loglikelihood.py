"""Log-likelihood requests on the pack's models: `replay` from recorded values (and from a saved
sample log, as `evalpack rescore` does), and `evalpack-completions` against a stub server that
echoes prompt log-probabilities as vLLM does."""

import json

import pytest
from lm_eval import simple_evaluate
from lm_eval.api.instance import Instance
from lm_eval.loggers import EvaluationTracker

from evalpack.hooks.truthfulqa import olmes_choices
from evalpack.models.backends import ServedChat, ServedCompletions
from evalpack.models.loglikelihood import AlignmentError, split_pair, text_span
from evalpack.models.replay import ReplayLM, index_loglikelihoods, loglikelihood_rows
from tests.conftest import DATA_DIR, read_jsonl, replay_eval, requires_shared, task_manager
from tests.models.echo_stub import EchoStub, toy_greedy, toy_logprob, toy_tokens

TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def ll_request(context, continuation, doc=None, task="t", doc_id=0, idx=0):
    return Instance("loglikelihood", doc or {}, (context, continuation), idx, (task, doc_id, 1))


# --- replay -------------------------------------------------------------------------------------


def test_replay_rows_are_indexed_by_doc_and_continuation():
    rows = [
        {"key": "d#0", "continuation": "A", "loglikelihood": -1.5, "is_greedy": True},
        {"key": "d#0", "continuation": "B", "loglikelihood": -0.25},
        {"task": "t", "doc_id": 3, "continuation": "B", "loglikelihood": -7},
        {"key": "d#0", "completion": "a generation row: not a score"},
    ]
    assert index_loglikelihoods(rows, "f.jsonl") == {
        ("d#0", "A"): (-1.5, True),
        ("d#0", "B"): (-0.25, False),
        ("t#3", "B"): (-7.0, False),
    }


def test_replay_loglikelihood_end_to_end_through_a_file(tmp_path):
    path = tmp_path / "ll.jsonl"
    rows = [
        {"key": "d#0", "continuation": "A", "loglikelihood": -1.5, "is_greedy": True},
        {"key": "d#0", "continuation": "B", "loglikelihood": -0.25},
        {"task": "t", "doc_id": 3, "continuation": "B", "loglikelihood": -7},
        {"key": "d#0", "completion": "a generation row, kept apart"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lm = ReplayLM(completions=str(path))
    requests = [
        ll_request("ctx", "B", {"doc_key": "d#0"}),
        ll_request("ctx", "A", {"doc_key": "d#0"}),
        ll_request("ctx", "B", {"doc_key": "other"}, doc_id=3),
    ]
    assert lm.loglikelihood(requests) == [(-0.25, False), (-1.5, True), (-7.0, False)]
    with pytest.raises(KeyError, match=r"task t doc 0 \(key d#0\) continuation 'C'"):
        lm.loglikelihood([ll_request("ctx", "C", {"doc_key": "d#0"})])


@pytest.mark.parametrize(
    "row, message",
    [
        (
            {"key": "d", "continuation": "A", "loglikelihood": "x"},
            "line 1: 'loglikelihood' must be",
        ),
        ({"key": "d", "loglikelihood": -1.0}, "line 1: missing string field 'continuation'"),
        ({"continuation": "A", "loglikelihood": -1.0}, "line 1: needs 'key' or both"),
    ],
)
def test_a_bad_replay_row_names_its_line(row, message):
    with pytest.raises(ValueError, match=message):
        index_loglikelihoods([row], "f.jsonl")


def test_from_doc_refuses_loglikelihood_requests():
    with pytest.raises(ValueError, match="log-likelihood requests need recorded values"):
        ReplayLM(from_doc="target").loglikelihood([ll_request("c", "A")])


def test_sample_log_entries_become_replay_rows():
    sample = {
        "doc_id": 4,
        "arguments": {
            "gen_args_0": {"arg_0": "ctx", "arg_1": "A"},
            "gen_args_1": {"arg_0": "ctx", "arg_1": "B"},
        },
        "resps": [[["-1.25", "True"]], [["-3.0", "False"]]],
    }
    assert loglikelihood_rows(sample, "mmlu_mc_tulu_anatomy") == [
        {
            "task": "mmlu_mc_tulu_anatomy",
            "doc_id": 4,
            "continuation": "A",
            "loglikelihood": -1.25,
            "is_greedy": True,
        },
        {
            "task": "mmlu_mc_tulu_anatomy",
            "doc_id": 4,
            "continuation": "B",
            "loglikelihood": -3.0,
            "is_greedy": False,
        },
    ]
    generation = {
        "doc_id": 0,
        "arguments": {"gen_args_0": {"arg_0": "p", "arg_1": {}}},
        "resps": [["text"]],
    }
    assert loglikelihood_rows(generation, "t") == []


@requires_shared
def test_a_saved_run_rescores_to_the_same_numbers(mirror, tmp_path):
    """A run's sample log, turned into replay rows, reproduces every metric (what `evalpack
    rescore` does for these tasks)."""
    rows = []
    for doc_id, doc in enumerate(read_jsonl(DATA_DIR / "cais__mmlu/anatomy/test.jsonl")[:5]):
        rows += [
            {
                "task": "mmlu_mc_tulu_anatomy",
                "doc_id": doc_id,
                "continuation": c,
                "loglikelihood": -1.0 - ((doc_id + i + doc["answer"]) % 4) / 3,
            }
            for i, c in enumerate("ABCD")
        ]
    path = tmp_path / "first.jsonl"
    tasks = ["mmlu_mc_tulu_anatomy", "truthfulqa_tulu"]
    tq = read_jsonl(DATA_DIR / "truthfulqa__truthful_qa/multiple_choice/validation.jsonl")[:5]
    for doc_id, doc in enumerate(tq):
        rows += [
            {
                "task": "truthfulqa_tulu",
                "doc_id": doc_id,
                "continuation": c,
                "loglikelihood": -2.0 - ((i * 7 + doc_id) % 5) / 2,
            }
            for i, c in enumerate(olmes_choices(doc)["choices"])
        ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = replay_eval(tasks, {"completions": str(path)}, limit=5, log_samples=True)
    tracker = EvaluationTracker(output_path=str(tmp_path / "run"))
    tracker.save_results_aggregated(results=first, samples=first["samples"])
    again = []
    for task in tasks:  # the sample logs as lm-eval saves them (--log_samples)
        tracker.save_results_samples(task_name=task, samples=first["samples"][task])
        (saved,) = (tmp_path / "run").rglob(f"samples_{task}_*.jsonl")
        again += [row for sample in read_jsonl(saved) for row in loglikelihood_rows(sample, task)]
    assert len(again) == 20 + sum(len(olmes_choices(doc)["choices"]) for doc in tq)
    (tmp_path / "again.jsonl").write_text("".join(json.dumps(r) + "\n" for r in again))
    second = replay_eval(tasks, {"completions": str(tmp_path / "again.jsonl")}, limit=5)
    for task in tasks:
        assert first["results"][task] == second["results"][task]
    assert 0 < first["results"]["truthfulqa_tulu"]["mc2,none"] < 1


# --- evalpack-completions -----------------------------------------------------------------------


@pytest.fixture
def stub():
    server = EchoStub().start()
    yield server
    server.stop()


def completions_model(stub, tmp_path, **args):
    template = tmp_path / "tmpl.jinja"
    template.write_text(TEMPLATE)
    return ServedCompletions(
        base_url=stub.url("/v1/completions"),
        model="m",
        tokenizer_backend="none",
        chat_template_file=str(template),
        retry_delay=0.01,
        timeout=5,
        **args,
    )


def toy_score(text):
    tokens = toy_tokens(text)
    return sum(toy_logprob(t) for t in tokens), all(toy_greedy(t) for t in tokens)


def test_the_context_trailing_whitespace_moves_to_the_continuation():
    assert split_pair("<|assistant|>\n", "A") == ("<|assistant|>", "\nA")
    assert split_pair("Answer:", " A") == ("Answer:", " A")


def test_one_http_request_per_shared_context(stub, tmp_path):
    lm = completions_model(stub, tmp_path)
    chat = lm.apply_chat_template([{"role": "user", "content": "Q?"}])
    requests = [ll_request(chat, c, doc_id=0, idx=i) for i, c in enumerate("ABCD")]
    requests.append(ll_request("Plain: ", "yes please", doc_id=1))
    results = lm.loglikelihood(requests)
    assert results[:4] == [toy_score("\n" + c) for c in "ABCD"]
    assert results[4] == toy_score(" yes please")
    payloads = stub.payloads("/v1/completions")
    assert len(payloads) == 2
    first = next(p for p in payloads if len(p["prompt"]) == 4)
    assert first["prompt"][0] == "<|user|>\nQ?\n<|assistant|>\nA"
    assert first["echo"] is True and first["logprobs"] == 1 and first["max_tokens"] == 1
    assert first["add_special_tokens"] is False


def test_with_a_tokenizer_the_prompt_goes_as_token_ids(stub, tmp_path):
    class CharTokenizer:
        def encode(self, text):
            return [ord(c) for c in text]

    lm = completions_model(stub, tmp_path)
    lm.tokenizer, lm.tokenizer_backend = CharTokenizer(), "tiktoken"  # any .encode() tokenizer
    (score,) = lm.loglikelihood([ll_request("Q: x\nA:\n", "Yes")])
    assert score == (sum(toy_logprob(c) for c in "\nYes"), False)  # "Y" has a better rival
    (payload,) = stub.payloads("/v1/completions")
    assert payload["prompt"] == [[ord(c) for c in "Q: x\nA:\nYes"]]


def test_tokens_that_do_not_spell_the_continuation_are_an_error(tmp_path):
    server = EchoStub(byte_level=True).start()
    try:
        lm = completions_model(server, tmp_path, max_retries=0)
        with pytest.raises(RuntimeError, match="give the backend a tokenizer"):
            lm.loglikelihood([ll_request("Answer:", " two words")])
    finally:
        server.stop()
    with pytest.raises(AlignmentError):  # a token straddling the context boundary
        text_span({"tokens": ["Ans", "wer", "<gen>"]}, "er")


def test_a_failed_request_is_retried(stub, tmp_path):
    stub.faults = ["500"]
    lm = completions_model(stub, tmp_path)
    assert lm.loglikelihood([ll_request("Answer:", " B")]) == [toy_score(" B")]
    assert len(stub.payloads("/v1/completions")) == 2


@requires_shared
def test_mmlu_end_to_end_on_the_completions_backend(mirror, stub, tmp_path):
    template = tmp_path / "tmpl.jinja"
    template.write_text(TEMPLATE)
    out = simple_evaluate(
        model="evalpack-completions",
        model_args={
            "base_url": stub.url("/v1/completions"),
            "model": "m",
            "tokenizer_backend": "none",
            "chat_template_file": str(template),
        },
        tasks=["mmlu_mc_tulu_anatomy"],
        limit=6,
        apply_chat_template=True,
        fewshot_as_multiturn=True,
        task_manager=task_manager(),
    )
    docs = read_jsonl(DATA_DIR / "cais__mmlu/anatomy/test.jsonl")[:6]
    scores = [toy_score("\n" + c)[0] for c in "ABCD"]
    predicted = scores.index(max(scores))
    expected = sum(doc["answer"] == predicted for doc in docs) / len(docs)
    assert out["results"]["mmlu_mc_tulu_anatomy"]["acc_raw,none"] == expected
    assert len(stub.payloads("/v1/completions")) == 6  # one request per doc, 4 prompts each


def test_a_chat_only_backend_refuses_with_one_clear_error():
    lm = ServedChat(base_url="http://127.0.0.1:9/v1/chat/completions", model="m")
    with pytest.raises(NotImplementedError, match="use --model evalpack-completions"):
        lm.loglikelihood([ll_request("[]", "A", task="mmlu_mc_tulu_anatomy")])
