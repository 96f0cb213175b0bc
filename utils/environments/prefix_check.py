"""A run whose rows continue an assistant prefix (GSM8K's "Answer:", HumanEval's fence opener),
against a server that cannot continue one (OpenAI, `transformers serve`), is refused before its
first rollout, in one line, as the lm-eval path's plan refuses it: otherwise every rollout fails
with the server's refusal and `vf-eval` still exits 0.

The server is asked once per (URL, model, harness `server`) and process, with a one-token request
carrying the continuation fields (`evalpack-chat`'s); only an answer that refuses those fields
stops the run (a server that is down is left to the rollouts, which report it). Only an eval
client is asked (`vf-eval`; a trainer's client is its own vLLM, which continues prefixes)."""

from __future__ import annotations

import asyncio
import json
import os
import weakref

import httpx

from ..lmeval import quiet
from ..models.requests import continues_assistant
from ..models.wire import CONTINUE_FIELDS

TIMEOUT = 30.0


class PrefixRefused(RuntimeError):
    """Stops the run: `vf-eval` cancels the other rollouts, and the error reaches the console
    as its one line (`lmeval.quiet`), exit status 1."""

    one_line = True


_answers: dict[tuple, str | None] = {}
_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # one per event loop


async def refusal(client, model: str, server: str) -> str | None:
    """Why the server behind `client` (a verifiers client config) cannot continue an assistant
    prefix, or None."""
    url = f"{client.base_url.rstrip('/')}/chat/completions"
    if server not in CONTINUE_FIELDS:
        return f"server={server} cannot continue an assistant prefix"
    key = os.environ.get(client.api_key_var, "")
    headers = {**client.headers, **({"Authorization": f"Bearer {key}"} if key else {})}
    body = {
        "model": model,
        "max_tokens": 1,
        "temperature": 0,
        "messages": [
            {"role": "user", "content": "Say yes."},
            {"role": "assistant", "content": "Answer:"},
        ],
        **CONTINUE_FIELDS[server],
    }
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.post(url, json=body, headers=headers)
    except httpx.HTTPError:
        return None
    refused = [field for field in CONTINUE_FIELDS[server] if field in response.text]
    if response.status_code in (400, 422) and refused:
        said = " ".join(response.text.split())[:160]
        return f"{url} refuses {', '.join(refused)} (HTTP {response.status_code}: {said})"
    return None


async def check(task_data, ctx, server: str) -> None:
    """Raise `PrefixRefused` when `task_data`'s messages end with an assistant prefix that the
    rollout's server cannot continue."""
    if getattr(ctx.client, "type", "eval") != "eval":
        return
    if not continues_assistant(json.loads(task_data.messages_json)):
        return
    asked = (ctx.client.base_url, ctx.model, server)
    async with _locks.setdefault(asyncio.get_running_loop(), asyncio.Lock()):
        if asked not in _answers:
            _answers[asked] = await refusal(ctx.client, ctx.model, server)
    if _answers[asked]:
        quiet.install()
        raise PrefixRefused(
            f"evalpack's {task_data.group} continues an assistant prefix, which the server "
            f"cannot: {_answers[asked]}; serve the model with vLLM or SGLang "
            "(--env.agent.harness.server vllm or sglang), or use the lm-eval path's "
            "evalpack-completions"
        )
