"""Log-likelihood requests (multiple-choice tasks) over an OpenAI-compatible `/v1/completions`
endpoint that echoes prompt log-probabilities (`echo: true, logprobs: 1`, as vLLM serves it).

`CompletionsLoglikelihood` is the `loglikelihood` of the `evalpack-completions` backend:

* The context is rendered as for generation (chat messages through the model's chat template,
  generation prompt added). As lm-eval 0.4.3's pair encoding (OLMES's) and 0.4.13's, trailing
  whitespace of the context moves to the front of the continuation.
* With a tokenizer (`tokenizer=` / the HF tokenizer of `model=`, or vLLM's remote one), the
  prompt is sent as token ids: context and context + continuation encoded the way lm-eval
  encodes them, the continuation being the tokens after the context's own token count. Without
  one (`tokenizer_backend=none`) the text is sent (`add_special_tokens: false`: the chat template
  already wrote any BOS) and the continuation is the trailing prompt tokens whose texts spell
  it exactly; a server whose token texts do not (byte-level pieces) is an error asking for a
  tokenizer, never a guess.
* The requests of one doc share their context: one HTTP request per distinct context carries
  all its continuations as a prompt list (the server's prefix cache then computes the context
  once). Failures are retried with backoff like generation requests, then stop the run.

`NoLoglikelihood` gives chat-only backends one clear error.
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from types import SimpleNamespace

import requests
from tqdm import tqdm

from .failures import retryable
from .http import BadResponse
from .served import ServedRequestError

log = logging.getLogger(__name__)


class AlignmentError(ValueError):
    """The echoed tokens do not spell the continuation: the server's token texts cannot be
    matched to the prompt without a tokenizer."""


def split_pair(context: str, continuation: str) -> tuple[str, str]:
    """lm-eval's `_encode_pair` split: the context's trailing whitespace joins the continuation."""
    stripped = context.rstrip()
    return stripped, context[len(stripped) :] + continuation


@dataclass
class ContextGroup:
    """All requests (by position in the call) that share one rendered context."""

    context: str
    continuations: list[str] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    label: str = ""


def group_by_context(rendered: list[tuple[str, str]], labels: list[str]) -> list[ContextGroup]:
    """Requests grouped by their (whitespace-split) context, in first-seen order."""
    groups: dict[str, ContextGroup] = {}
    for position, ((context, continuation), label) in enumerate(zip(rendered, labels)):
        ctx, cont = split_pair(context, continuation)
        group = groups.setdefault(ctx, ContextGroup(ctx, label=label))
        group.continuations.append(cont)
        group.positions.append(position)
    return list(groups.values())


def score_span(logprobs: dict, start: int, end: int) -> tuple[float, bool]:
    """Sum of token log-probs in [start, end) and whether each was the top choice (lm-eval's
    is_greedy: its log-prob equals the best one offered)."""
    values = logprobs["token_logprobs"][start:end]
    if not values or any(v is None for v in values):
        raise AlignmentError(f"no log-probabilities for prompt tokens {start}..{end}")
    tops = (logprobs.get("top_logprobs") or [None] * len(logprobs["token_logprobs"]))[start:end]
    greedy = all(top and value >= max(top.values()) for value, top in zip(values, tops))
    return float(sum(values)), greedy


def text_span(logprobs: dict, continuation: str) -> tuple[int, int]:
    """[start, end) of the trailing prompt tokens whose texts make up `continuation`; the last
    echoed token is the one generated token (`max_tokens: 1`), as lm-eval assumes."""
    tokens = logprobs["tokens"]
    end = len(tokens) - 1
    text = ""
    for start in range(end - 1, -1, -1):
        text = tokens[start] + text
        if len(text) >= len(continuation):
            if text == continuation:
                return start, end
            break
    raise AlignmentError(
        f"the echoed tokens end in {text[-80:]!r}, not the continuation "
        f"{continuation[-80:]!r}; give the backend a tokenizer (tokenizer=...)"
    )


class CompletionsLoglikelihood:
    """`loglikelihood` for a served completions backend. Uses the host class's `prompt_text`,
    `_post`, `model`, `tokenizer`/`tok_encode`, `url`, `retries`, `retry_delay`,
    `num_concurrent` and `cache_hook` (see `evalpack.models.backends.ServedCompletions`)."""

    def loglikelihood(self, requests_: list, disable_tqdm: bool = False):
        rendered = [
            (self.prompt_text(SimpleNamespace(context=r.args[0])), r.args[1]) for r in requests_
        ]
        labels = [f"task {r.task_name} doc {r.doc_id}" for r in requests_]
        groups = group_by_context(rendered, labels)
        results: list[tuple[float, bool] | None] = [None] * len(requests_)
        failures = []
        with (
            ThreadPoolExecutor(self.num_concurrent) as pool,
            tqdm(total=len(groups), desc=self.url, disable=disable_tqdm) as bar,
        ):
            futures = {pool.submit(self._score_group, group): group for group in groups}
            for future in as_completed(futures):
                group = futures[future]
                bar.update(1)
                try:
                    scores = future.result()
                except (requests.RequestException, ValueError) as exc:
                    failures.append(f"{group.label}: {exc}")
                    continue
                for position, score in zip(group.positions, scores, strict=True):
                    results[position] = score
                    self.cache_hook.add_partial("loglikelihood", requests_[position].args, score)
        if failures:
            shown = "\n  ".join(failures[:10])
            raise ServedRequestError(
                f"{len(failures)} of {len(groups)} log-likelihood requests to "
                f"{self.url} failed:\n  {shown}"
            )
        return results

    def loglikelihood_rolling(self, requests_: list, disable_tqdm: bool = False):
        raise NotImplementedError(
            f"{type(self).__name__}: rolling log-likelihood (perplexity tasks) is not supported"
        )

    def _score_group(self, group: ContextGroup) -> list[tuple[float, bool]]:
        if self.tokenizer is None:
            prompts = [group.context + cont for cont in group.continuations]
            choices = self._echo(prompts, {"add_special_tokens": False})
            spans = [
                text_span(choice["logprobs"], cont)
                for choice, cont in zip(choices, group.continuations)
            ]
        else:
            context_len = len(self.tok_encode(group.context))
            prompts = [self.tok_encode(group.context + cont) for cont in group.continuations]
            choices = self._echo(prompts, {})
            spans = [(context_len, len(ids)) for ids in prompts]
        return [
            score_span(choice["logprobs"], start, end)
            for choice, (start, end) in zip(choices, spans)
        ]

    def _echo(self, prompts: list, extra: dict) -> list[dict]:
        """The completions API's choices for `prompts`, in prompt order, retried with backoff."""
        payload = {
            "model": self.model,
            "prompt": prompts,
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": 1,
            "echo": True,
            **extra,
        }
        attempt = 0
        while True:
            try:
                return echoed_choices(self._post(payload), len(prompts))
            except (requests.RequestException, BadResponse) as exc:
                if attempt == self.retries or not retryable(exc):
                    raise
                log.warning("log-likelihood request to %s failed (%s); retrying", self.url, exc)
            attempt += 1
            time.sleep(self.retry_delay * 2 ** (attempt - 1))


