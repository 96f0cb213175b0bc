"""The `resumable` model: any lm-eval backend, with every completion logged as it arrives.

    --model resumable --model_args '{"model": "hf", "model_args": "pretrained=...",
                                     "log": "completions.jsonl"}'

lm-eval's `--use_cache` keys a request by its prompt and generation settings alone, so it never
reuses a sampled completion (the n repeats of a prompt share one key). This wrapper logs each
generated completion under that key, one JSON line each, and on a rerun answers the k-th
occurrence of a key with the k-th completion logged for it: a sampled task resumes from the
samples it already had, which are exchangeable draws. Only the missing ones reach the backend.

A completion is logged as soon as the backend reports it through lm-eval's cache hook (`hf` per
batch, lm-eval's API backends per request, `vllm` after the whole call, the pack's served
backends per request under their own per-repeat keys, which they look up here on a rerun:
they get every request), and otherwise when the backend returns. Log-likelihood requests go
to the backend uncached.
"""

from __future__ import annotations

import json
import threading
from collections import Counter, defaultdict
from pathlib import Path

from lm_eval.api.model import LM, CacheHook, hash_args
from lm_eval.api.registry import get_model, register_model
from lm_eval.utils import simple_parse_args_string

ATTR = "generate_until"


def read_log(path: Path) -> dict[str, list[str]]:
    """Logged completions by request key, in logged order. A torn last line (the writer was
    killed mid-write) is skipped."""
    logged: dict[str, list[str]] = defaultdict(list)
    if not path.is_file():
        return logged
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        logged[row["key"]].append(row["completion"])
    return logged


def split_cached(keys: list[str], logged: dict[str, list[str]]) -> tuple[dict[int, str], list[int]]:
    """({request index: logged completion}, indices still to generate): the k-th request with a
    key takes the k-th completion logged under it."""
    seen: Counter = Counter()
    cached, missing = {}, []
    for index, key in enumerate(keys):
        if seen[key] < len(logged.get(key, [])):
            cached[index] = logged[key][seen[key]]
        else:
            missing.append(index)
        seen[key] += 1
    return cached, missing


class CompletionLog(CacheHook):
    """Appends `{"key", "completion"}` lines, written one by one, and is the backend's cache
    hook: whatever the backend reports through it (`add_partial`) is kept at once. A backend that
    keeps its own keys in lm-eval's cache (the pack's served backends key each repeat by its
    seed) finds them here too: `dbdict` is this log, with the `get` and `commit` such a backend
    uses, so it resumes as it would from `--use_cache`."""

    def __init__(self, path: Path) -> None:
        super().__init__(None)
        self.dbdict = self
        self.path = path
        self.lock = threading.Lock()  # backends may report from several threads
        self.added: Counter = Counter()  # keys logged during the current call
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size:
            with open(path, "rb+") as fh:  # end a torn last line, so the next one stands alone
                fh.seek(-1, 2)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")
        self.logged = read_log(path)

    def append(self, key: str, completion: str) -> None:
        with self.lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": key, "completion": completion}) + "\n")
            self.logged[key].append(completion)
            self.added[key] += 1

    def add_partial(self, attr: str, req, res) -> None:
        if isinstance(res, str):
            self.append(hash_args(attr, req), res)

    def get(self, key: str, default: str | None = None) -> str | None:
        """The completion logged last under `key` (the dict view a backend's own keys use)."""
        completions = self.logged.get(key)
        return completions[-1] if completions else default

    def commit(self) -> None:
        """Nothing to do: every line is written as it comes."""


@register_model("resumable")
class ResumableLM(LM):
    def __init__(
        self, model: str, log: str, model_args: str | dict | None = None, **additional_config
    ) -> None:
        super().__init__()
        if not isinstance(model_args, dict):
            model_args = simple_parse_args_string(model_args or "")
        # lm-eval hands every model the run's --batch_size / --device; the checkpoint's own
        # model_args win (lm-eval itself would fail on both with "multiple values")
        run_level = {k: v for k, v in additional_config.items() if k not in model_args}
        self.inner = get_model(model).create_from_arg_obj(model_args, run_level)
        self.log = CompletionLog(Path(log))
        self.inner.set_cache_hook(self.log)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        if getattr(self.inner, "keys_each_repeat", False):
            # the pack's served backends find their completions in the log by (doc, repeat)
            return self.inner.generate_until(requests)
        keys = [hash_args(ATTR, request.args) for request in requests]
        cached, missing = split_cached(keys, self.log.logged)
        answers = dict(cached)
        if missing:
            self.log.added.clear()
            generated = self.inner.generate_until([requests[i] for i in missing])
            # what the backend did not report under the request's own key as it went
            unlogged = Counter(keys[i] for i in missing) - self.log.added
            for index, text in zip(missing, generated, strict=True):
                answers[index] = text
                if unlogged[keys[index]] > 0:
                    unlogged[keys[index]] -= 1
                    self.log.append(keys[index], text)
        return [answers[i] for i in range(len(requests))]

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        return self.inner.loglikelihood(requests)

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        return self.inner.loglikelihood_rolling(requests)

    # Everything else is the backend's.
    @property
    def rank(self):
        return self.inner.rank

    @property
    def world_size(self):
        return self.inner.world_size

    @property
    def device(self):
        return self.inner.device

    @property
    def tokenizer_name(self) -> str:
        return self.inner.tokenizer_name

    def chat_template(self, chat_template: bool | str = False):
        return self.inner.chat_template(chat_template)

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True):
        return self.inner.apply_chat_template(chat_history, add_generation_prompt)

    def all_gather(self, tensor):
        return self.inner.all_gather(tensor)

    def gather_object(self, obj, dst=0):
        return self.inner.gather_object(obj, dst)

    def barrier(self) -> None:
        self.inner.barrier()

    def __getattr__(self, name: str):
        if name == "inner":  # not set yet: construction failed part way
            raise AttributeError(name)
        return getattr(self.inner, name)
