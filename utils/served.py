"""Served-model backends: models behind an HTTP server, correct for sampled evaluations.

* `evalpack-chat`: an OpenAI-compatible `/v1/chat/completions` endpoint (vLLM, SGLang, OpenAI).
* `evalpack-completions`: `/v1/completions`; chat prompts are rendered locally with the model's
  chat template (`chat_template_file=`, or the Hugging Face tokenizer's own).
* `evalpack-sglang`: SGLang's native `/generate` (`{"text": ..., "sampling_params": {...}}`).
* `answer-server`: any server that takes `{"dataset", "prompt", "sample_id", ...}` and answers
  JSON with the completion under `answer_field` (default `answer`).

What lm-eval's own API backends get wrong, and these do not:

* Every (task, doc, repeat) gets its own seed, derived from the base seed (`seed=` in
  `--model_args`, else drawn from Python's `random`, which lm-eval seeds with `--seed` just
  before building the model), so repeats of a prompt are distinct samples and a rerun with the
  same `--seed` sends the same seeds.
* One request per repeat: repeats never collapse into one cached or deduplicated request.
* Every stop string is enforced client-side (servers may cap or ignore them).
* Greedy (`do_sample: false` or temperature 0) is sent as temperature 0 with no top_p/top_k/min_p.
* A trailing assistant message (lm-eval's `gen_prefix`) is continued, not answered: vLLM gets
  `continue_final_message: true` + `add_generation_prompt: false`, SGLang
  `continue_final_message: true`; OpenAI cannot continue one, so such a request is refused.
* A request that fails (server down, timeout, 5xx, malformed JSON, missing field) is retried
  with exponential backoff, then the run stops with an error naming task, doc, repeat, URL and
  the last error. Every completion received is stored at once in lm-eval's `--use_cache`
  database, under a key that includes the repeat and seed, so rerunning with the same
  `--use_cache` only regenerates what is missing. No failure becomes a silent empty answer.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

import requests
from jinja2.sandbox import ImmutableSandboxedEnvironment
from lm_eval.api.model import LM, hash_args
from lm_eval.api.registry import register_model
from lm_eval.models.api_models import JsonChatStr
from lm_eval.models.openai_completions import LocalChatCompletion, LocalCompletionsAPI
from tqdm import tqdm

from evalpack.models import cut_at_stops

log = logging.getLogger(__name__)

CACHE_ATTR = "evalpack-served"  # cache-key namespace, apart from lm-eval's per-args keys
SAMPLING_ONLY = ("top_p", "top_k", "min_p")  # dropped for greedy decoding
OPENAI_MAX_STOPS = 4
CONTINUE_FIELDS = {
    "vllm": {"continue_final_message": True, "add_generation_prompt": False},
    "sglang": {"continue_final_message": True},
}


class BadResponse(ValueError):
    """The server answered, but not with a usable completion."""


class ServedRequestError(RuntimeError):
    """Requests that still failed after every retry."""


@dataclass
class Job:
    """One request to send: an Instance and which of its repeats this is."""

    index: int
    request: object
    repeat: int
    seed: int

    @property
    def context(self):
        return self.request.args[0]

    @property
    def gen_kwargs(self) -> dict:
        return self.request.args[1]

    @property
    def label(self) -> str:
        return (f"task {self.request.task_name} doc {self.request.doc_id} "
                f"repeat {self.repeat}")

    def cache_args(self) -> tuple:
        return (self.context, self.gen_kwargs, self.repeat, self.seed)


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


def plan_jobs(requests_: list, base_seed: int) -> list[Job]:
    """One job per listed request; lm-eval lists the same Instance once per repeat."""
    seen: dict[int, int] = {}
    jobs = []
    for index, request in enumerate(requests_):
        repeat = seen.get(id(request), 0)
        seen[id(request)] = repeat + 1
        seed = request_seed(base_seed, request.task_name, request.doc_id, repeat)
        jobs.append(Job(index, request, repeat, seed))
    return jobs


def stop_strings(gen_kwargs: dict) -> list[str]:
    until = gen_kwargs.get("until") or []
    return [until] if isinstance(until, str) else [s for s in until if s]


def sampling_options(gen_kwargs: dict, default_max_tokens: int) -> dict:
    """Generation settings in OpenAI terms (`max_tokens`, `temperature`, extras), reconciled:
    greedy (`do_sample: false`, or temperature 0) is temperature 0 with no sampling knobs."""
    options = copy.deepcopy(gen_kwargs)
    options.pop("until", None)
    do_sample = options.pop("do_sample", None)
    max_tokens = options.pop("max_tokens", options.pop("max_gen_toks", default_max_tokens))
    temperature = float(options.pop("temperature", 1.0 if do_sample else 0.0))
    if do_sample is False or temperature == 0:
        temperature = 0.0
        for knob in SAMPLING_ONLY:
            options.pop(knob, None)
    return {"max_tokens": int(max_tokens), "temperature": temperature, **options}


def continues_assistant(messages: list[dict]) -> bool:
    """Whether the chat ends with an assistant prefix (lm-eval's `gen_prefix`) to continue."""
    return bool(messages) and messages[-1].get("role") == "assistant"


def _template_error(message: str):
    raise ValueError(f"chat template: {message}")


def render_chat(template: str, messages: list[dict], bos_token: str = "",
                eos_token: str = "") -> str:
    """`messages` rendered with a Jinja chat template, as Hugging Face renders them; a trailing
    assistant message is left open (the prompt ends with its text) so the model continues it."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _template_error
    continuing = continues_assistant(messages)
    text = env.from_string(template).render(
        messages=messages, add_generation_prompt=not continuing,
        bos_token=bos_token, eos_token=eos_token,
    )
    prefix = messages[-1]["content"].strip() if continuing else ""
    if not prefix:
        return text
    start = text.rfind(prefix)
    if start == -1:
        raise ValueError("chat template dropped the final assistant message; cannot continue it")
    # as transformers' continue_final_message: the prefix's trailing whitespace (HumanEval's
    # fence opener ends in a newline) stays where the template kept it
    whole = messages[-1]["content"].lstrip()
    if text.startswith(whole, start):
        return text[: start + len(whole)]
    return text[: start + len(prefix)]


class Pacer:
    """Spaces request starts at least `interval` seconds apart, across threads."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        time.sleep(max(0.0, start - now))


class ServedGeneration:
    """`generate_until` over HTTP, one request per (doc, repeat). Subclasses build the payload
    (`build_payload`) and read the completion out of the response (`parse_answer`)."""

    # Each (doc, repeat) has its own seed and its own key in the cache behind `cache_hook`, so
    # these backends skip what they already have themselves; `evalpack.resume` hands them every
    # request (a subset would be renumbered from repeat 0 and get the old seeds again).
    keys_each_repeat = True

    def _init_serving(self, *, url: str | None, seed: int | None, num_concurrent: int,
                      max_retries: int, retry_delay: float, request_interval: float,
                      timeout: float) -> None:
        if not url:
            raise ValueError(f"{type(self).__name__} needs base_url=<http://host:port/path>")
        self.url = url
        self.base_seed = default_base_seed() if seed is None else int(seed)
        self.num_concurrent = max(1, int(num_concurrent))
        self.retries = int(max_retries)
        self.retry_delay = float(retry_delay)
        self.timeout = float(timeout)
        self.pacer = Pacer(float(request_interval))

    def build_payload(self, job: Job) -> dict:
        raise NotImplementedError

    def parse_answer(self, body) -> str:
        raise NotImplementedError

    def request_headers(self) -> dict:
        return {}

    def generate_until(self, requests_: list, disable_tqdm: bool = False) -> list[str]:
        jobs = plan_jobs(requests_, self.base_seed)
        answers: list[str | None] = [self._cached(job) for job in jobs]
        pending = [job for job in jobs if answers[job.index] is None]
        # built before anything is sent, so a prompt the server cannot take fails up front
        payloads = [self.build_payload(job) for job in pending]
        failures: list[str] = []
        with (ThreadPoolExecutor(self.num_concurrent) as pool,
              tqdm(total=len(pending), desc=self.url, disable=disable_tqdm) as bar):
            futures = {pool.submit(self._answer, job, payload): job
                       for job, payload in zip(pending, payloads, strict=True)}
            for future in as_completed(futures):
                job = futures[future]
                bar.update(1)
                try:
                    answers[job.index] = future.result()
                except (requests.RequestException, BadResponse) as exc:
                    failures.append(f"{job.label}: {exc}")
                    continue
                self.cache_hook.add_partial(CACHE_ATTR, job.cache_args(), answers[job.index])
        self._flush_cache()
        if failures:
            raise ServedRequestError(self._failure_message(failures, len(jobs)))
        return answers

    def _cached(self, job: Job) -> str | None:
        store = self.cache_hook.dbdict
        if store is None:
            return None
        return store.get(hash_args(CACHE_ATTR, job.cache_args()))

    def _flush_cache(self) -> None:
        if self.cache_hook.dbdict is not None:
            self.cache_hook.dbdict.commit()

    def _failure_message(self, failures: list[str], total: int) -> str:
        kept = total - len(failures)
        resume = ("they are stored in the --use_cache database (or a leaderboard pair's "
                  "completion log): rerun the same command to regenerate only the failed requests"
                  if self.cache_hook.dbdict is not None
                  else "run with --use_cache <path> to keep completions across reruns")
        shown = "\n  ".join(failures[:10])
        more = f"\n  ... and {len(failures) - 10} more" if len(failures) > 10 else ""
        return (f"{len(failures)} of {total} requests to {self.url} failed after "
                f"{self.retries + 1} attempts each:\n  {shown}{more}\n"
                f"{kept} completions were received; {resume}.")

    def _answer(self, job: Job, payload: dict) -> str:
        """The completion for one job, cut at its stop strings; retried with backoff."""
        attempt = 0
        while True:
            try:
                answer = self.parse_answer(self._post(payload))
                return cut_at_stops(answer, stop_strings(job.gen_kwargs))
            except (requests.RequestException, BadResponse) as exc:
                if attempt == self.retries or not _retryable(exc):
                    raise
                log.warning("%s, attempt %d to %s failed (%s); retrying",
                            job.label, attempt + 1, self.url, exc)
            attempt += 1
            time.sleep(self.retry_delay * 2 ** (attempt - 1))

    def _post(self, payload: dict):
        self.pacer.wait()
        response = requests.post(self.url, json=payload, headers=self.request_headers(),
                                 timeout=self.timeout)
        if not response.ok:
            raise requests.HTTPError(
                f"HTTP {response.status_code}: {response.text[:300]}", response=response)
        try:
            return response.json()
        except ValueError as exc:
            raise BadResponse(f"malformed JSON: {response.text[:200]!r}") from exc


def _retryable(exc: Exception) -> bool:
    """Everything but a client error (4xx other than 408/429), which a retry won't fix."""
    response = getattr(exc, "response", None)
    if response is None:
        return True
    return response.status_code >= 500 or response.status_code in (408, 429)


def _field(body, *path):
    """`body[path[0]][path[1]]...`, or BadResponse naming what is missing."""
    value = body
    for key in path:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            raise BadResponse(f"response has no {_path_name(path)}: {json.dumps(body)[:200]}")
    if not isinstance(value, str):
        raise BadResponse(f"{_path_name(path)} is {value!r}, not text")
    return value


def _path_name(path) -> str:
    return "".join(f"[{key!r}]" for key in path)


class _TemplateAPIServing(ServedGeneration):
    """Shared by the lm-eval subclasses: settings lm-eval's TemplateAPI does not take."""

    def _init_template_serving(self, seed, retry_delay, request_interval, timeout) -> None:
        # lm-eval keeps whole seconds of `timeout`; keep the value as given
        self._init_serving(url=self.base_url, seed=seed, num_concurrent=self._concurrent,
                           max_retries=self.max_retries, retry_delay=retry_delay,
                           request_interval=request_interval, timeout=timeout)

    def request_headers(self) -> dict:
        return self.header

    def options(self, job: Job) -> dict:
        return sampling_options(job.gen_kwargs, self._max_gen_toks)


@register_model("evalpack-chat")
class ServedChat(_TemplateAPIServing, LocalChatCompletion):
    """OpenAI-compatible chat completions; `server=vllm|sglang|openai` picks how an assistant
    prefix is continued (OpenAI cannot) and whether stops are capped at OpenAI's 4."""

    def __init__(self, base_url=None, server: str = "vllm", seed=None, retry_delay=1.0,
                 request_interval=0.0, timeout=300, **kwargs) -> None:
        if server not in ("vllm", "sglang", "openai"):
            raise ValueError(f"evalpack-chat: server must be vllm, sglang or openai, not {server!r}")
        super().__init__(base_url=base_url, timeout=timeout, **kwargs)
        self.server = server
        self._init_template_serving(seed, retry_delay, request_interval, timeout)

    def build_payload(self, job: Job) -> dict:
        if not isinstance(job.context, JsonChatStr):
            raise TypeError("evalpack-chat sends chat messages: run with --apply_chat_template")
        messages = json.loads(job.context.prompt)
        stops = stop_strings(job.gen_kwargs)
        payload = {"model": self.model, "messages": messages, **self.options(job),
                   "stop": stops[:OPENAI_MAX_STOPS] if self.server == "openai" else stops,
                   "seed": job.seed}
        if continues_assistant(messages):
            if self.server not in CONTINUE_FIELDS:
                raise ValueError(f"{job.label}: the prompt ends with an assistant prefix, which "
                                 f"server={self.server} cannot continue; use a server that can "
                                 "(vllm, sglang) or evalpack-completions")
            payload.update(CONTINUE_FIELDS[self.server])
        return payload

    def parse_answer(self, body) -> str:
        return _field(body, "choices", 0, "message", "content")


class _LocalTemplate:
    """Chat prompts rendered here, with `chat_template_file=` or the tokenizer's template."""

    def _init_template(self, chat_template_file: str | None) -> None:
        self.template = None
        if chat_template_file:
            with open(chat_template_file, encoding="utf-8") as fh:
                self.template = fh.read()
        elif getattr(self.tokenizer, "chat_template", None):
            self.template = self.tokenizer.chat_template

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        return self.template or ""

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True):
        # rendered per request in `prompt_text`, where a missing template is a clear error
        return JsonChatStr(json.dumps(chat_history, ensure_ascii=False))

    def prompt_text(self, job: Job) -> str:
        if not isinstance(job.context, JsonChatStr):
            return job.context
        if self.template is None:
            raise ValueError(f"{type(self).__name__}: chat prompts need the model's chat "
                             "template: give chat_template_file=<file.jinja> or tokenizer=")
        return render_chat(self.template, json.loads(job.context.prompt),
                           bos_token=getattr(self.tokenizer, "bos_token", None) or "",
                           eos_token=getattr(self.tokenizer, "eos_token", None) or "")


