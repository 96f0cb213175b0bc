"""torch, loaded only by the runs that use it.

lm-eval imports torch (about 1.1 s of CPU) in every run for two things: to seed torch's
generator (`set_torch_seed`) and for the environment report it saves with every result
(torch's `collect_env`, 0.35 s more, a few subprocesses). A run against a served model, or a
replay, never uses torch otherwise. With `install()`:

* the seed goes to torch at once if it is loaded, else the moment it is imported (an import
  hook): its generator is in the state lm-eval gave it whenever anything first uses it;
* the report is computed as lm-eval computes it by the first run, then read from the pack's
  cache folder (`index_cache.cache_dir`) while its key holds: this interpreter, the
  modification times of its site-packages folders (an install or upgrade changes them), the
  machine (host name, boot id), the environment variables that decide what torch and
  collect_env find (CUDA, ROCm, conda, PATH...), and for an hour at most (collect_env also
  reports the compilers and the OS, which the key does not cover). A run in a process that
  has the report already, or loaded torch anyway, does not read it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.util
import json
import os
import re
import site
import socket
import sys
import threading
import time
from pathlib import Path

import lm_eval.evaluator
import lm_eval.utils

from . import index_cache

REPORT_FORMAT = 1
REPORT_LIFETIME = 3600.0  # seconds
# what decides which devices, drivers and tools collect_env finds (torch's device discovery too)
REPORT_VARIABLES = re.compile(
    r"(CUDA|CUDNN|NVIDIA|NCCL|HIP|ROCR|ROCM|HSA|PYTORCH|TORCH|CONDA|XPU|ZE|ONEAPI|SYCL)_.*"
    r"|PATH|LD_LIBRARY_PATH|CONDA_EXE"
)

_lm_eval_add_env_info = lm_eval.evaluator.add_env_info
_lock = threading.Lock()
_reports: dict[str, str] = {}  # this process's, by key


class SeedOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when torch is first imported, its module is seeded with `seed`
    right after it has run (then this finder leaves `sys.meta_path`)."""

    seed: int = 0

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_then_seed(module) -> None:
            run_module(module)
            module.manual_seed(self.seed)

        spec.loader.exec_module = exec_then_seed
        return spec


_seeder = SeedOnImport()


def set_torch_seed(seed: int) -> None:
    """lm-eval's `set_torch_seed`, without importing torch for it."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
        return
    with _lock:
        _seeder.seed = seed
        if _seeder not in sys.meta_path:
            sys.meta_path.insert(0, _seeder)


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def report_key() -> dict:
    folders = [*site.getsitepackages(), site.getusersitepackages()]
    return {
        "format": REPORT_FORMAT,
        "python": sys.executable,
        "version": sys.version,
        "site": {f: os.stat(f).st_mtime_ns for f in folders if os.path.isdir(f)},
        "host": socket.gethostname(),
        "boot": boot_id(),
        "variables": {k: v for k, v in sorted(os.environ.items()) if REPORT_VARIABLES.fullmatch(k)},
    }


def report_file(name: str) -> Path:
    return index_cache.cache_dir() / f"environment_report-{name}.json"


def cached_report(name: str, key: dict) -> str | None:
    """The report saved under `key` within its lifetime, else None."""
    try:
        stored = json.loads(report_file(name).read_text(encoding="utf-8"))
        fresh = 0 <= time.time() - stored["written"] < REPORT_LIFETIME
        return stored["report"] if fresh and stored["key"] == key else None
    except (OSError, ValueError, TypeError, KeyError):
        return None


def save_report(name: str, key: dict, report: str) -> None:
    record = {"key": key, "written": time.time(), "report": report}
    index_cache.write_json(report_file(name), record, "the environment report")


def add_env_info(storage: dict) -> None:
    """lm-eval's `add_env_info`, with the report this process or the cache already has."""
    with _lock:
        key = report_key()
        name = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
        known = _reports.get(name) or cached_report(name, key)
        if known is None:
            _lm_eval_add_env_info(storage)
            known = storage["pretty_env_info"]
            if known.startswith("PyTorch version:"):  # not the text of an error
                save_report(name, key, known)
        else:
            with torch_unseen():
                _lm_eval_add_env_info(storage)
            storage["pretty_env_info"] = known
        _reports[name] = known


@contextlib.contextmanager
def torch_unseen():
    """Within: lm-eval's `add_env_info` takes torch as absent and leaves it unloaded (it is
    the only caller of `is_torch_available` left, and runs under the lock above)."""
    available = lm_eval.utils.is_torch_available
    lm_eval.utils.is_torch_available = lambda: False
    try:
        yield
    finally:
        lm_eval.utils.is_torch_available = available


def install() -> None:
    """lm-eval's run path seeds torch and reports the environment as above; idempotent."""
    lm_eval.evaluator.set_torch_seed = set_torch_seed
    lm_eval.evaluator.add_env_info = add_env_info