def echoed_choices(body, count: int) -> list[dict]:
    """The response's `count` choices ordered by `index`, each with echoed `logprobs`."""
    try:
        choices = sorted(body["choices"], key=lambda c: c["index"])
        if len(choices) != count or any(
            not {"tokens", "token_logprobs"} <= set(c["logprobs"]) for c in choices
        ):
            raise KeyError("choices")
    except (KeyError, TypeError) as exc:
        raise BadResponse(
            f"expected {count} choices with echoed logprobs, got {json.dumps(body)[:200]}"
        ) from exc
    return choices


class NoLoglikelihood:
    """For chat-only endpoints, which return no log-probabilities for a given text."""

    def loglikelihood(self, requests_: list, disable_tqdm: bool = False):
        tasks = sorted({r.task_name for r in requests_})
        more = f" and {len(tasks) - 3} more" if len(tasks) > 3 else ""  # MMLU has 57 subtasks
        name = getattr(self, "backend_name", type(self).__name__)
        raise NotImplementedError(
            f"{name} talks to a chat endpoint, which cannot score given answers: "
            f"tasks {', '.join(tasks[:3])}{more} need log-likelihoods. Serve the model's "
            "/v1/completions "
            "(vLLM) and use --model evalpack-completions, or lm-eval's hf / vllm models."
        )

    def loglikelihood_rolling(self, requests_: list, disable_tqdm: bool = False):
        return self.loglikelihood(requests_, disable_tqdm)
