"""Why a served request failed, in words: how many attempts were made, what kind of error it
was, and, for a request the server refused (400/422 naming fields it does not take), which
fields and which backend or server to use instead."""

from __future__ import annotations

import re

REFUSAL_WORDS = ("unexpected", "extra", "not permitted", "unrecognized", "unknown")


def attempts_text(exc: Exception) -> str:
    attempts = getattr(exc, "attempts", 1)
    if attempts == 1 and not retryable(exc):
        return "1 attempt: a client error, not retried"
    return f"{attempts} attempt{'s' if attempts > 1 else ''}"


def error_kind(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    return type(exc).__name__ + (f" {response.status_code}" if response is not None else "")


def refusal_hint(exc: Exception, continue_fields: dict) -> str:
    """For a 400/422 that names fields the request sent: which, and what to use instead."""
    response = getattr(exc, "response", None)
    if response is None or response.status_code not in (400, 422):
        return ""
    text = response.text
    if not any(word in text.lower() for word in REFUSAL_WORDS):
        return ""
    sent = getattr(exc, "payload_keys", ())
    refused = [key for key in sent if f"'{key}'" in text or f'"{key}"' in text]
    if not refused:
        return ""
    names = ", ".join(refused)
    if {key for fields in continue_fields.values() for key in fields} & set(refused):
        return (
            f" [the server refused {names}, which continue an assistant prefix: use "
            "evalpack-completions (renders the chat template here and continues the prefix) "
            "or a server that takes them (server=vllm or sglang)]"
        )
    return (
        f" [the server refused {names}: a setting of the task's generation_kwargs this "
        "server does not take; use a server that takes it]"
    )


# how servers word "prompt + max_tokens exceeds the context": the context, and the prompt's tokens
CONTEXT_SIZE = re.compile(r"maximum context length (?:is|of) (\d+)")
PROMPT_SIZE = re.compile(
    r"(\d+) in the messages|request has (\d+) input tokens"
    r"|(\d+) tokens from the input"
)


def fitting_max_tokens(exc: Exception) -> int | None:
    """For a 400 that says the request exceeds the context and counts the prompt (vLLM's,
    SGLang's and OpenAI's wordings): the `max_tokens` that fits; else None."""
    response = getattr(exc, "response", None)
    if response is None or response.status_code != 400:
        return None
    context, prompt = CONTEXT_SIZE.search(response.text), PROMPT_SIZE.search(response.text)
    if not (context and prompt):
        return None
    return int(context[1]) - int(next(group for group in prompt.groups() if group))


def retryable(exc: Exception) -> bool:
    """Everything but a client error (4xx other than 408/429) or an answer marked final (one a
    retry would only repeat, such as a judge that gives no log-probabilities)."""
    if getattr(exc, "final", False):
        return False
    response = getattr(exc, "response", None)
    if response is None:
        return True
    return response.status_code >= 500 or response.status_code in (408, 429)
