"""torch, loaded only by the runs that use it.

lm-eval imports torch (about 1.1 s of CPU) in every run for two things: to seed torch's
generator (`set_torch_seed`) and for the environment report it saves with every result
(torch's `collect_env`, 0.35 s more, a few subprocesses). A run against a served model, or a
replay, never uses torch otherwise. With `install()`:

* the seed goes to torch at once if it is loaded (or being loaded by another thread: then
  after it is), else the moment it is imported (an import hook): its generator is in the
  state lm-eval gave it whenever anything first uses it;
* the report is computed as lm-eval computes it by the first run, then read from the pack's
  cache folder (`index_file.cache_dir`) while its key holds: this interpreter, the
  modification times of its site-packages folders (an install or upgrade changes them), the
  machine (host name, boot id) and the GPU device nodes it shows (a container's), the
  environment variables that decide what torch and collect_env find (CUDA, ROCm, conda, PATH,
  PYTHONPATH...), and for an hour at most (collect_env also reports the compilers and the OS,
  which the key does not cover). A process computes or reads it once. The report's
  `transformers_version` (lm-eval imports transformers for it, 0.2 s) is then read from the
  installed distribution's metadata: the same string.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.metadata
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

from . import index_file

REPORT_FORMAT = 1
REPORT_LIFETIME = 3600.0  # seconds
# what decides which devices, drivers and tools collect_env finds (torch's device discovery too)
REPORT_VARIABLES = re.compile(
    r"(CUDA|CUDNN|NVIDIA|NCCL|HIP|ROCR|ROCM|HSA|PYTORCH|TORCH|CONDA|XPU|ZE|ONEAPI|SYCL)_.*"
    r"|PATH|LD_LIBRARY_PATH|PYTHONPATH|PYTHONHOME|PYTHONUSERBASE"
)
DEVICE_NODES = ("nvidia", "kfd", "dri")  # in /dev: the GPUs a container was given

_lm_eval_add_env_info = lm_eval.evaluator.add_env_info
_lock = threading.Lock()
_reports: dict[str, str] = {}  # this process's, by key


class SeedOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: it hands on torch's spec as the finders after it find it, its
    loader made to seed the module with `seed` right after the module has run; this finder
    leaves `sys.meta_path` then. A lookup that imports nothing (`importlib.util.find_spec`,
    as transformers checks for torch) leaves it in place."""

    seed: int = 0

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        spec = next(filter(None, (find(name, path, target) for find in self.other_finders())), None)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_then_seed(module) -> None:
            run_module(module)
            module.manual_seed(self.seed)
            with contextlib.suppress(ValueError):  # another thread's import may have run it
                sys.meta_path.remove(self)

        spec.loader.exec_module = exec_then_seed
        return spec

    def other_finders(self):
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is not self and find is not None:
                yield find


_seeder = SeedOnImport()
_seeding = threading.Lock()  # held only while `sys.meta_path` is changed, never over an import


def set_torch_seed(seed: int) -> None:
    """lm-eval's `set_torch_seed`, without importing torch for it."""
    if "torch" not in sys.modules:
        _seeder.seed = seed
        with _seeding:
            if _seeder not in sys.meta_path:
                sys.meta_path.insert(0, _seeder)
        if "torch" not in sys.modules:  # else another thread began importing it meanwhile
            return
    import torch  # loaded, or being loaded by another thread: this waits until it is

    torch.manual_seed(seed)


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def device_nodes() -> list[str]:
    try:
        return sorted(name for name in os.listdir("/dev") if name.startswith(DEVICE_NODES))
    except OSError:
        return []


def modified(folder: str) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:  # none (a user site-packages folder seldom exists)
        return None


def report_key() -> dict:
    folders = [*site.getsitepackages(), site.getusersitepackages()]
    return {
        "format": REPORT_FORMAT,
        "python": sys.executable,
        "version": sys.version,
        "site": {folder: modified(folder) for folder in folders},
        "host": socket.gethostname(),
        "boot": boot_id(),
        "devices": device_nodes(),
        "variables": {k: v for k, v in sorted(os.environ.items()) if REPORT_VARIABLES.fullmatch(k)},
    }


def report_file(name: str) -> Path:
    return index_file.cache_dir() / f"environment_report-{name}.json"


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
    index_file.write_json(report_file(name), record, "the environment report")


def add_env_info(storage: dict) -> None:
    """lm-eval's `add_env_info`, with the report this process or the cache already has."""
    with _lock:
        key = report_key()
        name = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
        known = _reports.get(name) or cached_report(name, key)
        if known is None:
            _lm_eval_add_env_info(storage)
            if storage["pretty_env_info"].startswith("PyTorch version:"):  # not an error's text
                _reports[name] = storage["pretty_env_info"]
                save_report(name, key, storage["pretty_env_info"])
            return
        with torch_unseen():
            _lm_eval_add_env_info(storage)
        storage["pretty_env_info"] = _reports[name] = known
        storage["transformers_version"] = transformers_version()


def transformers_version() -> str:
    """What lm-eval reports as `transformers.__version__`, read from the installed
    distribution's metadata (importing transformers for it costs a run 0.2 s)."""
    try:
        return importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return "N/A"


@contextlib.contextmanager
def torch_unseen():
    """Within: lm-eval's `add_env_info` takes torch and transformers as absent and leaves them
    unloaded (it is the only caller of `is_torch_available` and `is_transformers_available`
    left, and runs under the lock above)."""
    utils = lm_eval.utils
    available = utils.is_torch_available, utils.is_transformers_available
    utils.is_torch_available = utils.is_transformers_available = lambda: False
    try:
        yield
    finally:
        utils.is_torch_available, utils.is_transformers_available = available


def install() -> None:
    """lm-eval's run path seeds torch and reports the environment as above; idempotent."""
    lm_eval.evaluator.set_torch_seed = set_torch_seed
    lm_eval.evaluator.add_env_info = add_env_info
