"""Judging a run's responses with WildGuard: one completion request per doc (the request the
benchmark judges, the model's first response), all sent at once through the judge's client
(concurrent, bounded: retries, a time limit per request, a stop when the judge is down), each
answer read by `parse_wildguard` into the doc's judge record."""

from __future__ import annotations

from .wildguard import judge_input, parse_wildguard


def unjudged_record(error: str) -> dict:
    """The record of a doc without a judgement: no verdict, the reason kept."""
    return {
        "judge_output": None,
        "is_parsing_error": None,
        "prompt_harmfulness": None,
        "response_refusal": None,
        "response_harmfulness": None,
        "error": error,
    }


def record_of(judgement) -> dict:
    """A doc's record from its `Judgement` (a choice with the answer's text, or an error)."""
    if judgement.error is not None:
        return unjudged_record(judgement.error)
    text = judgement.choice["text"]
    return {"judge_output": text, **parse_wildguard(text), "error": None}


def judge(prompts: list[str], responses: list[str], client, make_payload) -> list[dict]:
    """One record per (request, response) pair, in order. `make_payload(text)` is the judge
    request for one WildGuard input; `client.judge_all` sends them (JudgeUnavailable when the
    judge stops answering)."""
    payloads = [make_payload(judge_input(p, r)) for p, r in zip(prompts, responses, strict=True)]
    return [record_of(j) for j in client.judge_all(payloads)]
