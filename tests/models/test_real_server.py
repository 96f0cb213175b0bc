"""The served backends against a real OpenAI-compatible server: `transformers serve` (from
`transformers[serving]`, CPU) on 127.0.0.1, serving a tiny random-weight Llama built here with
its own tokenizer and chat template (`do_sample` on in its generation config, so temperature and
seed matter). Skipped, with the install line, where the server package is missing.

`transformers serve` takes `stop` but fails on `"stop": []`, refuses fields it does not know
with 422, lists no context length (so `max_model_len=` is given), and ignores `echo`/`logprobs`
(no log-likelihood through it)."""

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from lm_eval import simple_evaluate

from tests.conftest import DATA_DIR, requires_shared, task_manager

NEEDED = ("torch", "transformers", "fastapi", "uvicorn")
missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
pytestmark = pytest.mark.skipif(
    bool(missing),
    reason=f"{', '.join(missing)} not installed: a real OpenAI-compatible server "
    "needs `pip install torch==2.13.0 'evalpack[serve-test]'` (make test installs it)",
)

TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
CONTEXT = 24  # the tiny model's context as the backends are told (max_model_len=)


def build_tiny_model(folder: Path, seed: int = 0, positions: int = 512) -> None:
    """A 1-layer Llama with random weights (from `seed`) and a byte-level BPE tokenizer trained
    on a line of text: small enough to build and serve on CPU in seconds."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        GenerationConfig,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    specials = ["<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(["What is 6*7? The answer is 42. def f(x): return x + 1"], trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    tokenizer.chat_template = TEMPLATE
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=positions,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        do_sample=True, temperature=1.0, top_k=0, bos_token_id=1, eos_token_id=2
    )
    model.save_pretrained(folder)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`transformers serve` on 127.0.0.1 with the tiny model; stopped by its pid."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    build_tiny_model(folder)
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "transformers"),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        str(folder),
    ]
    log = open(folder / "serve.log", "w")  # noqa: SIM115  (closed at teardown)
    process = subprocess.Popen(
        command,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    root = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(root, process, folder / "serve.log")
        yield {"root": root, "model": str(folder)}
    finally:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def _wait_healthy(root: str, process: subprocess.Popen, log: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"transformers serve exited: {log.read_text()[-2000:]}")
        try:
            if requests.get(f"{root}/health", timeout=1).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.3)
    pytest.fail(f"transformers serve not up after {seconds} s: {log.read_text()[-2000:]}")


@pytest.fixture
def sent(monkeypatch):
    """Every payload the served backends post, as sent."""
    from evalpack.models.served import ServedGeneration

    payloads = []
    post = ServedGeneration._post

    def recording(self, payload, *args):
        payloads.append(payload)
        return post(self, payload, *args)

    monkeypatch.setattr(ServedGeneration, "_post", recording)
    return payloads


def evaluate(model, model_args, tasks, metadata, **kwargs):
    from evalpack.models.registry import register

    register()
    return simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=tasks,
        apply_chat_template=True,
        fewshot_as_multiturn=True,
        task_manager=task_manager(metadata),
        metadata=metadata,
        log_samples=True,
        **kwargs,
    )


def test_chat_reasoning_task_with_repeats_gets_distinct_samples(server, sent, tmp_path, caplog):
    data = tmp_path / "problems.jsonl"
    data.write_text(
        "".join(
            json.dumps({"question": q, "answer": a}) + "\n"
            for q, a in (("What is 6*7?", "42"), ("What is 2+3?", "5"))
        )
    )
    args = {
        "base_url": f"{server['root']}/v1/chat/completions",
        "model": server["model"],
        "max_model_len": CONTEXT,
        "seed": 3,
    }
    out = evaluate(
        "evalpack-chat", args, ["aime24_reasoning"], {"data_file": str(data), "repeats": 4}
    )
    assert len(sent) == 8
    assert all("stop" not in p for p in sent)  # aime24_reasoning has no stop strings: none sent
    assert {p["max_tokens"] for p in sent} == {CONTEXT}  # 32768 capped by the context
    assert len({p["seed"] for p in sent}) == 8
    assert sum(f"capped at {CONTEXT}" in r.getMessage() for r in caplog.records) == 1
    for sample in out["samples"]["aime24_reasoning"]:
        answers = sample["resps"][0]  # the one Instance's four repeats
        assert len(answers) == 4 and all(answers)
        assert len(set(answers)) == 4  # distinct seeds, distinct samples
    assert "avg@4,samples" in out["results"]["aime24_reasoning"]


HUMANEVAL = [
    {
        "task_id": f"HumanEval/{i}",
        "prompt": f'def add_{i}(x):\n    """x + {i}"""\n',
        "canonical_solution": f"    return x + {i}\n",
        "entry_point": f"add_{i}",
        "test": f"def check(candidate):\n    assert candidate(1) == {1 + i}\n",
    }
    for i in range(2)
]


@pytest.fixture
def humaneval_mirror(tmp_path, monkeypatch):
    """Two HumanEval-shaped problems in the mirror layout `evalpack.core.data` reads."""
    folder = tmp_path / "mirror" / "openai__openai_humaneval" / "default"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in HUMANEVAL))
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(tmp_path / "mirror"))


def test_completions_continue_humaneval_prefix_with_the_local_template(
    server, sent, humaneval_mirror
):
    args = {
        "base_url": f"{server['root']}/v1/completions",
        "model": server["model"],
        "tokenizer": server["model"],
        "max_model_len": CONTEXT + 60,
        "seed": 5,
    }
    out = evaluate(
        "evalpack-completions",
        args,
        ["codex_humaneval_tulu"],
        {"repeats": 2},
        confirm_run_unsafe_code=True,
    )
    assert len(sent) == 4 and len({p["seed"] for p in sent}) == 4
    for payload in sent:
        # the chat template rendered here; the assistant's fence opener continued, not answered
        assert payload["prompt"].startswith("<|user|>def add_")
        assert payload["prompt"].endswith(
            "<|end|><|assistant|>Here is the completed function:\n\n```python\n"
        )
        assert "\nclass" in payload["stop"]
        assert 0 < payload["max_tokens"] < 60  # the context left after the counted prompt
    assert "pass_at_1,execution" in out["results"]["codex_humaneval_tulu"]


def test_a_refused_prefix_field_names_the_backend_to_use(server, humaneval_mirror):
    from evalpack.models.served import ServedRequestError

    args = {
        "base_url": f"{server['root']}/v1/chat/completions",
        "model": server["model"],
        "max_model_len": CONTEXT,
        "retry_delay": 0.05,
    }
    with pytest.raises(ServedRequestError) as error:
        evaluate(
            "evalpack-chat",
            args,
            ["codex_humaneval_tulu"],
            {"repeats": 1},
            confirm_run_unsafe_code=True,
        )
    text = str(error.value)
    assert "HTTP 422" in text and "1 attempt: a client error, not retried" in text
    assert "refused continue_final_message" in text and "use evalpack-completions" in text


def test_samples_differ_by_seed_and_repeat_on_the_real_server(server):
    """The same prompt, four repeats of two docs: the server's samples follow the seeds."""
    from lm_eval.api.instance import Instance

    from evalpack.models.backends import ServedChat

    lm = ServedChat(
        base_url=f"{server['root']}/v1/chat/completions",
        model=server["model"],
        max_model_len=16,
        seed=11,
    )
    context = lm.apply_chat_template([{"role": "user", "content": "What is 6*7?"}])
    kwargs = {"until": [], "do_sample": True, "temperature": 1.0, "max_gen_toks": 16}
    requests_ = []
    for doc_id in range(2):
        instance = Instance("generate_until", {}, (context, kwargs), 0, ("t", doc_id, 4))
        requests_ += [instance] * 4
    first = lm.generate_until(requests_)
    again = ServedChat(base_url=lm.url, model=server["model"], max_model_len=16, seed=11)
    assert again.generate_until(requests_) == first  # same seeds, same samples
    assert len(set(first)) == 8  # every (doc, repeat) its own seed and sample


