"""The client of a served WildGuard (the safety tasks' judge): an OpenAI-compatible
`/v1/completions` endpoint (vLLM: `vllm serve allenai/wildguard --tokenizer-mode slow`), asked
as safety-eval asks its local vLLM copy: the prompt text as is, greedy, 128 new tokens.

It is the AlpacaEval judge's client (`client.JudgeClient`: concurrency, retries with backoff on
429/5xx and network errors, a time limit per request, a stop when the judge is down, the
on-disk cache) with another endpoint and answer: the completion's text. The settings come from
the same `--metadata` keys (`judge_base_url`, `judge_model`, ...; `EVALPACK_JUDGE_*`), but there
is no default server: without `judge_base_url` nothing is sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..models.http import BadResponse
from .client import JudgeClient, JudgeSettings

MAX_TOKENS = 128  # safety-eval's WildGuard: max_tokens=128, temperature=0.0, top_p=1.0
HOW_TO_CONFIGURE = (
    'the safety tasks need a served WildGuard: --metadata \'{"judge_base_url": '
    '"http://HOST:PORT/v1", "judge_model": "allenai/wildguard"}\' (or '
    "EVALPACK_JUDGE_BASE_URL); serve it with `vllm serve allenai/wildguard --tokenizer-mode "
    "slow` (tasks/safety/README.md)"
)


@dataclass(frozen=True)
class WildGuardSettings(JudgeSettings):
    """The judge settings with WildGuard's defaults: no server, the hub name as model, more
    requests in flight (a vLLM server batches them), and a key variable of its own (an OpenAI
    key in the environment is never sent to it)."""

    base_url: str = ""
    model: str | None = "allenai/wildguard"
    api_key_env: str = "WILDGUARD_API_KEY"
    concurrency: int = 32

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/completions") else base + "/completions"


def unconfigured(settings: WildGuardSettings) -> str | None:
    """Why no judge request can be sent (no server named), or None."""
    return None if settings.base_url.strip() else f"no WildGuard configured: {HOW_TO_CONFIGURE}"


def payload(settings: WildGuardSettings, prompt: str) -> dict:
    return {
        "model": settings.model,
        "prompt": prompt,
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
        "top_p": 1.0,
    }


def completion_text(body) -> dict:
    """The cached choice of a completions answer: {"text": ...}, or BadResponse."""
    try:
        text = body["choices"][0]["text"]
        assert isinstance(text, str)
    except (KeyError, IndexError, TypeError, AssertionError):
        error = BadResponse(
            f"the judge gave no completion text (no choices[0].text in "
            f"{json.dumps(body)[:200]}): is it an OpenAI-compatible /v1/completions endpoint?"
        )
        error.final = True  # the same server answers the same way on a retry
        raise error from None
    return {"text": text}


class WildGuardClient(JudgeClient):
    """`JudgeClient` reading completion texts; `judge_all` takes `payload(...)`s."""

    read_answer = staticmethod(completion_text)
