"""The `resumable-pooled` model: `resumable` with the wrapped model loaded once per process.

A leaderboard worker (`evalpack.leaderboard.worker`) runs a checkpoint's tasks one after the other
(a served model's side by side), each an ordinary `evalpack run` under this model name; every
run that names the same model and arguments gets the model the first one loaded.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from pathlib import Path
from typing import ClassVar

from lm_eval.api.model import LM
from lm_eval.api.registry import get_model, register_model
from lm_eval.utils import simple_parse_args_string

from .registry import POOLED
from .resume import CompletionLog, ResumableLM
from .slots import generation_done, reached_model


@register_model(POOLED)
class PooledResumableLM(ResumableLM):
    """`resumable`, with the wrapped model built once per process and shared by every run
    that names the same model and arguments (a failed load fails them all at once)."""

    loaded: ClassVar[dict[str, LM]] = {}
    load_errors: ClassVar[dict[str, BaseException]] = {}
    on_load = None  # called with (key, seconds) after each load
    load_lock = threading.Lock()  # pairs run side by side (`stream`) load it once too

    def __init__(
        self, model: str, log: str, model_args: str | dict | None = None, **additional_config
    ) -> None:
        LM.__init__(self)
        if not isinstance(model_args, dict):
            model_args = simple_parse_args_string(model_args or "")
        run_level = {k: v for k, v in additional_config.items() if k not in model_args}
        key = json.dumps([model, model_args, run_level], sort_keys=True, default=str)
        with self.load_lock:
            self.inner = self.shared(key, model, model_args, run_level)
        if getattr(self.inner, "keys_each_repeat", False):
            # a served backend, used by pairs side by side: each pair's own copy holds that
            # pair's completion log; the copies share the connection settings and `slots`
            self.inner = copy.copy(self.inner)
        self.log = CompletionLog(Path(log))
        self.inner.set_cache_hook(self.log)

    def shared(self, key: str, model: str, model_args: dict, run_level: dict) -> LM:
        """The process's model for `key`, built on first use."""
        if key in self.load_errors:
            raise self.load_errors[key]
        if key not in self.loaded:
            start = time.monotonic()
            try:
                self.loaded[key] = get_model(model).create_from_arg_obj(model_args, run_level)
            except Exception as exc:
                self.load_errors[key] = exc
                raise
            if PooledResumableLM.on_load:
                PooledResumableLM.on_load(model, time.monotonic() - start)
        return self.loaded[key]

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        reached_model()
        answers = super().generate_until(requests, disable_tqdm)
        generation_done()
        return answers

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        reached_model()
        scores = super().loglikelihood(requests, disable_tqdm)
        generation_done()
        return scores
