"""Served-model backends that stay correct when sampling: `evalpack-chat`, `evalpack-completions`,
`evalpack-sglang` and `answer-server`.

lm-eval 0.4.13's API backends send one `seed` with every request (repeats of a prompt come back
identical from vLLM), pass only 4 stop strings in chat mode, send `do_sample: false` with a
temperature unreconciled, and send an assistant prefix without asking the server to continue it.
These models share one generation engine that instead:

* gives every (task, doc, repeat) its own seed, `sample_seed(base, task, doc_id, repeat)`. The base
  is the `seed=` model arg, or else a hash of Python's `random` state when the model is built:
  lm-eval's `--seed` (first slot) seeds `random` just before, so the base follows `--seed`;
* cuts every completion at the earliest of all its stop strings, whatever the server honoured;
* treats a request as greedy when `do_sample` is false or its temperature is 0, and then sends
  temperature 0 without top_p/top_k/min_p;
* continues a trailing assistant message (lm-eval's `gen_prefix`) instead of starting a new turn;
* sends requests one per sample (never deduplicated), `num_concurrent` at a time, at least
  `request_interval` seconds apart, retrying connection errors, timeouts, 408/429/5xx and
  malformed or incomplete JSON `max_retries` times, `retry_delay` seconds doubling each retry.

A request that still fails does not become an empty answer: the others finish, every completion
received is stored (lm-eval's `--use_cache` for greedy requests, and `completion_log=<jsonl>` for
all), then `GenerationFailed` names each failed request. Rerunning resumes from what was stored.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import random
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import requests
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model
from lm_eval.models.api_models import JsonChatStr
from lm_eval.models.openai_completions import LocalChatCompletion, LocalCompletionsAPI
from tqdm import tqdm

log = logging.getLogger(__name__)

GREEDY_DROPPED = ("top_p", "top_k", "min_p")
RETRIED_STATUSES = {408, 429}
OPENAI_MAX_STOPS = 4


class RequestError(RuntimeError):
    """One request failed: `retryable` says whether another attempt could succeed."""

    def __init__(self, message: str, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class GenerationFailed(RuntimeError):
    """Some requests of a `generate_until` call failed after all retries."""

    def __init__(self, backend: str, failures: list[str], total: int) -> None:
        self.failures = failures
        lines = "\n".join(f"  - {failure}" for failure in failures)
        super().__init__(
            f"{backend}: {len(failures)} of {total} requests failed after retries. Every "
            f"completion received was kept: rerun with the same --use_cache path (greedy "
            f"requests) or completion_log= model arg to resume with only these regenerated.\n"
            f"{lines}"
        )


# --- seeds ------------------------------------------------------------------------------------


def _hash31(value: object) -> int:
    digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def base_seed_from_random_state() -> int:
    """A base seed that follows lm-eval's `--seed`: a hash of `random`'s current state, read
    without drawing from it (so lm-eval's own use of `random` is unchanged)."""
    return _hash31(repr(random.getstate()))


def sample_seed(base_seed: int, task: str | None, doc_id: int | None, repeat: int) -> int:
    """The seed of one sample: stable across runs, distinct per (task, doc, repeat)."""
    return _hash31([base_seed, task, doc_id, repeat])


def repeat_indices(requests: list) -> list[int]:
    """lm-eval asks for `repeats` samples of a doc by listing the same Instance that many
    times; number each occurrence 0, 1, ... in order."""
    seen: dict[int, int] = defaultdict(int)
    indices = []
    for request in requests:
        indices.append(seen[id(request)])
        seen[id(request)] += 1
    return indices


# --- decoding settings --------------------------------------------------------------------------


@dataclass(frozen=True)
class Decoding:
    """A request's generation settings, reconciled."""

    max_tokens: int
    stops: tuple[str, ...]
    temperature: float
    greedy: bool
    extra: dict  # every other sampling parameter, passed through (top_p, top_k, ...)


def reconcile(gen_kwargs: dict, default_max_tokens: int, eos: str | None = None) -> Decoding:
    """Greedy when `do_sample` is false or the temperature is 0 (the default without
    `do_sample: true`); greedy requests get temperature 0 and no top_p/top_k/min_p."""
    kwargs = copy.deepcopy(gen_kwargs)
    until = kwargs.pop("until", None)
    stops = [until] if isinstance(until, str) else list(until or [])
    if eos and eos not in stops:
        stops.append(eos)
    max_gen_toks = kwargs.pop("max_gen_toks", default_max_tokens)
    max_tokens = int(kwargs.pop("max_tokens", max_gen_toks))
    do_sample = kwargs.pop("do_sample", None)
    temperature = kwargs.pop("temperature", None)
    if temperature is None:
        temperature = 1.0 if do_sample else 0.0
    greedy = do_sample is False or float(temperature) == 0.0
    if greedy:
        temperature = 0.0
        for name in GREEDY_DROPPED:
            kwargs.pop(name, None)
    return Decoding(max_tokens, tuple(s for s in stops if s), float(temperature), greedy, kwargs)


def cut_at_stops(text: str, stops: tuple[str, ...]) -> str:
    """`text` up to the earliest occurrence of any stop string."""
    positions = [pos for pos in (text.find(stop) for stop in stops) if pos != -1]
    return text[: min(positions)] if positions else text


def ends_with_assistant(messages: list[dict]) -> bool:
    return bool(messages) and messages[-1].get("role") == "assistant"


def as_messages(context: str | JsonChatStr) -> list[dict]:
    """A chat context as a message list: lm-eval's JSON-encoded chat, or a plain prompt (no
    `--apply_chat_template`) as one user turn."""
    if isinstance(context, JsonChatStr):
        return json.loads(context.prompt)
    return [{"role": "user", "content": context}]


# --- local chat templates -------------------------------------------------------------------------


def render_template(
    template: str, messages: list[dict], add_generation_prompt: bool, special_tokens: dict
) -> str:
    """Render a Hugging Face style Jinja chat template. A trailing assistant message that is not
    followed by a generation prompt is continued: the text stops right after its content."""
    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    text = env.from_string(template).render(
        messages=messages, add_generation_prompt=add_generation_prompt, **special_tokens
    )
    if add_generation_prompt or not ends_with_assistant(messages):
        return text
    return cut_after_final_message(text, messages[-1]["content"])


def cut_after_final_message(text: str, content: str) -> str:
    for needle in (content, content.strip()):
        if needle and needle in text:
            return text[: text.rindex(needle) + len(needle)]
    raise ValueError("the chat template's output does not contain the assistant prefix")


# --- HTTP -----------------------------------------------------------------------------------------


class HttpClient:
    """POSTs JSON to one URL with retries, exponential backoff and a minimum gap between
    request starts shared by all threads."""

    def __init__(
        self,
        url: str,
        headers: dict,
        timeout: float,
        max_retries: int,
        retry_delay: float,
        request_interval: float,
    ) -> None:
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_delay = retry_delay
        self.request_interval = request_interval
        self._lock = threading.Lock()
        self._next_start = 0.0

    def call(self, payload: dict, parse) -> str:
        """`parse(response_json)` of the first attempt that succeeds; `RequestError` naming the
        last error once the retries are spent or on an error no retry can fix."""
        error = RequestError("no attempt made")
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.retry_delay * 2 ** (attempt - 1))
            self._wait_turn()
            try:
                return parse(self._post(payload))
            except RequestError as exc:
                error = exc
            if not error.retryable:
                break
            log.warning("%s: attempt %d failed: %s", self.url, attempt + 1, error)
        raise error

    def _wait_turn(self) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self.request_interval
        time.sleep(start - now)

    def _post(self, payload: dict) -> dict:
        try:
            response = requests.post(
                self.url, json=payload, headers=self.headers, timeout=self.timeout
            )
        except requests.Timeout:
            raise RequestError(f"no response within {self.timeout}s") from None
        except requests.ConnectionError as exc:
            raise RequestError(f"cannot connect: {exc}") from None
        if not response.ok:
            retryable = response.status_code >= 500 or response.status_code in RETRIED_STATUSES
            raise RequestError(f"HTTP {response.status_code}: {response.text[:300]}", retryable)
        try:
            return response.json()
        except ValueError:
            raise RequestError(f"response is not JSON: {response.text[:300]!r}") from None


