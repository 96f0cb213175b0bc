"""What a plain `lm_eval --include_path <checkout>/tasks` run prints about the pack's tasks: as
under the `evalpack` command, progress and one line per problem. Installed when lm-eval imports
the pack's task hooks (`evalpack.hooks`), before any task is built:

* lm-eval's "Custom kwargs can be passed to `--metadata`" note, logged for every task with a
  `custom_dataset` (all of the pack's), is dropped: the pack's loaders read their settings from
  `--metadata` already.
* lm-eval's `git describe` for the results file runs without git's "fatal: not a git
  repository" when the run is not inside one.
* A `DataError` (a dataset neither in `EVALPACK_DATA_DIR` nor reachable on the hub, a malformed
  row) that ends the run is its one line, not lm-eval's traceback (so is any error whose class
  says `one_line = True`); `EVALPACK_TRACEBACK=1` shows the traceback.
"""

from __future__ import annotations

import logging
import os
import sys

CUSTOM_KWARGS_NOTE = "Custom kwargs can be passed"
TRACEBACK_ENV = "EVALPACK_TRACEBACK"


class _DropCustomKwargsNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return CUSTOM_KWARGS_NOTE not in str(record.msg)


def _one_line(previous):
    """An excepthook that prints an error of a class marked `one_line` (`DataError`, the
    environments' `PrefixRefused`) as its message and hands anything else on."""

    def hook(kind, error, traceback) -> None:
        if getattr(kind, "one_line", False) and not os.environ.get(TRACEBACK_ENV):
            print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
            return
        previous(kind, error, traceback)

    hook.evalpack_one_line = True
    return hook


def install() -> None:
    """Once per process; later calls change nothing."""
    task_log = logging.getLogger("lm_eval.api.task")
    if not any(isinstance(f, _DropCustomKwargsNote) for f in task_log.filters):
        task_log.addFilter(_DropCustomKwargsNote())
    if not getattr(sys.excepthook, "evalpack_one_line", False):
        sys.excepthook = _one_line(sys.excepthook)
    # patched where lm-eval is loaded (its run imports it before any task): importing the hooks
    # elsewhere (a sandbox job's modules, with their own libraries) must not load lm-eval
    evaluator = sys.modules.get("lm_eval.evaluator")
    if evaluator is not None:
        evaluator.get_git_commit_hash = quiet_git_hash


def quiet_git_hash() -> str | None:
    """lm-eval's `git describe`, with git's complaint outside a repository kept quiet."""
    import subprocess

    try:
        return subprocess.check_output(
            ["git", "describe", "--always"], stderr=subprocess.DEVNULL, text=True
        ).strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        from lm_eval.loggers.utils import get_commit_from_path

        return get_commit_from_path(os.getcwd())  # as lm-eval falls back
