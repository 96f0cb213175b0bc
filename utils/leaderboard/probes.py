"""What a served checkpoint's server can do, found by asking it once before a leaderboard
starts: whether it answers at all, whether it echoes prompt log-probabilities (multiple-choice
tasks on `evalpack-completions`), whether it continues an assistant prefix (`gen_prefix` tasks
on `evalpack-chat`); and whether the AlpacaEval judge is configured, answers and gives
log-probabilities. Each answer is None (it can) or the reason it cannot, in one line.
"""

from __future__ import annotations

import json
import os

import requests

from ..judges import wildguard
from ..judges.client import JudgeSettings, first_choice, unconfigured
from ..models.http import BadResponse
from ..models.loglikelihood import NoLoglikelihood, echoed_choices
from ..models.requests import GenerationOnly
from ..models.wire import CONTINUE_FIELDS

TIMEOUT = 10.0
JUDGE_MODEL = "gpt-4-1106-preview"  # the annotator's own, when judge_model is not set


def ask(url: str, payload: dict, headers: dict | None = None) -> tuple[dict | None, str | None]:
    """(JSON answer, None) or (None, why not): unreachable, or the HTTP status and its text."""
    try:
        response = requests.post(url, json=payload, headers=headers or {}, timeout=TIMEOUT)
    except requests.RequestException as exc:
        return None, f"{url} cannot be reached ({type(exc).__name__})"
    if not response.ok:
        return (
            None,
            f"{url} answered HTTP {response.status_code}: {' '.join(response.text.split())[:160]}",
        )
    try:
        return response.json(), None
    except ValueError:
        return None, f"{url} answered with something that is not JSON"


def endpoint(base_url: str, path: str) -> str:
    """lm-eval's `base_url` is the full endpoint; accept a server root or `/v1` too."""
    base = base_url.rstrip("/")
    return base if base.endswith(path) else base.removesuffix("/v1") + "/v1" + path


def loglikelihood_problem(model_cls, args: dict) -> str | None:
    """Why this checkpoint cannot answer log-likelihood requests, or None."""
    # lm-eval's own chat-completions models refuse log-likelihoods as well (imported here: its
    # HTTP client, aiohttp, is a tenth of a second a board does not otherwise need)
    from lm_eval.models.openai_completions import LocalChatCompletion

    name = getattr(model_cls, "backend_name", None) or model_cls.__name__
    if issubclass(model_cls, (NoLoglikelihood, GenerationOnly, LocalChatCompletion)):
        return (
            f"{name} answers generation requests only (no log-likelihoods): use "
            "evalpack-completions against a server that echoes prompt log-probabilities "
            "(vLLM), or hf / vllm"
        )
    if name != "evalpack-completions" or not args.get("base_url"):
        return None
    url = endpoint(args["base_url"], "/completions")
    payload = {
        "model": args.get("model"),
        "prompt": "The answer is yes",
        "max_tokens": 1,
        "temperature": 0,
        "logprobs": 1,
        "echo": True,
    }
    if str(args.get("tokenizer_backend", "")).lower() in ("none", ""):
        payload["add_special_tokens"] = False  # how the text form is sent
    body, why = ask(url, payload)
    if why:
        return f"its server cannot score log-likelihoods: {why}"
    try:
        echoed_choices(body, 1)
    except BadResponse:
        return f"{url} does not echo prompt log-probabilities (echo: true, logprobs: 1)"
    return None


def prefix_problem(model_cls, args: dict) -> str | None:
    """Why this checkpoint cannot continue an assistant prefix (`gen_prefix`), or None."""
    if getattr(model_cls, "backend_name", None) != "evalpack-chat" or not args.get("base_url"):
        return None
    server = args.get("server", "vllm")
    if server not in CONTINUE_FIELDS:
        return (
            f"server={server} cannot continue an assistant prefix: use evalpack-completions "
            "(renders the chat template here) or server=vllm / sglang"
        )
    payload = {
        "model": args.get("model"),
        "max_tokens": 1,
        "temperature": 0,
        "messages": [
            {"role": "user", "content": "Say yes."},
            {"role": "assistant", "content": "Answer:"},
        ],
        **CONTINUE_FIELDS[server],
    }
    _, why = ask(endpoint(args["base_url"], "/chat/completions"), payload)
    if why:
        return (
            f"its server does not continue an assistant prefix ({', '.join(CONTINUE_FIELDS[server])}): "
            f"{why}; use evalpack-completions, or a server that takes them"
        )
    return None


def reachable_problem(args: dict) -> str | None:
    """A served checkpoint whose server does not answer at all (any HTTP answer will do)."""
    url = args.get("base_url")
    if not url:
        return None
    try:
        requests.get(url, timeout=TIMEOUT)
    except requests.RequestException as exc:
        return f"its server {url} cannot be reached ({type(exc).__name__}): is it running?"
    return None


def judge_problem(metadata: dict, kind: str = "alpaca_eval") -> str | None:
    """Why the judge of `kind` cannot judge, None when it can: not configured, not answering,
    or answering without what its scorer reads (AlpacaEval's annotator: log-probabilities;
    WildGuard, the safety tasks' judge: a completion text)."""
    wildguard_judge = kind == "wildguard"
    try:
        settings = (wildguard.WildGuardSettings if wildguard_judge else JudgeSettings).resolve(
            metadata
        )
    except ValueError as exc:
        return str(exc)
    missing = (wildguard.unconfigured if wildguard_judge else unconfigured)(settings)
    if missing:
        return missing
    key = os.environ.get(settings.api_key_env)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if wildguard_judge:
        return wildguard_problem(settings, headers)
    payload = {
        "model": settings.model or JUDGE_MODEL,
        "max_tokens": 1,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 5,
        "messages": [{"role": "user", "content": "Answer with one letter: m or M."}],
    }
    body, why = ask(settings.url, payload, headers)
    if why:
        return f"the judge cannot be used: {why}"
    try:
        first_choice(body)
    except BadResponse:
        return (
            f"the judge {settings.url} gives no log-probabilities (logprobs: true, "
            f"top_logprobs: 5), which the annotator reads: {json.dumps(body)[:120]}"
        )
    return None


def wildguard_problem(settings, headers: dict) -> str | None:
    """Why WildGuard at `settings.url` cannot judge (not answering, not a completions
    endpoint), asked with one token; None when it can."""
    body, why = ask(settings.url, {**wildguard.payload(settings, "Hi"), "max_tokens": 1}, headers)
    if why:
        return f"the judge cannot be used: {why}"
    try:
        wildguard.completion_text(body)
    except BadResponse as exc:
        return f"the judge cannot be used: {exc}"
    return None