def field_of(body, *path) -> object:
    """`body[path[0]][path[1]]...`, or a retryable `RequestError` naming what is missing."""
    value = body
    for step in path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            where = "".join(f"[{step!r}]" for step in path)
            raise RequestError(f"response lacks {where}: {json.dumps(body)[:300]}") from None
    return value


def string_field(body, *path) -> str:
    value = field_of(body, *path)
    if not isinstance(value, str):
        where = "".join(f"[{step!r}]" for step in path)
        raise RequestError(f"response {where} is not a string: {value!r}")
    return value


# --- resumable storage ------------------------------------------------------------------------------


class CompletionLog:
    """`completion_log=<file.jsonl>`: one line per completion received, keyed by a hash of the
    URL, the exact payload and the stop strings. A rerun reuses every matching line."""

    def __init__(self, path: str | None) -> None:
        self.path = Path(path) if path else None
        self.entries: dict[str, str] = {}
        if self.path and self.path.exists():
            with self.path.open(encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        row = json.loads(line)
                        self.entries[row["key"]] = row["completion"]

    def append(self, key: str, sample: dict, completion: str) -> None:
        if self.path:
            self.entries[key] = completion
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"key": key, **sample, "completion": completion}) + "\n")


@dataclass
class Job:
    """One sample to generate."""

    request: object  # the lm-eval Instance
    repeat: int
    seed: int
    decoding: Decoding
    payload: dict
    key: str

    def describe(self, url: str) -> str:
        return (
            f"task {self.request.task_name} doc_id {self.request.doc_id} repeat {self.repeat} "
            f"(seed {self.seed}) at {url}"
        )

    def sample(self) -> dict:
        return {
            "task": self.request.task_name,
            "doc_id": self.request.doc_id,
            "repeat": self.repeat,
            "seed": self.seed,
        }


