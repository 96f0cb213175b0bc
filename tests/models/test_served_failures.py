"""The served-model backends failing clearly against a real HTTP server on 127.0.0.1
(tests/models/http_stub.py): retries and their backoff, one-line errors naming the request,
refused fields, stops and max_tokens within the server's context, a server that is down. The
rest of the backends' behaviour: test_served.py."""

import pytest

from evalpack.models.backends import ServedChat, ServedCompletions
from evalpack.models.served import ServedRequestError, plan_jobs
from tests.conftest import BACKSTOP
from tests.models.conftest import CHAT, PREFIXED, SAMPLED, chat_context, chat_model, fast, repeated


def test_500s_are_retried_with_backoff(stub):
    stub.faults = ["500", "500"]
    lm = chat_model(stub, retry_delay=0.2, max_retries=3)
    answers = lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED))
    assert answers[0].startswith("reply to")
    starts = [r["start"] for r in stub.records]
    assert len(starts) == 3
    assert starts[1] - starts[0] >= 0.2 and starts[2] - starts[1] >= 0.4


def test_timeouts_are_retried(stub):
    stub.faults = ["slow"]  # answered only once the stub stops: the client's timeout decides
    stub.slow_seconds = BACKSTOP
    lm = chat_model(stub, **fast(timeout=2))  # time enough for any answer that is not held
    answers = lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED))
    assert answers[0].startswith("reply to") and len(stub.records) == 2


@pytest.mark.parametrize(
    "fault,message",
    [
        ("malformed", "malformed JSON"),
        ("missing", "no ['choices'][0]['message']['content']"),
        ("500", "HTTP 500"),
    ],
)
def test_bad_responses_fail_the_request_clearly_after_retries(stub, fault, message):
    lm = chat_model(stub, **fast(max_retries=2))
    requests = repeated(chat_context(lm, CHAT), SAMPLED, docs=2, repeats=2, task="aime24_reasoning")
    bad_seed = plan_jobs(requests, lm.base_seed)[1].seed  # doc 0, repeat 1
    stub.fault_for = lambda payload: fault if payload["seed"] == bad_seed else None
    with pytest.raises(ServedRequestError) as error:
        lm.generate_until(requests)
    text = str(error.value)
    assert (
        "task aime24_reasoning doc 0 repeat 1" in text and stub.url("/v1/chat/completions") in text
    )
    assert "1 of 4 requests" in text and "3 completions were received" in text
    assert message in text and "(3 attempts)" in text and "\n" not in text
    assert len(stub.records) == 3 + 3  # three good ones, one tried three times


def test_client_errors_are_not_retried(stub):
    stub.faults = ["400"]
    lm = chat_model(stub, **fast())
    with pytest.raises(ServedRequestError, match=r"HTTP 400.*\(1 attempt: a client error, not"):
        lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED))
    assert len(stub.records) == 1


def test_a_refused_field_is_named_with_the_backend_to_use(stub):
    # transformers serve's answer to fields it does not know, as it words it
    stub.refuse = {"continue_final_message", "add_generation_prompt"}
    lm = chat_model(stub, **fast())
    with pytest.raises(ServedRequestError) as error:
        lm.generate_until(repeated(chat_context(lm, PREFIXED, False), SAMPLED))
    text = str(error.value)
    assert "HTTP 422" in text and "1 attempt: a client error, not retried" in text
    assert "refused continue_final_message, add_generation_prompt" in text
    assert "use evalpack-completions" in text and "attempts each" not in text
    assert len(stub.records) == 1


@pytest.mark.parametrize("until,sent", [([], None), (["\n\n"], ["\n\n"])])
def test_stop_is_sent_only_when_there_is_one(stub, until, sent):
    lm = chat_model(stub)
    lm.generate_until(repeated(chat_context(lm, CHAT), {**SAMPLED, "until": until}))
    completions = ServedCompletions(
        base_url=stub.url("/v1/completions"), model="m", tokenizer_backend="none"
    )
    completions.generate_until(repeated("Q: 6*7?\nA:", {**SAMPLED, "until": until}))
    assert [p.get("stop") for p in stub.payloads()] == [sent, sent]


def test_max_tokens_capped_by_the_context_length_once(stub, caplog):
    lm = chat_model(stub, max_model_len=100)
    long = {**SAMPLED, "max_gen_toks": 32768}
    lm.generate_until(
        repeated(chat_context(lm, CHAT), long, docs=3) + repeated(chat_context(lm, CHAT), SAMPLED)
    )
    assert sorted(p["max_tokens"] for p in stub.payloads()) == [64, 100, 100, 100]
    notes = [r.getMessage() for r in caplog.records if "capped" in r.getMessage()]
    assert len(notes) == 1 and "32768" in notes[0] and "max_model_len=" in notes[0]


@pytest.mark.parametrize(
    "wording",
    [
        None,  # vLLM's older wording and OpenAI's (the stub's default)
        (
            "'max_tokens' or 'max_completion_tokens' is too large: {asked}. This model's maximum "
            "context length is {context} tokens and your request has {prompt} input tokens "
            "({asked} > {context} - {prompt})."
        ),  # vLLM
        (
            "Requested token count exceeds the model's maximum context length of {context} tokens. "
            "You requested a total of {total} tokens: {prompt} tokens from the input messages and "
            "{asked} tokens for the completion."
        ),  # SGLang
    ],
)
def test_a_request_too_long_for_the_context_is_asked_again_for_what_fits(stub, caplog, wording):
    stub.context = 100
    stub.context_message = wording or stub.context_message
    lm = chat_model(stub)
    answers = lm.generate_until(
        repeated(chat_context(lm, CHAT), {**SAMPLED, "max_gen_toks": 32768}, docs=2)
    )
    assert all(answer.startswith("reply to") for answer in answers)
    assert sorted(p["max_tokens"] for p in stub.payloads()) == [70, 70, 32768, 32768]
    assert sum("capped at 70" in r.getMessage() for r in caplog.records) == 1


def test_context_length_reported_by_the_server_caps_max_tokens(stub):
    stub.models = {"data": [{"id": "m", "max_model_len": 50}]}  # as vLLM lists it
    lm = chat_model(stub)
    lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED))
    assert stub.payloads()[0]["max_tokens"] == 50


def test_server_down_fails_clearly(stub):
    url = stub.url("/v1/chat/completions")
    stub.stop()
    lm = ServedChat(base_url=url, model="m", **fast(max_retries=1))
    with pytest.raises(ServedRequestError, match=r"(?s)doc 0 repeat 0.*Connection"):
        lm.generate_until(repeated(chat_context(lm, CHAT), SAMPLED))
