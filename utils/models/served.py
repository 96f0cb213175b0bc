"""Served-model machinery: requests over HTTP, correct for sampled evaluations (the backends
themselves are in `backends.py`).

What lm-eval's own API backends get wrong, and these do not:

* Every (task, doc, repeat) gets its own seed, derived from the base seed (`seed=` in
  `--model_args`, else drawn from Python's `random`, which lm-eval seeds with `--seed` just
  before building the model), so repeats of a prompt are distinct samples and a rerun with the
  same `--seed` sends the same seeds.
* One request per repeat: repeats never collapse into one cached or deduplicated request.
* Every stop string is enforced client-side (servers may cap or ignore them). `stop` is sent
  only when there is one (some servers fail on `"stop": []`); OpenAI gets at most 4, the
  others all of them.
* `max_tokens` is capped by the model's context (`max_model_len=`, else what the server lists
  under /v1/models), minus the prompt where the backend can count it; OLMES's "do not cut
  off" budgets (131,072 and up) are 32,768 tokens where the context is unknown (`budget`); a
  server that refuses a request as too long for its context, counting the prompt (vLLM,
  SGLang, OpenAI wording), is asked again for what is left. Said once.
* Greedy (`do_sample: false` or temperature 0) is sent as temperature 0 with no top_p/top_k/min_p.
* A trailing assistant message (lm-eval's `gen_prefix`) is continued, not answered: vLLM gets
  `continue_final_message: true` + `add_generation_prompt: false`, SGLang
  `continue_final_message: true`; OpenAI cannot continue one, so such a request is refused.
* A request that fails (server down, timeout, 5xx, malformed JSON, missing field) is retried
  with exponential backoff, then the run stops with an error naming task, doc, repeat, URL and
  the last error. Every completion received is stored at once in lm-eval's `--use_cache`
  database, under a key that includes the repeat and seed, so rerunning with the same
  `--use_cache` only regenerates what is missing. No failure becomes a silent empty answer.
  A client error (4xx) is not retried; the message counts the attempts made and, for fields
  the server refused, names them and what to use instead.
* Ctrl-C sends nothing more, keeps the answers that arrive within a few seconds (a second
  Ctrl-C stops waiting), stores them, and raises `ServedInterrupted` saying what a rerun sends.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import requests
from lm_eval.api.model import hash_args
from tqdm import tqdm

from ..core.text import cut_at_stops
from . import budget
from .arguments import backend_label
from .dispatch import Dispatch, Failed
from .endpoints import not_found_hint
from .failures import attempts_text, error_kind, fitting_max_tokens, refusal_hint, retryable
from .http import BadResponse, post_json, reported_context
from .outage import Outage, is_connection_failure
from .requests import default_base_seed, repeat_numbers, request_seed, stop_strings
from .slots import Slots, stream_priority
from .wire import CONTINUE_FIELDS

log = logging.getLogger(__name__)

CACHE_ATTR = "evalpack-served"  # cache-key namespace, apart from lm-eval's per-args keys
INTERRUPT_GRACE = 3.0  # seconds to collect answers in flight after Ctrl-C


class ServedRequestError(RuntimeError):
    """Requests that still failed after every retry."""


class ServedInterrupted(KeyboardInterrupt):
    """Ctrl-C during a served run, after keeping what arrived; says what a rerun sends."""


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
        return f"task {self.request.task_name} doc {self.request.doc_id} repeat {self.repeat}"

    def cache_args(self) -> tuple:
        return (self.context, self.gen_kwargs, self.repeat, self.seed)


def plan_jobs(requests_: list, base_seed: int) -> list[Job]:
    """One job per listed request; lm-eval lists the same Instance once per repeat."""
    return [
        Job(
            index,
            request,
            repeat,
            request_seed(base_seed, request.task_name, request.doc_id, repeat),
        )
        for index, (request, repeat) in enumerate(zip(requests_, repeat_numbers(requests_)))
    ]


class Pacer:
    """Spaces request starts at least `interval` seconds apart, across threads."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self, dispatch: Dispatch | None = None) -> None:
        """Wait for this request's turn; a stopped `dispatch` cuts the wait short."""
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if dispatch is None:
            time.sleep(max(0.0, start - now))
        else:
            dispatch.sleep(start - now)
            dispatch.check()