# --- the shared engine --------------------------------------------------------------------------


class ServedGeneration:
    """`generate_until` for every backend here. A backend sets the engine up with
    `_setup_serving` and provides `_payload(context, decoding, seed, request, repeat)` and
    `_parse(response_json) -> str`."""

    backend_name = "served model"

    def _setup_serving(
        self,
        url: str | None,
        headers: dict,
        seed,
        num_concurrent,
        max_retries,
        retry_delay,
        request_interval,
        timeout,
        completion_log: str | None,
    ) -> None:
        if not url:
            raise ValueError(f"{self.backend_name} needs base_url=<full endpoint URL>")
        self.base_seed = base_seed_from_random_state() if seed is None else int(seed)
        self.num_concurrent = max(1, int(num_concurrent))
        self.client = HttpClient(
            url, headers, float(timeout), int(max_retries), float(retry_delay),
            float(request_interval),
        )
        self.completion_log = CompletionLog(completion_log)
        log.info("%s: base seed %d", self.backend_name, self.base_seed)

    def _payload(self, context, decoding: Decoding, seed: int, request, repeat: int) -> dict:
        raise NotImplementedError

    def _parse(self, body) -> str:
        raise NotImplementedError

    def _eos(self) -> str | None:
        return None

    def _default_max_tokens(self) -> int:
        return self._max_gen_toks

    def generate_until(self, requests: list, disable_tqdm: bool = False) -> list[str]:
        jobs = [self._job(req, rep) for req, rep in zip(requests, repeat_indices(requests))]
        self._check_cacheable(jobs)
        answers: list[str | None] = [None] * len(jobs)
        todo = []
        for i, job in enumerate(jobs):
            if job.key in self.completion_log.entries:
                answers[i] = cut_at_stops(self.completion_log.entries[job.key], job.decoding.stops)
            else:
                todo.append(i)
        failures = self._request_all(jobs, todo, answers, disable_tqdm)
        if self.cache_hook.dbdict is not None:
            self.cache_hook.dbdict.commit()
        if failures:
            raise GenerationFailed(self.backend_name, failures, len(jobs))
        return answers

    def _job(self, request, repeat: int) -> Job:
        context, gen_kwargs = request.args[:2]
        decoding = reconcile(gen_kwargs, self._default_max_tokens(), self._eos())
        seed = sample_seed(self.base_seed, request.task_name, request.doc_id, repeat)
        payload = self._payload(context, decoding, seed, request, repeat)
        key = hashlib.sha256(
            json.dumps([self.client.url, payload, decoding.stops], sort_keys=True).encode()
        ).hexdigest()
        return Job(request, repeat, seed, decoding, payload, key)

    def _check_cacheable(self, jobs: list[Job]) -> None:
        """lm-eval's `--use_cache` keys a request by its prompt and settings alone and skips
        only `do_sample: true` requests, so a sampled request without it would be replayed as
        one answer for every repeat on the next run: refuse before sending anything."""
        if self.cache_hook.dbdict is None:
            return
        for job in jobs:
            repeats = job.request.repeats or 1
            gen_kwargs = job.request.args[1]
            if not job.decoding.greedy and repeats > 1 and not gen_kwargs.get("do_sample"):
                raise ValueError(
                    f"{self.backend_name}: task {job.request.task_name} samples "
                    f"(temperature {job.decoding.temperature}) {repeats} times without "
                    "do_sample: true, and lm-eval's --use_cache would then replay one sample "
                    "for all repeats. Add --gen_kwargs do_sample=true, or resume sampled runs "
                    "with completion_log= instead of --use_cache."
                )

    def _request_all(self, jobs, todo, answers, disable_tqdm) -> list[str]:
        """Send the `todo` jobs, fill `answers`, store each completion as it arrives; return
        the failures, described."""
        failures = []
        with ThreadPoolExecutor(max_workers=self.num_concurrent) as pool:
            futures = {pool.submit(self.client.call, jobs[i].payload, self._parse): i for i in todo}
            progress = tqdm(
                as_completed(futures), total=len(futures), desc="Requesting", disable=disable_tqdm
            )
            for future in progress:
                job = jobs[futures[future]]
                try:
                    completion = future.result()
                except RequestError as exc:
                    failures.append(f"{job.describe(self.client.url)}: {exc}")
                    continue
                answers[futures[future]] = cut_at_stops(completion, job.decoding.stops)
                self._store(job, completion, answers[futures[future]])
        return failures

    def _store(self, job: Job, completion: str, answer: str) -> None:
        self.completion_log.append(job.key, job.sample(), completion)
        if job.decoding.greedy:
            self.cache_hook.add_partial("generate_until", job.request.args, answer)


