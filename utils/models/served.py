"""Served-model machinery: requests over HTTP, correct for sampled evaluations (the backends
themselves are in `backends.py`).

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
from lm_eval.api.model import hash_args
from tqdm import tqdm

from .requests import cut_at_stops, repeat_numbers, stop_strings

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
    return [
        Job(index, request, repeat, request_seed(base_seed, request.task_name, request.doc_id, repeat))
        for index, (request, repeat) in enumerate(zip(requests_, repeat_numbers(requests_)))
    ]



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
    # these backends skip what they already have themselves; `evalpack.models.resume` hands them every
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


def field(body, *path):
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


