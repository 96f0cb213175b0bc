"""How many new tokens a served backend asks for: the task's `max_gen_toks`, cut to what the
model's context leaves.

OLMES's reasoning tasks (`olmo3:adapt`) ask for 131,072 new tokens (999,999 for code): not a
budget but "do not cut the model off". Sent as it is, such a request is refused by any server
whose context is smaller, so the pack sends what the context leaves after the prompt
(`max_model_len` minus the prompt, where the backend can count the prompt; else the server's
own count, asked again), and where the context is not known at all (no `max_model_len=`, the
server does not list it), `FALLBACK` tokens: enough for a reasoning model's usual thinking,
and what most servers take. The backend says once per run when it sends fewer tokens than the
task asks for, and why.
"""

from __future__ import annotations

UNBOUNDED = 131_072  # from this many tokens on, a task's budget means "do not cut off"
FALLBACK = 32_768  # sent for such a budget when the model's context is not known


def resolve(
    asked: int, context: int | None, prompt_tokens: int | None, source: str | None
) -> tuple[int, str | None]:
    """(tokens to send, why they are fewer than `asked`, or None when they are not).
    `context`: the model's `max_model_len` (None: not known), `source` where it came from;
    `prompt_tokens`: the prompt's length where the backend can count it."""
    if context:
        room = max(1, context - (prompt_tokens or 0))
        if asked <= room:
            return asked, None
        counted = " minus the prompt" if prompt_tokens else ""
        return room, f"the model's context of {context} tokens ({source}){counted}"
    if asked >= UNBOUNDED:
        return FALLBACK, (
            "the task asks not to be cut off, and the model's context is not known (give "
            "max_model_len= in --model_args to send what it leaves after the prompt)"
        )
    return asked, None