def serving_args(kwargs: dict) -> dict:
    """Pop this module's engine options out of a backend's keyword arguments."""
    defaults = {
        "seed": None,
        "num_concurrent": 1,
        "max_retries": 3,
        "retry_delay": 1.0,
        "request_interval": 0.0,
        "timeout": 300,
        "completion_log": None,
    }
    return {name: kwargs.pop(name, default) for name, default in defaults.items()}


def template_api_args(serving: dict) -> dict:
    """The engine options lm-eval's TemplateAPI also takes (its loglikelihood path uses them)."""
    return {
        "num_concurrent": serving["num_concurrent"],
        "max_retries": max(1, int(serving["max_retries"])),
        "timeout": max(1, int(float(serving["timeout"]))),
    }


# --- OpenAI-compatible chat ---------------------------------------------------------------------

CONTINUATION_FIELDS = {
    "vllm": {"continue_final_message": True, "add_generation_prompt": False},
    "sglang": {"continue_final_message": True},
}


@register_model("evalpack-chat")
class ServedChat(ServedGeneration, LocalChatCompletion):
    """`/v1/chat/completions` of vLLM (`server=vllm`, default), SGLang (`server=sglang`) or a
    server that cannot continue an assistant message (`server=openai`: a prefix is refused,
    and at most 4 stop strings are sent)."""

    backend_name = "evalpack-chat"

    def __init__(self, base_url=None, server: str = "vllm", **kwargs) -> None:
        if server not in (*CONTINUATION_FIELDS, "openai"):
            raise ValueError(f"evalpack-chat: server must be vllm, sglang or openai, not {server}")
        serving = serving_args(kwargs)
        super().__init__(base_url=base_url, **template_api_args(serving), **kwargs)
        self.server = server
        self._setup_serving(base_url, self.header, **serving)

    def _payload(self, context, decoding: Decoding, seed: int, request, repeat: int) -> dict:
        messages = as_messages(context)
        stops = list(decoding.stops)
        payload = {
            "model": self.model,
            "messages": messages,
            "max_tokens": decoding.max_tokens,
            "temperature": decoding.temperature,
            "seed": seed,
            **decoding.extra,
        }
        if stops:
            payload["stop"] = stops[:OPENAI_MAX_STOPS] if self.server == "openai" else stops
        if ends_with_assistant(messages):
            payload.update(self._continuation(request))
        return payload

    def _continuation(self, request) -> dict:
        if self.server == "openai":
            raise ValueError(
                f"evalpack-chat (server=openai): task {request.task_name} ends its prompt with "
                "an assistant prefix (gen_prefix), which this server cannot continue. Serve the "
                "model with vLLM or SGLang (server=vllm / server=sglang), or use "
                "evalpack-completions with the model's chat template."
            )
        return CONTINUATION_FIELDS[self.server]

    def _parse(self, body) -> str:
        content = field_of(body, "choices", 0, "message", "content")
        if content is None:
            log.warning("evalpack-chat: the server returned null content; answering ''")
            content = ""
        if not isinstance(content, str):
            raise RequestError(f"response message content is not a string: {content!r}")
        if self.think_end_token:
            content = content.split(self.think_end_token)[-1].lstrip()
        return content


