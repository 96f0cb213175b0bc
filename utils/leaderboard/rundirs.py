"""Run directories: how the pack starts lm-eval for one run and finds what it saved.

A leaderboard is `DIR/<checkpoint>/checkpoint.json` (name, model, model_args) and
`DIR/<checkpoint>/<task>/`: that pair's folder, lm-eval's `results_<time>.json` and
`samples_<task>_<time>.jsonl` straight in it (no model folder below: `lm_eval_command`), with
`lm_eval.log`, `completions.jsonl` (every completion as it arrived, greedy and sampled: the checkpoint's model
runs inside `evalpack.models.resume`'s `resumable` wrapper, so an interrupted pair restarts from
it) and a `done` marker written once lm-eval has exited cleanly with its results and sample logs
saved, or a `failed` file with the reason line. `DIR/<checkpoint>/workers.jsonl` records every
model load (node, pid, seconds) and `worker.log` what a worker printed outside any pair.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import tempfile
from pathlib import Path

CHECKPOINT_FILE = "checkpoint.json"
PAIR_LOG = "lm_eval.log"
DONE_MARKER = "done"
COMPLETION_LOG = "completions.jsonl"
FAILED_MARKER = "failed"
WORKERS_LOG = "workers.jsonl"
WORKER_LOG = "worker.log"
ERROR_LINE = re.compile(r"^(\w+\.)*\w*(Error|Exception|Exit|Interrupt)\b|\berror\b", re.IGNORECASE)
log = logging.getLogger("evalpack.rundirs")


def lm_eval_command(
    model: str, model_args: str | dict, flags: list[str], output: Path
) -> list[str]:
    """The `evalpack` (lm-eval) command line for one run, its results and samples straight into
    the folder `output` (lm-eval's form for that: an `--output_path` ending in `.json`). A
    mapping of model arguments goes as JSON, which lm-eval's CLI requires as soon as a value
    contains `{` (as `from_doc={solution}` does)."""
    command = [sys.executable, "-m", "evalpack", "--model", model]
    if model_args:
        as_text = json.dumps(model_args) if isinstance(model_args, dict) else str(model_args)
        command += ["--model_args", as_text]
    return command + flags + ["--output_path", str(output / "results.json"), "--log_samples"]


def results_files(root: Path) -> list[Path]:
    """lm-eval result files under `root`, oldest first (lm-eval names them by timestamp)."""
    return sorted(root.rglob("results_*.json"), key=lambda p: p.name)


def run_folder(results_file: Path) -> Path:
    """The folder of the run that saved `results_file`: its own folder where the pack wrote it
    (a leaderboard pair or a rescored run, beside its `lm_eval.log`), else the `--output_path`
    above lm-eval's `<model name>/` folder (a plain run, or a pair of an older board)."""
    folder = results_file.parent
    return folder if (folder / PAIR_LOG).is_file() else folder.parent


def requested_tasks(results: dict) -> list[str]:
    """The tasks and groups named on the original command line: groups that are nobody's
    subtask, then the tasks outside every group (lm-eval lists no groups for a plain run)."""
    groups = results.get("group_subtasks", {})
    inner = {sub for subs in groups.values() for sub in subs}
    names = [*groups, *(task for task in results.get("configs", {}) if task not in groups)]
    return [name for name in names if name not in inner]


def pair_is_done(pair_dir: Path) -> bool:
    """The marker, not the results file: lm-eval saves its results before the sample logs, so
    a run killed in between leaves a results file without complete samples."""
    return (pair_dir / DONE_MARKER).is_file()


def write_whole(file: Path, text: str) -> None:
    """Write `file` so that it appears complete (a temporary file beside it, renamed into
    place), never empty or cut: the board reads a pair's markers and a checkpoint's `serve.json`
    while the worker that writes them runs."""
    fd, temporary = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, file)
    except BaseException:
        os.unlink(temporary)
        raise


def clear_unfinished(pair_dir: Path) -> None:
    """Remove the results, sample logs and `failed` file of an attempt that did not finish, so
    that reports and rescoring never read them (its completions stay in the completion log)."""
    leftovers = [*pair_dir.rglob("results_*.json"), *pair_dir.rglob("samples_*.jsonl")]
    if leftovers:
        log.warning("%s: removing %d files of an unfinished attempt", pair_dir, len(leftovers))
    for file in [*leftovers, pair_dir / FAILED_MARKER]:
        file.unlink(missing_ok=True)


def log_lines(log_file: Path) -> list[str]:
    """A run log's lines, less blank ones and the command lines the pack writes."""
    if not log_file.is_file():
        return []
    lines = [line.strip() for line in log_file.read_text(errors="replace").splitlines()]
    return [line for line in lines if line and not line.startswith(("$ ", "# "))]


def error_line(log_file: Path) -> str | None:
    """The last line of a run log that names an error (a traceback's last line), if any."""
    for line in reversed(log_lines(log_file)):
        if ERROR_LINE.search(line):
            return line
    return None


def reason_line(log_file: Path) -> str:
    """Why a run failed, in one line: `error_line`, else the log's last line."""
    lines = log_lines(log_file)
    return error_line(log_file) or (lines[-1] if lines else f"no output in {log_file}")


def read_workers(ckpt_dir: Path) -> list[dict]:
    """The model loads recorded for a checkpoint (one row per worker that loaded it)."""
    path = ckpt_dir / WORKERS_LOG
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
