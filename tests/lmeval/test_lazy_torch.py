"""A run that does not use torch does not load it (`evalpack.lmeval.lazy_torch`): lm-eval's
seed reaches torch when it is imported, and the environment report saved with the results is
torch's own, from the cache folder after the first run."""

import json
import os
import subprocess
import sys
import time

from evalpack.lmeval import lazy_torch
from tests.conftest import DATA_DIR, REPO, requires_shared

# a run in a fresh process, saying at the end whether torch was loaded
RUN = """
import sys
from evalpack.cli import cli
try:
    cli.main(sys.argv[1:])
finally:
    print("transformers loaded:", "transformers" in sys.modules)
    print("torch loaded:", "torch" in sys.modules)
"""


def replay_run(tmp_path, out: str, cache) -> tuple[str, dict]:
    argv = ["--model", "replay", "--model_args", "from_doc=answer", "--tasks", "gsm8k_tulu"]
    argv += ["--limit", "1", "--apply_chat_template", "--output_path", str(tmp_path / out)]
    env = {**os.environ, "EVALPACK_DATA_DIR": str(DATA_DIR), "EVALPACK_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", RUN, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**env, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (results,) = (tmp_path / out).rglob("results_*.json")
    return done.stdout.strip().splitlines()[-2:], json.loads(results.read_text())


@requires_shared
def test_a_replay_run_loads_no_torch_and_saves_torchs_own_report(tmp_path):
    from torch.utils.collect_env import get_pretty_env_info

    cache = tmp_path / "cache"
    first, first_results = replay_run(tmp_path, "first", cache)
    second, second_results = replay_run(tmp_path, "second", cache)
    assert first[-1] == "torch loaded: True"  # it computed the report
    assert second == ["transformers loaded: False", "torch loaded: False"]  # it read it
    assert first_results["pretty_env_info"] == second_results["pretty_env_info"]
    assert second_results["pretty_env_info"] == get_pretty_env_info()
    assert second_results["config"]["torch_seed"] == 1234
    assert second_results["transformers_version"] == first_results["transformers_version"]
    assert len(list(cache.glob("environment_report-*.json"))) == 1


def run_python(script: str) -> list[str]:
    """What `script` prints, run by this interpreter with lm-eval's seeding as a run has it."""
    prelude = "import lm_eval.evaluator\nfrom evalpack.lmeval import lazy_torch\n"
    prelude += "lazy_torch.install()\nseed = lm_eval.evaluator.set_torch_seed\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_the_seed_reaches_torch_when_it_is_imported():
    script = """
import sys, importlib.util
seed(77)
seed(78)  # a second run in the process: its seed
assert "torch" not in sys.modules
assert importlib.util.find_spec("torch") is not None  # a check, as transformers makes
import transformers
assert "torch" not in sys.modules
import torch
drawn = torch.rand(3).tolist()
torch.manual_seed(78)
print(torch.initial_seed(), drawn == torch.rand(3).tolist())
seed(5)  # loaded now: seeded at once
print(torch.initial_seed(), lazy_torch._seeder in sys.meta_path)
"""
    assert run_python(script) == ["78", "True", "5", "False"]


def test_a_seed_given_while_another_thread_imports_torch_waits_for_it():
    script = """
import sys, threading
loading = threading.Thread(target=lambda: __import__("torch"))
loading.start()
while "torch" not in sys.modules and loading.is_alive():
    pass
seed(31)  # torch half loaded, or not yet: seeded when it is, either way
loading.join()
import torch
print(torch.initial_seed())
"""
    assert run_python(script) == ["31"]


def test_the_report_is_used_only_while_its_key_holds(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALPACK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    key = lazy_torch.report_key()
    lazy_torch.save_report("k", key, "PyTorch version: x")
    assert lazy_torch.cached_report("k", key) == "PyTorch version: x"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # other devices: another report
    assert lazy_torch.report_key() != key
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert lazy_torch.report_key() == key
    monkeypatch.setattr(time, "time", lambda: os.stat(tmp_path).st_mtime + 2 * 3600)
    assert lazy_torch.cached_report("k", key) is None  # over an hour old