# --- OpenAI-compatible completions, and SGLang's native /generate -----------------------------


@register_model("evalpack-completions")
class ServedCompletions(ServedGeneration, LocalCompletionsAPI):
    """`/v1/completions`. With `--apply_chat_template` the prompt is rendered here, with
    `chat_template=<file.jinja>` or the Hugging Face tokenizer (`tokenizer_backend=huggingface,
    tokenizer=<name>`); a trailing assistant prefix is continued in the rendered text."""

    backend_name = "evalpack-completions"

    def __init__(
        self, base_url=None, tokenizer_backend=None, chat_template: str | None = None, **kwargs
    ) -> None:
        serving = serving_args(kwargs)
        super().__init__(
            base_url=base_url,
            tokenizer_backend=tokenizer_backend,
            **template_api_args(serving),
            **kwargs,
        )
        self.template_path = chat_template
        self.template = Path(chat_template).read_text(encoding="utf-8") if chat_template else None
        self._setup_serving(base_url, self.header, **serving)

    @property
    def tokenizer_name(self) -> str:
        return self.template_path or getattr(self.tokenizer, "name_or_path", "")

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        return self.template or super().chat_template(chat_template)

    def apply_chat_template(self, chat_history: list[dict], add_generation_prompt=True) -> str:
        if self.template:
            return render_template(
                self.template, chat_history, add_generation_prompt, self._special_tokens()
            )
        if hasattr(self.tokenizer, "apply_chat_template"):
            return self.tokenizer.apply_chat_template(
                chat_history,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
                continue_final_message=not add_generation_prompt,
            )
        raise ValueError(
            f"{self.backend_name}: --apply_chat_template needs the model's chat template: pass "
            "chat_template=<file.jinja> or tokenizer_backend=huggingface,tokenizer=<hf name>"
        )

    def _special_tokens(self) -> dict:
        return {
            "bos_token": getattr(self.tokenizer, "bos_token", "") or "",
            "eos_token": getattr(self.tokenizer, "eos_token", "") or self._eos_string or "",
        }

    def _eos(self) -> str | None:
        return self._eos_string or getattr(self.tokenizer, "eos_token", None)

    def _payload(self, context, decoding: Decoding, seed: int, request, repeat: int) -> dict:
        payload = {
            "model": self.model,
            "prompt": context,
            "max_tokens": decoding.max_tokens,
            "temperature": decoding.temperature,
            "seed": seed,
            **decoding.extra,
        }
        if decoding.stops:
            payload["stop"] = list(decoding.stops)
        return payload

    def _parse(self, body) -> str:
        return string_field(body, "choices", 0, "text")


