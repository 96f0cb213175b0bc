"""Run directories: how the pack starts lm-eval for one run and finds what it saved.

A leaderboard is `DIR/<checkpoint>/checkpoint.json` (name, model, model_args) and
`DIR/<checkpoint>/<task>/`: lm-eval's `--output_path` for that pair, with `lm_eval.log`,
`completions.jsonl` (every completion as it arrived, greedy and sampled: the checkpoint's model
runs inside `evalpack.models.resume`'s `resumable` wrapper, so an interrupted pair restarts from
it) and a `done` marker written once lm-eval has exited cleanly with its results and sample logs
saved.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHECKPOINT_FILE = "checkpoint.json"
PAIR_LOG = "lm_eval.log"
DONE_MARKER = "done"
COMPLETION_LOG = "completions.jsonl"


def lm_eval_command(
    model: str, model_args: str | dict, flags: list[str], output: Path
) -> list[str]:
    """The `evalpack` (lm-eval) command line for one run, logging samples into `output`.
    A mapping of model arguments goes as JSON, which lm-eval's CLI requires as soon as a
    value contains `{` (as `from_doc={solution}` does)."""
    command = [sys.executable, "-m", "evalpack", "--model", model]
    if model_args:
        as_text = json.dumps(model_args) if isinstance(model_args, dict) else str(model_args)
        command += ["--model_args", as_text]
    return command + flags + ["--output_path", str(output), "--log_samples"]


def run_logged(command: list[str], log_file: Path) -> int:
    """Run `command` with its output appended to `log_file`; its exit status."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(command)}\n")
        fh.flush()
        return subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT, check=False).returncode


def results_files(root: Path) -> list[Path]:
    """lm-eval result files under `root`, oldest first (lm-eval names them by timestamp)."""
    return sorted(root.rglob("results_*.json"), key=lambda p: p.name)


def requested_tasks(results: dict) -> list[str]:
    """The tasks and groups named on the original command line: groups that are nobody's
    subtask, then the tasks outside every group (lm-eval lists no groups for a plain run)."""
    groups = results.get("group_subtasks", {})
    inner = {sub for subs in groups.values() for sub in subs}
    names = [*groups, *(task for task in results.get("configs", {}) if task not in groups)]
    return [name for name in names if name not in inner]
