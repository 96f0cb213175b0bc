"""lm-eval commands run inside this process, with the pack's patches (`evalpack.lmeval`):
`execute` runs a parsed command line (the `evalpack` command's, and the leaderboard worker's
for each pair, so both check chat settings the same way); `run_lm_eval` runs one `run` with
its output into a log file, what `rescore` does for each saved run (imports and the task index
are then paid once, not once per run).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from pathlib import Path

from lm_eval._cli.harness import HarnessCLI

from ..core import catalog
from ..core.resources import tasks_dir
from ..lmeval import fixed_costs, run_names
from ..models.registry import register

log = logging.getLogger("evalpack")


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


def parse_command(argv: list[str]) -> argparse.Namespace:
    """lm-eval's command line `argv` (`run ...`), parsed by lm-eval's own parser."""
    return HarnessCLI()._parser.parse_args(argv)


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
            args = parse_command(["run", *argv])
            args.include_path = args.include_path or str(tasks_dir())
            with fixed_costs.pack_only(catalog.requested_tasks(args), args.include_path):
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


def check_chat_settings(args: argparse.Namespace) -> None:
    """Warn when a chat task runs without a chat template, with few-shot turns collapsed, or a
    base-model task runs with one."""
    names = catalog.requested_tasks(args)
    if not names:
        return
    index = catalog.task_index(args.include_path)
    templated = bool(getattr(args, "apply_chat_template", False))
    plain = catalog.chat_tasks(names, index, chat=False)
    if plain and templated:
        log.warning(
            "%s are base-model tasks with a plain-text prompt, but --apply_chat_template is set: "
            "the prompt will be wrapped in chat messages",
            ", ".join(plain),
        )
    needing_chat = catalog.chat_tasks(names, index)
    if not needing_chat:
        return
    if not templated:
        log.warning(
            "%s are chat tasks (OLMES builds chat messages for them) but --apply_chat_template "
            "is not set: the prompt will be plain text and will not match OLMES",
            ", ".join(needing_chat),
        )
    elif getattr(args, "fewshot_as_multiturn", True) is False:
        multiturn = catalog.declaring(names, "fewshot_as_multiturn", True, index)
        if multiturn:
            log.warning(
                "%s expect few-shot examples as separate chat turns; --fewshot_as_multiturn "
                "false collapses them into one user message, which does not match OLMES",
                ", ".join(multiturn),
            )


def execute(args: argparse.Namespace) -> int:
    """Run lm-eval's parsed command with the pack's include path (a run whose tasks are all on
    it never indexes lm-eval's built-in tasks)."""
    if getattr(args, "include_path", "") is None:
        args.include_path = str(tasks_dir())
    fixed_costs.install()  # lm-eval's built-in task index from its disk cache (ls, validate)
    if getattr(args, "command", None) != "run":
        args.func(args)
        return 0
    check_chat_settings(args)
    run_names.install()
    with fixed_costs.pack_only(catalog.requested_tasks(args), args.include_path):
        args.func(args)
    return 0
