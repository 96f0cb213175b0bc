"""One unit of leaderboard work: one checkpoint's pending tasks, in one process, the model
loaded once for all of them (`python -m evalpack.leaderboard.worker SPEC_JSON`).

lm-eval builds its model from the `--model` name on every run, so running pair after pair with
`evalpack run` would load the checkpoint again for every task. Here each pair is still an
ordinary `evalpack run` (same flags, same `--output_path` layout, same `resumable` completion
log), but under the model name `resumable-pooled`, which hands out the model this process
loaded for the first pair (`evalpack.models.pooled`). Each pair's output (lm-eval's log, tracebacks, the output of the
sandbox) goes into that pair's `lm_eval.log`; a pair that fails leaves a `failed` file with the
reason line, and the worker goes on with the next pair. A served model's pairs run side by side
instead, as one stream of requests (`stream`; each copy of the pooled model keeps its own
pair's completion log). Every model load is recorded in
`<checkpoint>/workers.jsonl` (node, pid, seconds), which the benchmark counts.

The worker asks the kernel to kill it when the process that started it dies (a Ray worker
on a node that was stopped), so a retry elsewhere never races with a leftover writer.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

from lm_eval.api.registry import get_model

from ..models.pooled import PooledResumableLM
from ..models.registry import register
from . import served_unit, stream
from .inprocess import execute, output_into, parse_command, reason_of
from .outcome import run_problem
from .rundirs import (
    DONE_MARKER,
    FAILED_MARKER,
    PAIR_LOG,
    WORKERS_LOG,
    clear_unfinished,
    error_line,
    write_whole,
)

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies (Linux); exit now if it already has."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit(1)


def run_pair(pair: dict, node: str, out=None) -> tuple[bool, str]:
    """One pair as `evalpack run` with the pooled model; (ok, reason if not). Its command
    line and a traceback go to `out` (default: stderr)."""
    pair_dir = Path(pair["dir"])
    out = out or sys.stderr
    out.write(
        f"$ {' '.join(pair['command'])}\n# in evalpack worker {os.getpid()} on "
        f"node {node}, model shared with the checkpoint's other tasks here\n"
    )
    try:
        execute(parse_command(pair["argv"]))
    except SystemExit as exc:  # lm-eval's argument errors
        if exc.code not in (0, None):
            return False, f"lm-eval exited with status {exc.code}"
    except Exception as exc:  # noqa: BLE001  (a pair's failure must not end the unit)
        traceback.print_exc(file=out)
        return False, reason_of(exc)
    problem = run_problem(pair_dir)  # no results, or a primary metric that is NaN
    if problem:
        sys.stdout.flush()
        sys.stderr.flush()
        logged = error_line(pair_dir / PAIR_LOG)
        return False, problem + (f"; log: {logged}" if logged else "")
    return True, ""


def record_load(ckpt_dir: Path, node: str):
    def record(model: str, seconds: float) -> None:
        row = {
            "node": node,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "model": model,
            "seconds": round(seconds, 3),
            "time": time.time(),
        }
        with open(ckpt_dir / WORKERS_LOG, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")

    return record


def streams(model: str | None) -> bool:
    """Whether a checkpoint's pairs run side by side (`stream`): the pack's served backends,
    which share their concurrency across runs; an in-process model (hf, vllm, replay) runs its
    pairs one after the other. `EVALPACK_STREAM=0` turns streaming off."""
    if not model or os.environ.get("EVALPACK_STREAM", "1") == "0":
        return False
    try:
        return bool(getattr(get_model(model), "keys_each_repeat", False))
    except (KeyError, ValueError):  # unknown name: the pair says so
        return False


def run_marked(pair: dict, node: str, side_by_side: bool) -> None:
    """One pair, its output in its `lm_eval.log`, and the marker saying how it ended."""
    pair_dir = Path(pair["dir"])
    start = time.monotonic()
    clear_unfinished(pair_dir)
    if side_by_side:
        with stream.logging_into(pair_dir / PAIR_LOG) as out:
            ok, reason = run_pair(pair, node, out)
    else:
        with output_into(pair_dir / PAIR_LOG):
            ok, reason = run_pair(pair, node)
    if ok:
        marker = {
            "command": pair["command"],
            "node": node,
            "pid": os.getpid(),
            "seconds": round(time.monotonic() - start, 3),
            "side_by_side": side_by_side,
        }
        write_whole(pair_dir / DONE_MARKER, json.dumps(marker))
    else:
        write_whole(pair_dir / FAILED_MARKER, reason + "\n")


def run_unit(spec: dict) -> None:
    """Every pair of the unit, side by side for a served model (`stream`), else in order;
    markers say how each ended."""
    register()
    PooledResumableLM.on_load = record_load(Path(spec["checkpoint_dir"]), spec["node"])
    if spec.get("serve"):  # its own servers, started here (`served_unit`)
        served_unit.run_served_unit(spec, lambda pair: run_marked(pair, spec["node"], True))
        return
    side_by_side = spec.get("stream", streams(spec.get("model")))
    if side_by_side:
        stream.run_side_by_side(spec["pairs"], lambda pair: run_marked(pair, spec["node"], True))
        return
    for pair in spec["pairs"]:
        run_marked(pair, spec["node"], False)


def interrupted(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    spec = json.loads(argv[0])
    die_with_parent(spec["parent"])
    signal.signal(signal.SIGTERM, interrupted)  # the servers it started are stopped on the way out
    try:
        run_unit(spec)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