class ServedGeneration:
    """`generate_until` over HTTP, one request per (doc, repeat). Subclasses build the payload
    (`build_payload`) and read the completion out of the response (`parse_answer`)."""

    # Each (doc, repeat) has its own seed and its own key in the cache behind `cache_hook`, so
    # these backends skip what they already have themselves; `evalpack.models.resume` hands them every
    # request (a subset would be renumbered from repeat 0 and get the old seeds again).
    keys_each_repeat = True

    def _init_serving(
        self,
        *,
        url: str | None,
        seed: int | None,
        num_concurrent: int,
        max_retries: int,
        retry_delay: float,
        request_interval: float,
        timeout: float,
        max_model_len: int | None = None,
    ) -> None:
        if not url:
            raise ValueError(f"{backend_label(self)} needs base_url=<http://host:port/path>")
        self.url = url
        self.base_seed = default_base_seed() if seed is None else int(seed)
        self.num_concurrent = max(1, int(num_concurrent))
        # the model's requests in flight, shared by runs that use it at once (`slots`)
        self.slots = Slots(self.num_concurrent)
        self.retries = int(max_retries)
        self.retry_delay = float(retry_delay)
        self.timeout = float(timeout)
        self.pacer = Pacer(float(request_interval))
        self.max_model_len = None if max_model_len is None else int(max_model_len)
        self._context_source = "given as max_model_len=" if max_model_len else None
        self._cap_noted = False
        self.outage = Outage(url)

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
        if self.cache_hook.dbdict is not None:
            log.info(
                "%d of %d completions found in the completion cache; sending %d requests",
                len(jobs) - len(pending),
                len(jobs),
                len(pending),
            )
        self._check_context()
        # built before anything is sent, so a prompt the server cannot take fails up front
        payloads = {job.index: self.build_payload(job) for job in pending}
        failures: list[tuple[Job, Exception]] = []
        priority = stream_priority(sum(p.get("max_tokens", 1) for p in payloads.values()))
        dispatch = Dispatch(
            lambda job, d: self._answer(job, payloads[job.index], d, priority),
            pending,
            self.num_concurrent,
            (requests.RequestException, BadResponse),
        )
        with tqdm(total=len(pending), desc=self.url, disable=disable_tqdm) as bar:
            try:
                self._collect(dispatch.results(), answers, failures, bar)
            except KeyboardInterrupt:
                raise self._interrupted(dispatch, answers, failures, bar) from None
            finally:
                dispatch.stop()  # after an error too: nothing more is sent
        self._flush_cache()
        given_up = [exc for _, exc in failures if getattr(exc, "final", False)]
        if given_up:  # the server is gone: one line, not one per request
            received = sum(answer is not None for answer in answers)
            raise ServedRequestError(
                f"{given_up[0]}; {received} of {len(jobs)} completions "
                f"were received; {self._resume_hint()}"
            )
        if failures:
            raise ServedRequestError(self._failure_message(failures, len(jobs)))
        return answers

    def _collect(self, results, answers: list, failures: list, bar) -> None:
        """Store each answer as it arrives (in `answers` and the completion cache)."""
        for job, outcome in results:
            bar.update(1)
            if isinstance(outcome, Failed):
                failures.append((job, outcome.error))
                continue
            answers[job.index] = outcome
            self.cache_hook.add_partial(CACHE_ATTR, job.cache_args(), outcome)

    def _interrupted(self, dispatch: Dispatch, answers: list, failures: list, bar):
        """Ctrl-C: send nothing more, keep what arrives within `INTERRUPT_GRACE` seconds (a
        second Ctrl-C stops waiting), store it, and say what a rerun will send."""
        dispatch.stop()
        log.warning(
            "Ctrl-C: sending nothing more; waiting up to %g s for the %d answers in flight "
            "(Ctrl-C again to stop waiting)",
            INTERRUPT_GRACE,
            dispatch.running,
        )
        try:
            self._collect(dispatch.results(timeout=INTERRUPT_GRACE), answers, failures, bar)
        except KeyboardInterrupt:
            pass
        self._flush_cache()
        have = sum(answer is not None for answer in answers)
        kept = (
            f"rerun the same command to send only the other {len(answers) - have}"
            if self.cache_hook.dbdict is not None
            else "they are not kept: run with --use_cache <path> to keep completions across reruns"
        )
        return ServedInterrupted(
            f"interrupted: {have} of {len(answers)} completions from {self.url} are in hand; {kept}"
        )

    def _check_context(self) -> None:
        """The model's context length: `max_model_len=`, else what the server reports (vLLM
        and SGLang list `max_model_len` under /v1/models), looked up once."""
        if self._context_source is not None:
            return
        self._context_source = "unknown"
        reported = reported_context(self.url, getattr(self, "model", None), self.request_headers())
        if reported:
            self.max_model_len, self._context_source = reported, "reported by the server"

    def capped(self, options: dict, prompt_tokens: int | None = None) -> dict:
        """`options` with `max_tokens` cut to what the model's context leaves after the prompt
        (when the prompt can be counted here), a "do not cut off" budget to `budget.FALLBACK`
        where the context is not known (`budget`); said once per model."""
        tokens, why = budget.resolve(
            options["max_tokens"], self.max_model_len, prompt_tokens, self._context_source
        )
        if why is None:
            return options
        self._note_cap(options["max_tokens"], tokens, why)
        return {**options, "max_tokens": tokens}

    def _note_cap(self, asked: int, room: int, why: str) -> None:
        if not self._cap_noted:
            log.warning(
                "%s: the task asks for up to %d new tokens; capped at %d, %s",
                self.url,
                asked,
                room,
                why,
            )
            self._cap_noted = True

    def _cached(self, job: Job) -> str | None:
        store = self.cache_hook.dbdict
        if store is None:
            return None
        return store.get(hash_args(CACHE_ATTR, job.cache_args()))

    def _flush_cache(self) -> None:
        if self.cache_hook.dbdict is not None:
            self.cache_hook.dbdict.commit()

    def _failure_message(self, failures: list[tuple[Job, Exception]], total: int) -> str:
        """One line: how many failed, the first failure in full, what a rerun does; every
        failure is logged (shown with --verbose)."""
        for job, exc in failures:
            log.debug("%s: %s (%s)", job.label, exc, attempts_text(exc))
        job, exc = failures[0]
        kinds = len({error_kind(e) for _, e in failures})
        others = f" ({kinds} different errors; --verbose lists them)" if kinds > 1 else ""
        resume = self._resume_hint()
        error = " ".join(str(exc).split())  # one line, whatever the server's body held
        return (
            f"{len(failures)} of {total} requests to {self.url} failed{others}; first: "
            f"{job.label}: {error} ({attempts_text(exc)}){refusal_hint(exc, CONTINUE_FIELDS)}"
            f"{not_found_hint(backend_label(self), self.url, exc)}; "
            f"{total - len(failures)} completions were received; {resume}"
        )

    def _resume_hint(self) -> str:
        return (
            "rerun the same command to send only the failed ones (the others are in the "
            "completion cache)"
            if self.cache_hook.dbdict is not None
            else "run with --use_cache <path> to keep completions across reruns"
        )

    def _answer(self, job: Job, payload: dict, dispatch: Dispatch, priority=(0, 0)) -> str:
        """The completion for one job, cut at its stop strings; retried with backoff. The
        exception raised at the end carries how many attempts were made."""
        attempt = 0
        while True:
            try:
                with self.slots.held(priority, lambda: dispatch.stopped) as held:
                    if not held:  # stopped while waiting for a slot
                        dispatch.check()
                    answer = self.parse_answer(self._post(payload, dispatch))
                self.outage.answered()
                return cut_at_stops(answer, stop_strings(job.gen_kwargs))
            except (requests.RequestException, BadResponse) as exc:
                exc.attempts, exc.payload_keys = attempt + 1, list(payload)
                room = fitting_max_tokens(exc)
                if room is not None and 0 < room < payload.get("max_tokens", 0):
                    # the server counted the prompt: ask again for what its context leaves
                    self._note_cap(payload["max_tokens"], room, "the server's count")
                    payload = {**payload, "max_tokens": room}
                    continue
                if self.outage.failed(exc):  # unreachable for too long: nothing more is sent
                    dispatch.stop()
                    raise
                if attempt == self.retries or not retryable(exc):
                    raise
                # a connection failure is said once, by the outage
                log.log(
                    logging.DEBUG if is_connection_failure(exc) else logging.WARNING,
                    "%s, attempt %d to %s failed (%s); retrying",
                    job.label,
                    attempt + 1,
                    self.url,
                    exc,
                )
            attempt += 1
            dispatch.sleep(self.retry_delay * 2 ** (attempt - 1))

    def _post(self, payload: dict, dispatch: Dispatch | None = None):
        self.pacer.wait(dispatch)
        return post_json(self.url, payload, self.request_headers(), self.timeout)
