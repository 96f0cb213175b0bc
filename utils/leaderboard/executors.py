"""Where leaderboard work runs: units (one checkpoint's pending tasks) handed to an executor.

A unit runs in one worker process (`worker`), which loads the checkpoint's model once and runs
the tasks one after the other; the `local` executor runs the units one at a time on this
machine, the Ray executor (`ray_dispatch`) places each on a node with the resources its
checkpoint declares. Both run the same worker command, so a pair gives the same files either
way. Paths are absolute and the output folder must be the same path on every node.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.catalog import task_flags
from ..models.registry import POOLED
from . import identity
from .gen_settings import gen_kwargs_flags
from .rundirs import COMPLETION_LOG, WORKER_LOG, lm_eval_command
from .serve import ENDPOINTS, gpus_needed, serve_of, served_model
from .thinking import thinking_flags

# backends that run the model in the worker's own process, on one GPU unless told otherwise
LOCAL_GPU_MODELS = {
    "hf",
    "huggingface",
    "hf-auto",
    "hf-multimodal",
    "vllm",
    "vllm-vlm",
    "sglang",
    "hf-mistral3",
}
FORWARDED_ENV = ("EVALPACK_", "HF_", "TRANSFORMERS_", "OPENAI_")


@dataclass
class Unit:
    """One checkpoint's pending tasks, and how many times they have been tried."""

    checkpoint: dict
    entries: list[dict]
    attempt: int = 1

    @property
    def name(self) -> str:
        return self.checkpoint["name"]


def pair_argv(ckpt: dict, entry: dict, pair_dir: Path, model: str) -> list[str]:
    """The `evalpack` command line of one pair (without the interpreter), run under `model`
    (`resumable`, or the worker's pooled version of it)."""
    wrapped = {
        "model": ckpt["model"],
        "model_args": ckpt.get("model_args", ""),
        "log": str(pair_dir / COMPLETION_LOG),
    }
    return lm_eval_command(model, wrapped, task_flags(entry), pair_dir)[3:]


def unit_spec(unit: Unit, output: Path, extra: list[str]) -> dict:
    """Everything the worker needs, as JSON: absolute paths, the pairs' command lines."""
    ckpt_dir = output.resolve() / unit.name
    pairs = []
    for entry in unit.entries:
        pair_dir = ckpt_dir / entry["task"]
        entry = {
            **entry,
            "args": [
                *entry.get("args", []),
                *extra,
                *gen_kwargs_flags(unit.checkpoint),
                *thinking_flags(unit.checkpoint, extra),
            ],
        }
        pairs.append(
            {
                "task": entry["task"],
                "dir": str(pair_dir),
                "command": ["evalpack", *pair_argv(unit.checkpoint, entry, pair_dir, "resumable")],
                "argv": ["run", *pair_argv(unit.checkpoint, entry, pair_dir, POOLED)],
            }
        )
    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV)}
    return {
        "checkpoint_dir": str(ckpt_dir),
        "model": unit.checkpoint["model"],
        "pairs": pairs,
        "env": env,
        "serve": serve_spec(unit.checkpoint),
    }


def serve_spec(ckpt: dict) -> dict | None:
    """How the worker serves the checkpoint (`serve`), or None (a model it does not serve)."""
    serve = serve_of(ckpt)
    if serve:
        serve.update(model=served_model(ckpt), endpoint=ENDPOINTS[ckpt["model"]])
    return serve


def start_worker(spec: dict, node: str) -> subprocess.Popen:
    """The worker process for one unit; what it prints outside a pair goes to `worker.log`."""
    spec = {**spec, "node": node, "parent": os.getpid()}
    ckpt_dir = Path(spec["checkpoint_dir"])
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    with open(ckpt_dir / WORKER_LOG, "a", encoding="utf-8") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "evalpack.leaderboard.worker", json.dumps(spec)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **spec["env"]},
        )


def stop(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def resources_for(ckpt: dict) -> dict:
    """What one unit of this checkpoint asks the cluster for: the checkpoint's `resources:`
    mapping (num_gpus, num_cpus, memory, any custom resource), else num_gpus from vLLM/SGLang's
    tensor_parallel_size x data_parallel_size, else one GPU for a backend that runs the model
    in-process (hf, vllm, sglang) and none for the others (replay, served models)."""
    declared = dict(ckpt.get("resources") or {})
    if serve_of(ckpt) and "num_gpus" not in declared:  # the GPUs its servers take
        declared["num_gpus"] = gpus_needed(ckpt)
    args = identity.model_args(ckpt)
    if "num_gpus" not in declared:
        if "tensor_parallel_size" in args or "data_parallel_size" in args:
            declared["num_gpus"] = int(args.get("tensor_parallel_size", 1)) * int(
                args.get("data_parallel_size", 1)
            )
        else:
            declared["num_gpus"] = 1 if ckpt["model"] in LOCAL_GPU_MODELS else 0
    declared.setdefault("num_cpus", 1)
    return declared


class LocalExecutor:
    """One unit at a time, in a worker process on this machine."""

    name = "local"

    def __init__(self, output: Path, extra: list[str]) -> None:
        self.output, self.extra = output, extra
        self.running: dict[int, tuple[Unit, subprocess.Popen]] = {}

    def has_room(self, unit: Unit | None = None) -> bool:
        return not self.running

    def start(self, unit: Unit) -> None:
        proc = start_worker(unit_spec(unit, self.output, self.extra), socket.gethostname())
        self.running[id(unit)] = (unit, proc)

    def wait(self, timeout: float) -> list[tuple[Unit, str | None]]:
        """Units that ended within `timeout` seconds, each with an error line or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ended = [
                (key, unit, proc)
                for key, (unit, proc) in self.running.items()
                if proc.poll() is not None
            ]
            if ended:
                for key, _, _ in ended:
                    del self.running[key]
                return [
                    (
                        unit,
                        None
                        if proc.returncode == 0
                        else f"worker exited with status {proc.returncode}",
                    )
                    for _, unit, proc in ended
                ]
            time.sleep(0.1)
        return []

    def units(self) -> list[Unit]:
        return [unit for unit, _ in self.running.values()]

    def cancel(self) -> None:
        for _, proc in self.running.values():
            stop(proc)
        self.running.clear()