@register_model("evalpack-completions")
class ServedCompletions(_LocalTemplate, _TemplateAPIServing, LocalCompletionsAPI):
    """OpenAI-compatible text completions; chat prompts rendered locally."""

    def __init__(self, base_url=None, chat_template_file=None, seed=None, retry_delay=1.0,
                 request_interval=0.0, timeout=300, **kwargs) -> None:
        super().__init__(base_url=base_url, timeout=timeout, **kwargs)
        self._init_template(chat_template_file)
        self._init_template_serving(seed, retry_delay, request_interval, timeout)

    def build_payload(self, job: Job) -> dict:
        return {"model": self.model, "prompt": self.prompt_text(job), **self.options(job),
                "stop": stop_strings(job.gen_kwargs), "seed": job.seed}

    def parse_answer(self, body) -> str:
        return _field(body, "choices", 0, "text")


@register_model("evalpack-sglang")
class ServedSGLang(ServedCompletions):
    """SGLang's native `/generate`; generation only."""

    def build_payload(self, job: Job) -> dict:
        options = self.options(job)
        params = {"max_new_tokens": options.pop("max_tokens"), **options,
                  "stop": stop_strings(job.gen_kwargs), "sampling_seed": job.seed}
        return {"text": self.prompt_text(job), "sampling_params": params}

    def parse_answer(self, body) -> str:
        return _field(body, "text")

    def loglikelihood(self, requests_, disable_tqdm: bool = False):
        raise NotImplementedError("evalpack-sglang answers generation requests only")

    def loglikelihood_rolling(self, requests_, disable_tqdm: bool = False):
        raise NotImplementedError("evalpack-sglang answers generation requests only")


