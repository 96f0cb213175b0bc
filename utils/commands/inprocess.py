"""An lm-eval run inside this process, its output into a log file: what `rescore` does for each
saved run (imports and the task index are then paid once, not once per run).

The leaderboard worker (`worker`) runs its pairs the same way, through the full `evalpack`
command line; this module is the part both need that does not depend on the CLI module.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from pathlib import Path

from lm_eval._cli.harness import HarnessCLI

from ..core.resources import tasks_dir
from ..models.registry import register
from . import fixed_costs


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


def run_lm_eval(argv: list[str], log_file: Path) -> str | None:
    """lm-eval's `run` with `argv` (the pack's models registered, its tasks the include path
    unless `--include_path` is given), output appended to `log_file`; None, or why it failed
    (also the log's last line)."""
    register()
    reason = None
    with output_into(log_file):
        print(f"$ evalpack run {' '.join(argv)}", flush=True)
        try:
            args = HarnessCLI()._parser.parse_args(["run", *argv])
            args.include_path = args.include_path or str(tasks_dir())
            values = args.tasks if isinstance(args.tasks, list) else [args.tasks or ""]
            names = [name for value in values for name in value.split(",") if name]
            with fixed_costs.pack_only(names, args.include_path):
                args.func(args)
        except SystemExit as exc:  # lm-eval's argument errors
            if exc.code not in (0, None):
                reason = f"lm-eval exited with status {exc.code}"
        except Exception as exc:  # noqa: BLE001  (one run's failure must not end the others)
            traceback.print_exc()
            reason = reason_of(exc)
    if reason:
        with open(log_file, "a", encoding="utf-8") as fh:
            fh.write(f"error: {reason}\n")
    return reason
