"""The AlpacaEval judge's client (`evalpack.scoring.alpaca_judge` makes the judgements with it):
an OpenAI-compatible judge model, concurrent chat-completion requests, retries with backoff on
429/5xx and network errors, a time limit per request, a stop when the judge is down, and an
on-disk cache of every judgement received.

The retry rules, backoff and error types are the served models' (`served`, `failures`); the
judge adds the cache and the stop. The API key is read from
the environment variable the settings name, sent as a bearer token and never logged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import requests

from ..models.failures import retryable
from ..models.http import BadResponse, post_json

log = logging.getLogger(__name__)

ENV_PREFIX = "EVALPACK_JUDGE_"
METADATA_PREFIX = "judge_"


def default_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "evalpack", "judge_cache.sqlite")


@dataclass(frozen=True)
class JudgeSettings:
    """Where the judge is and how to talk to it. `model` None means the annotator config's."""

    base_url: str = "https://api.openai.com/v1"
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    max_retries: int = 5
    retry_delay: float = 1.0
    timeout: float = 120.0
    cache: str = dataclasses.field(default_factory=default_cache)  # "" or "none": no cache
    abort_after: int = 5  # this many judgements failing in a row: the judge is down

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    @classmethod
    def resolve(cls, metadata: dict, environ=None) -> JudgeSettings:
        """Settings from `judge_<field>` keys of the run's metadata, else `EVALPACK_JUDGE_<FIELD>`
        environment variables, else the defaults. An unknown `judge_` key is an error."""
        environ = os.environ if environ is None else environ
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(
            k
            for k in metadata
            if k.startswith(METADATA_PREFIX) and k[len(METADATA_PREFIX) :] not in fields
        )
        if unknown:
            raise ValueError(
                f"unknown judge setting(s) {unknown} in --metadata; known: "
                f"{sorted(METADATA_PREFIX + name for name in fields)}"
            )
        values = {}
        for name, field in fields.items():
            raw = metadata.get(METADATA_PREFIX + name, environ.get(ENV_PREFIX + name.upper()))
            if raw is not None:
                values[name] = _convert(raw, field.type, name)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", values.get("api_key_env", "X")):
            # never echo the value: it may be the key itself
            raise ValueError(
                "judge_api_key_env must be the name of an environment variable "
                "holding the judge's API key, not the key itself"
            )
        return cls(**values)


OPENAI_URL = JudgeSettings.base_url
HOW_TO_CONFIGURE = (
    'AlpacaEval needs a judge: --metadata \'{"judge_base_url": '
    '"http://HOST:PORT/v1", "judge_model": "NAME"}\' (a served model that '
    "returns logprobs; or EVALPACK_JUDGE_BASE_URL), or OpenAI's API with the key "
    'in OPENAI_API_KEY (docs/first_leaderboard.md, "The judge")'
)


def unconfigured(settings: JudgeSettings, environ=None) -> str | None:
    """Why no judge request can be sent (no judge named and no key for OpenAI's), or None."""
    environ = os.environ if environ is None else environ
    if settings.base_url.rstrip("/") == OPENAI_URL and not environ.get(settings.api_key_env):
        return f"no judge configured and no key in {settings.api_key_env}. {HOW_TO_CONFIGURE}"
    return None


def _convert(raw, type_name: str, name: str):
    try:
        if type_name == "int":
            return int(raw)
        if type_name == "float":
            return float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"judge setting {name}: expected a {type_name}, got {raw!r}") from None
    return str(raw)


class JudgeUnavailable(RuntimeError):
    """The judge failed so many requests in a row that the rest were not sent."""


@dataclass
class Judgement:
    """One request's outcome: the judge's first choice (with `total_tokens`), or an error."""

    choice: dict | None = None
    error: str | None = None
    cached: bool = False


