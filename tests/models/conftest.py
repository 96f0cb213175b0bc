"""Helpers of the served-model tests (test_served.py, test_served_failures.py): the HTTP stub on
127.0.0.1 (http_stub.py), chat requests as lm-eval lists them, and a chat model pointed at it.
A module may define its own `stub` (test_loglikelihood.py's echoes)."""

import pytest
from lm_eval.api.instance import Instance

from evalpack.models.backends import ServedChat
from tests.models.http_stub import Stub

CHAT = [{"role": "user", "content": "What is 6*7?"}]
SAMPLED = {"until": [], "do_sample": True, "temperature": 0.6, "top_p": 0.95, "max_gen_toks": 64}
PREFIXED = [*CHAT, {"role": "assistant", "content": "The answer is"}]  # a prefix to continue


@pytest.fixture
def stub():
    server = Stub().start()
    yield server
    server.stop()


def repeated(context, gen_kwargs, docs=1, repeats=1, task="t"):
    """Requests as lm-eval's evaluator lists them: one Instance per doc, listed once per repeat."""
    out = []
    for doc_id in range(docs):
        instance = Instance("generate_until", {}, (context, gen_kwargs), 0, (task, doc_id, repeats))
        out += [instance] * repeats
    return out


def chat_context(lm, messages, add_generation_prompt=True):
    return lm.apply_chat_template(messages, add_generation_prompt=add_generation_prompt)


def chat_model(stub, **args):
    return ServedChat(base_url=stub.url("/v1/chat/completions"), model="m", **args)


def fast(**args):
    return {"retry_delay": 0.05, "timeout": 5, **args}