@register_model("evalpack-sglang")
class ServedSGLang(ServedCompletions):
    """SGLang's native `/generate`: `{"text": prompt, "sampling_params": {...}}`, the seed in
    `sampling_params.sampling_seed`. Prompts are rendered as for `evalpack-completions`."""

    backend_name = "evalpack-sglang"

    def _payload(self, context, decoding: Decoding, seed: int, request, repeat: int) -> dict:
        params = {
            "max_new_tokens": decoding.max_tokens,
            "temperature": decoding.temperature,
            "sampling_seed": seed,
            **decoding.extra,
        }
        if decoding.stops:
            params["stop"] = list(decoding.stops)
        return {"text": context, "sampling_params": params}

    def _parse(self, body) -> str:
        return string_field(body, "text")

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError(
            "evalpack-sglang serves generation tasks; for loglikelihood tasks use "
            "evalpack-completions against SGLang's /v1/completions"
        )

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        return self.loglikelihood(requests)


# --- plain answer servers -------------------------------------------------------------------------

ANSWER_SERVER_FIELDS = ("dataset", "prompt", "sample_id", "seed", "continue_final_message")


@register_model("answer-server")
class AnswerServer(ServedGeneration, LM):
    """POST `{"dataset": task, "prompt": text or messages, "sample_id": "<doc_id>:<repeat>",
    "seed", "max_tokens", "temperature", "stop", ...extra model_args}`; the answer is the
    response's `answer_field` (default `answer`). With `--apply_chat_template` the prompt is the
    message list, and `continue_final_message: true` marks a last assistant message to continue.
    """

    backend_name = "answer-server"

    def __init__(
        self,
        base_url=None,
        answer_field: str = "answer",
        max_gen_toks: int = 256,
        header: dict | None = None,
        **kwargs,
    ) -> None:
        super().__init__()
        serving = serving_args(kwargs)
        for name in ("batch_size", "max_batch_size", "device"):  # lm-eval's, meaningless here
            kwargs.pop(name, None)
        clashes = sorted(set(kwargs) & {*ANSWER_SERVER_FIELDS, "max_tokens", "temperature"})
        if clashes:
            raise ValueError(f"answer-server: model_args may not set the fields {clashes}")
        self.answer_field = answer_field
        self.extra_fields = kwargs
        self._max_gen_toks = int(max_gen_toks)
        self._setup_serving(base_url, header or {}, **serving)

    @property
    def tokenizer_name(self) -> str:
        return "answer-server-messages"

    def apply_chat_template(self, chat_history: list[dict], add_generation_prompt=True):
        return JsonChatStr(json.dumps(chat_history, ensure_ascii=False))

    def _payload(self, context, decoding: Decoding, seed: int, request, repeat: int) -> dict:
        prompt = json.loads(context.prompt) if isinstance(context, JsonChatStr) else context
        payload = {
            **self.extra_fields,
            "dataset": request.task_name,
            "prompt": prompt,
            "sample_id": f"{request.doc_id}:{repeat}",
            "seed": seed,
            "max_tokens": decoding.max_tokens,
            "temperature": decoding.temperature,
            "stop": list(decoding.stops),
            **decoding.extra,
        }
        if isinstance(prompt, list) and ends_with_assistant(prompt):
            payload["continue_final_message"] = True
        return payload

    def _parse(self, body) -> str:
        return string_field(body, self.answer_field)

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("answer-server answers generation tasks only")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("answer-server answers generation tasks only")