class JudgeCache:
    """Judgements on disk (SQLite), keyed by the sha256 of the judge's URL and the request
    payload (model, messages, decoding settings): local servers often share a model name."""

    def __init__(self, path: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, choice TEXT)"
        )
        self._db.commit()

    @staticmethod
    def key(url: str, payload: dict) -> str:
        text = json.dumps([url, payload], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT choice FROM judgements WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, choice: dict) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO judgements VALUES (?, ?)",
                (key, json.dumps(choice, ensure_ascii=False)),
            )
            self._db.commit()  # at once: an interrupted run keeps what it paid for

    def close(self) -> None:
        self._db.close()


def first_choice(body) -> dict:
    """The response's first choice with its token log-probabilities and `total_tokens`
    (what the package's OpenAI decoder hands its parser), or BadResponse."""
    try:
        choice = dict(body["choices"][0])
        content = choice["logprobs"]["content"]
        assert isinstance(content, list) and content and "top_logprobs" in content[0]
    except (KeyError, IndexError, TypeError, AssertionError):
        error = BadResponse(
            f"the judge gave no log-probabilities (no choices[0].logprobs."
            f"content[0].top_logprobs in {json.dumps(body)[:200]}): use a "
            "judge server that returns logprobs"
        )
        error.final = True  # the same server answers the same way on a retry
        raise error from None
    usage = body.get("usage") or {}
    choice["total_tokens"] = usage.get("total_tokens", 0)
    choice["text"] = (choice.get("message") or {}).get("content") or " "
    return choice


class JudgeClient:
    """Sends judge requests (chat-completion payloads) and returns one Judgement per payload,
    in order. Cached judgements are not sent again; `sent` counts requests actually sent.
    `read_answer` turns a response body into the cached choice (or raises BadResponse)."""

    read_answer = staticmethod(first_choice)

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self.cache = JudgeCache(settings.cache) if settings.cache not in ("", "none") else None
        self.sent = 0
        self._failures_in_a_row = 0
        self._count_lock = threading.Lock()

    def judge_all(self, payloads: list[dict]) -> list[Judgement]:
        keys = [JudgeCache.key(self.settings.url, p) for p in payloads]
        results = [self._cached(key) for key in keys]
        pending = [i for i, result in enumerate(results) if result is None]
        pool = ThreadPoolExecutor(max(1, self.settings.concurrency))
        try:
            futures = {pool.submit(self._request, payloads[i]): i for i in pending}
            for future in as_completed(futures):
                i = futures[future]
                results[i] = self._settle(future, keys[i])
                if self._failures_in_a_row >= self.settings.abort_after:
                    raise JudgeUnavailable(self._down_message(results[i].error))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return results

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    def _cached(self, key: str) -> Judgement | None:
        choice = self.cache.get(key) if self.cache is not None else None
        return Judgement(choice=choice, cached=True) if choice is not None else None

    def _settle(self, future, key: str) -> Judgement:
        try:
            choice = future.result()
        except (requests.RequestException, BadResponse) as exc:
            self._failures_in_a_row += 1
            log.warning(
                "judge request failed after %d attempt(s): %s", getattr(exc, "attempts", 1), exc
            )
            return Judgement(error=str(exc))
        self._failures_in_a_row = 0
        if self.cache is not None:
            self.cache.put(key, choice)
        return Judgement(choice=choice)

    def _down_message(self, last_error: str | None) -> str:
        s = self.settings
        return (
            f"judge {s.url} (model {s.model or 'from the annotator config'}) is not "
            f"answering: {self._failures_in_a_row} requests in a row failed (up to "
            f"{s.max_retries + 1} attempts each); last error: {last_error}"
        )

    def _request(self, payload: dict) -> dict:
        attempt = 0
        while True:
            try:
                return self.read_answer(self._post(payload))
            except (requests.RequestException, BadResponse) as exc:
                exc.attempts = attempt + 1
                if attempt == self.settings.max_retries or not retryable(exc):
                    raise
                log.info("judge attempt %d failed (%s); retrying", attempt + 1, exc)
            attempt += 1
            time.sleep(self.settings.retry_delay * 2 ** (attempt - 1))

    def _post(self, payload: dict):
        with self._count_lock:
            self.sent += 1
        return post_json(self.settings.url, payload, self._headers(), self.settings.timeout)

    def _headers(self) -> dict:
        key = os.environ.get(self.settings.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}
