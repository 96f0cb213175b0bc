"""OLMES's "do not cut off" budgets (131,072 new tokens, 999,999 for code) as the served
backends send them: what the model's context leaves, 32,768 where the context is not known,
said once per run; an ordinary budget untouched. Against a real HTTP server on 127.0.0.1."""

import logging

import pytest

from evalpack.models import budget
from tests.models.conftest import CHAT, SAMPLED, chat_context, chat_model, repeated


def sent_max_tokens(stub):
    return sorted(p["max_tokens"] for p in stub.payloads())


@pytest.mark.parametrize("asked", [131072, 999999])
def test_an_unbounded_budget_with_no_known_context_sends_32768_once_said(stub, caplog, asked):
    caplog.set_level(logging.WARNING)
    lm = chat_model(stub)  # the stub lists no max_model_len; none given
    answers = lm.generate_until(
        repeated(chat_context(lm, CHAT), {**SAMPLED, "max_gen_toks": asked}, docs=3)
    )
    assert all(answer.startswith("reply to") for answer in answers)
    assert sent_max_tokens(stub) == [32768] * 3
    said = [r.getMessage() for r in caplog.records if "capped at 32768" in r.getMessage()]
    assert len(said) == 1 and f"up to {asked} new tokens" in said[0]
    assert "not to be cut off" in said[0] and "max_model_len=" in said[0]


def test_an_unbounded_budget_gets_what_the_reported_context_leaves(stub, caplog):
    caplog.set_level(logging.WARNING)
    stub.models = {"data": [{"id": "m", "max_model_len": 65536}]}  # as vLLM lists it
    lm = chat_model(stub)
    lm.generate_until(repeated(chat_context(lm, CHAT), {**SAMPLED, "max_gen_toks": 999999}, docs=2))
    assert sent_max_tokens(stub) == [65536, 65536]
    said = [r.getMessage() for r in caplog.records if "capped at" in r.getMessage()]
    assert len(said) == 1 and "65536 tokens (reported by the server)" in said[0]


def test_a_bounded_budget_is_sent_as_the_task_asks_when_the_context_is_unknown(stub, caplog):
    caplog.set_level(logging.WARNING)
    lm = chat_model(stub)
    lm.generate_until(repeated(chat_context(lm, CHAT), {**SAMPLED, "max_gen_toks": 2048}))
    assert sent_max_tokens(stub) == [2048]
    assert not any("capped" in r.getMessage() for r in caplog.records)


def test_resolve_counts_the_prompt_and_never_sends_less_than_one_token():
    assert budget.resolve(131072, 40000, 1000, "given")[0] == 39000
    assert budget.resolve(999999, 40000, None, "given")[0] == 40000
    assert budget.resolve(999999, 100, 500, "given")[0] == 1
    assert budget.resolve(32768, None, None, None) == (32768, None)
    assert budget.resolve(131072, None, 10, None)[0] == budget.FALLBACK == 32768
    assert budget.resolve(1000, 40000, 1000, "given") == (1000, None)