@pytest.mark.parametrize("tokenizer", [{"tokenizer_backend": "none"}, {"tokenizer": None}])
def test_log_likelihood_fails_clearly_where_the_server_returns_no_prompt_logprobs(
    server, tokenizer
):
    """transformers serve takes neither token-id prompts nor `add_special_tokens` and ignores
    `echo`/`logprobs`: multiple-choice tasks stop with the server's refusal, never a guess."""
    from lm_eval.api.instance import Instance

    from evalpack.models.backends import ServedCompletions
    from evalpack.models.served import ServedRequestError

    args = {key: value or server["model"] for key, value in tokenizer.items()}
    lm = ServedCompletions(
        base_url=f"{server['root']}/v1/completions", model=server["model"], max_retries=0, **args
    )
    request = Instance("loglikelihood", {}, ("What is 6*7? Answer:", " 42"), 0, ("t", 0, 1))
    with pytest.raises(ServedRequestError, match=r"HTTP 4\d\d"):
        lm.loglikelihood([request])


@requires_shared
def test_the_leaderboard_plan_asks_the_real_server_what_it_can_do(server, tmp_path, monkeypatch):
    """`transformers serve` refuses `continue_final_message` and answers no echoed prompt
    log-probabilities: the plan finds both by asking it, before any pair starts."""
    from evalpack.leaderboard import plan

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for name in ("openai__gsm8k", "cais__mmlu", "EleutherAI__hendrycks_math"):
        (mirror / name).symlink_to(DATA_DIR / name)
    monkeypatch.setenv("EVALPACK_DATA_DIR", str(mirror))
    checkpoints = [
        {
            "name": "chat",
            "model": "evalpack-chat",
            "model_args": {
                "base_url": f"{server['root']}/v1/chat/completions",
                "model": server["model"],
            },
        },
        {
            "name": "completions",
            "model": "evalpack-completions",
            "model_args": {
                "base_url": f"{server['root']}/v1/completions",
                "model": server["model"],
                "tokenizer_backend": "none",
            },
        },
    ]
    entries = [
        {"task": "gsm8k_tulu", "chat": True},
        {"task": "mmlu_mc_tulu", "chat": False},
        {"task": "minerva_math_tulu", "chat": True},
    ]
    pairs = plan.make_plan(checkpoints, entries, tmp_path / "board", [])["pairs"]
    assert pairs["chat"]["minerva_math_tulu"] == "run"
    assert "does not continue an assistant prefix" in pairs["chat"]["gsm8k_tulu"]
    assert "HTTP 422" in pairs["chat"]["gsm8k_tulu"]
    assert "answers generation requests only" in pairs["chat"]["mmlu_mc_tulu"]
    assert pairs["completions"]["gsm8k_tulu"] == "run"  # the prefix is rendered here
    refused = pairs["completions"]["mmlu_mc_tulu"]  # the reason was only in lm_eval.log before
    assert refused.startswith("its server cannot score log-likelihoods: ")
    assert "HTTP 422" in refused and "add_special_tokens" in refused
