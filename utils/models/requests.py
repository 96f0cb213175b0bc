"""Request handling shared by the pack's backends (replay, served, resumable).

* `render_messages`: the JSON "chat template" (the message list as JSON) that lets tests compare
  a task's messages with OLMES's through lm-eval's own prompt path.
* `stop_strings`: a request's stop strings, every one applied on our side (with
  `evalpack.core.text.cut_at_stops`) whatever the backend did.
* `repeat_numbers`: lm-eval lists an Instance once per repeat; which repeat each listing is.
* `continues_assistant`: whether a chat ends with an assistant prefix (`gen_prefix`) to continue.
* `GenerationOnly`: the log-likelihood methods of a backend that only generates.
* `request_seed`, `default_base_seed`: the seed sent with each (task, doc, repeat).
"""

from __future__ import annotations

import hashlib
import json
import random


def render_messages(messages: list[dict]) -> str:
    return json.dumps(messages, ensure_ascii=False)


def stop_strings(gen_kwargs: dict) -> list[str]:
    until = gen_kwargs.get("until") or []
    return [until] if isinstance(until, str) else [s for s in until if s]


def continues_assistant(messages: list[dict]) -> bool:
    """Whether the chat ends with an assistant prefix (lm-eval's `gen_prefix`) to continue."""
    return bool(messages) and messages[-1].get("role") == "assistant"


def repeat_numbers(requests: list) -> list[int]:
    """For each listed request, which of its repeats it is (0, 1, ...): lm-eval repeats a
    request by listing the same Instance again."""
    seen: dict[int, int] = {}
    numbers = []
    for request in requests:
        numbers.append(seen.get(id(request), 0))
        seen[id(request)] = numbers[-1] + 1
    return numbers


class GenerationOnly:
    """For backends that answer `generate_until` only: the log-likelihood request types are a
    clear error naming the backend."""

    backend_name = "this backend"

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError(f"{self.backend_name} answers generation requests only")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError(f"{self.backend_name} answers generation requests only")


def request_seed(base_seed: int, task: str, doc_id: int, repeat: int) -> int:
    """A seed for one (task, doc, repeat): stable for a base seed, distinct across repeats.
    31 bits, so every server's seed type holds it."""
    digest = hashlib.sha256(f"{base_seed}/{task}/{doc_id}/{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def default_base_seed() -> int:
    """A base seed drawn from Python's `random` (seeded by lm-eval's `--seed` right before the
    model is built), leaving its state as it was for whatever uses it next."""
    state = random.getstate()
    seed = random.getrandbits(31)
    random.setstate(state)
    return seed