@register_model("answer-server")
class AnswerServer(ServedGeneration, LM):
    """POSTs `{"dataset", "prompt", "sample_id", **extra}` and reads the answer from the
    response's `answer_field`. Model args it does not know become the extra fields; with
    --apply_chat_template, `prompt` is the message list."""

    def __init__(self, base_url=None, answer_field: str = "answer", seed=None,
                 num_concurrent=1, max_retries=3, retry_delay=1.0, request_interval=0.0,
                 timeout=300, batch_size=None, max_batch_size=None, device=None,
                 **extra_fields) -> None:
        super().__init__()
        self._init_serving(url=base_url, seed=seed, num_concurrent=num_concurrent,
                           max_retries=max_retries, retry_delay=retry_delay,
                           request_interval=request_interval, timeout=timeout)
        self.answer_field = answer_field
        self.extra_fields = extra_fields

    @property
    def tokenizer_name(self) -> str:
        return f"answer-server:{self.url}"

    def chat_template(self, chat_template: bool | str = False) -> str:
        return "answer-server-json-messages"

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True):
        return JsonChatStr(json.dumps(chat_history, ensure_ascii=False))

    def build_payload(self, job: Job) -> dict:
        prompt = job.context
        if isinstance(prompt, JsonChatStr):
            prompt = json.loads(prompt.prompt)
        sample_id = f"{job.request.task_name}/{job.request.doc_id}/{job.repeat}"
        return {"dataset": job.request.task_name, "prompt": prompt, "sample_id": sample_id,
                **self.extra_fields}

    def parse_answer(self, body) -> str:
        return _field(body, self.answer_field)

    def loglikelihood(self, requests_, disable_tqdm: bool = False):
        raise NotImplementedError("answer-server answers generation requests only")

    def loglikelihood_rolling(self, requests_, disable_tqdm: bool = False):
        raise NotImplementedError("answer-server answers generation requests only")
