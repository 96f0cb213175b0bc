"""One unit of leaderboard work: one checkpoint's pending tasks, in one process, the model
loaded once for all of them (`python -m evalpack.commands.worker SPEC_JSON`).

lm-eval builds its model from the `--model` name on every run, so running pair after pair with
`evalpack run` would load the checkpoint again for every task. Here each pair is still an
ordinary `evalpack run` (same flags, same `--output_path` layout, same `resumable` completion
log), but under the model name `resumable-pooled`, which hands out the model this process
loaded for the first pair (`evalpack.models.pooled`). Each pair's output (lm-eval's log, tracebacks, the output of the
sandbox) goes into that pair's `lm_eval.log`; a pair that fails leaves a `failed` file with the
reason line, and the worker goes on with the next pair. Every model load is recorded in
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

from ..models.pooled import PooledResumableLM
from ..models.registry import register
from . import cli
from .rundirs import (
    DONE_MARKER,
    FAILED_MARKER,
    PAIR_LOG,
    WORKERS_LOG,
    clear_unfinished,
    results_files,
)

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies (Linux); exit now if it already has."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit(1)


@contextlib.contextmanager
def output_into(log_file: Path):
    """File descriptors 1 and 2 (so also lm-eval's logging, tqdm and child processes) appended
    to `log_file` for the duration."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_file, "a", encoding="utf-8") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def reason_of(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def run_pair(pair: dict, node: str) -> tuple[bool, str]:
    """One pair as `evalpack run` with the pooled model; (ok, reason if not)."""
    pair_dir = Path(pair["dir"])
    sys.stderr.write(f"$ {' '.join(pair['command'])}\n# in evalpack worker {os.getpid()} on "
                     f"node {node}, model shared with the checkpoint's other tasks here\n")
    try:
        args = cli.EvalpackCLI().parse(pair["argv"])
        cli.execute(args)
    except SystemExit as exc:  # lm-eval's argument errors
        if exc.code not in (0, None):
            return False, f"lm-eval exited with status {exc.code}"
    except Exception as exc:  # noqa: BLE001  (a pair's failure must not end the unit)
        traceback.print_exc()
        return False, reason_of(exc)
    if not results_files(pair_dir):
        return False, "lm-eval saved no results"
    return True, ""


def record_load(ckpt_dir: Path, node: str):
    def record(model: str, seconds: float) -> None:
        row = {"node": node, "host": socket.gethostname(), "pid": os.getpid(), "model": model,
               "seconds": round(seconds, 3), "time": time.time()}
        with open(ckpt_dir / WORKERS_LOG, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
    return record


def run_unit(spec: dict) -> None:
    """Every pair of the unit, in order; markers say how each ended."""
    register()
    PooledResumableLM.on_load = record_load(Path(spec["checkpoint_dir"]), spec["node"])
    for pair in spec["pairs"]:
        pair_dir = Path(pair["dir"])
        start = time.monotonic()
        clear_unfinished(pair_dir)
        with output_into(pair_dir / PAIR_LOG):
            ok, reason = run_pair(pair, spec["node"])
        if ok:
            marker = {"command": pair["command"], "node": spec["node"], "pid": os.getpid(),
                      "seconds": round(time.monotonic() - start, 3)}
            (pair_dir / DONE_MARKER).write_text(json.dumps(marker), encoding="utf-8")
        else:
            (pair_dir / FAILED_MARKER).write_text(reason + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    spec = json.loads(argv[0])
    die_with_parent(spec["parent"])
    try:
        run_unit(spec)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
