"""`EchoStub`: the HTTP stub (tests/http_stub.py) answering `/v1/completions` requests with
`echo: true` as vLLM does: for each prompt, every prompt token with its log-probability (the
first one null), then one generated token.

Its toy tokenizer: runs of word characters, runs of whitespace, single other characters; a
prompt given as token ids is read as character codes. A token's log-prob depends only on its
text (`toy_logprob`); a token starting with an upper-case letter has a better alternative in
`top_logprobs`, so it is not greedy. `byte_level=True` spells spaces as "Ġ" in token texts,
as servers that return raw byte-level BPE pieces do.
"""

from __future__ import annotations

import re

from tests.models.http_stub import Stub, default_reply

TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def toy_tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def toy_logprob(token: str) -> float:
    return -((sum(map(ord, token)) % 13) + 1) / 4


def toy_greedy(token: str) -> bool:
    return not token[:1].isupper()


def offsets(tokens: list[str]) -> list[int]:
    starts, position = [], 0
    for token in tokens:
        starts.append(position)
        position += len(token)
    return starts


class EchoStub(Stub):
    def __init__(self, byte_level: bool = False) -> None:
        super().__init__()
        self.byte_level = byte_level
        self.reply = lambda payload: payload  # body() builds the answer from the payload

    def body(self, path: str, payload) -> dict:
        if path != "/v1/completions" or not payload.get("echo"):
            return super().body(path, default_reply(payload))
        prompts = payload["prompt"]
        prompts = [prompts] if isinstance(prompts, str) or isinstance(prompts[0], int) else prompts
        return {"choices": [self.choice(i, prompt) for i, prompt in enumerate(prompts)]}

    def choice(self, index: int, prompt) -> dict:
        if isinstance(prompt, str):
            tokens = toy_tokens(prompt)
        else:
            tokens = [chr(code) for code in prompt]
        tokens = tokens + ["<gen>"]
        logprobs = [toy_logprob(t) for t in tokens]
        tops = [
            {t: lp, **({"<alt>": lp + 1.0} if not toy_greedy(t) else {})}
            for t, lp in zip(tokens, logprobs)
        ]
        shown = [t.replace(" ", "Ġ") for t in tokens] if self.byte_level else tokens
        return {
            "index": index,
            "text": "".join(tokens),
            "logprobs": {
                "tokens": shown,
                "token_logprobs": [None] + logprobs[1:],
                "top_logprobs": [None] + tops[1:],
                "text_offset": offsets(tokens),
            },
        }
