"""`evalpack leaderboard run`: every (checkpoint, task) pair of a suite through lm-eval, one
subprocess per pair, resumable (layout: `rundirs`)."""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

import yaml

from .catalog import task_flags
from .rundirs import (
    CHECKPOINT_FILE,
    COMPLETION_LOG,
    DONE_MARKER,
    PAIR_LOG,
    lm_eval_command,
    results_files,
    run_logged,
)

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
log = logging.getLogger("evalpack.leaderboard")


def load_checkpoints(models_file: str) -> list[dict]:
    """Checkpoints from a models YAML: `checkpoints: [{name, model, model_args}]`, where
    `model_args` is lm-eval's `k=v,...` string or a mapping."""
    config = yaml.safe_load(Path(models_file).read_text(encoding="utf-8")) or {}
    checkpoints = config.get("checkpoints")
    if not isinstance(checkpoints, list) or not checkpoints:
        raise ValueError(f"{models_file}: needs a non-empty `checkpoints` list")
    names = set()
    for number, ckpt in enumerate(checkpoints, start=1):
        where = f"{models_file}, checkpoint {number}"
        if not isinstance(ckpt, dict):
            raise TypeError(f"{where}: needs a mapping {{name, model, model_args}}")
        if "name" not in ckpt:
            raise ValueError(f"{where}: needs `name`")
        name = str(ckpt["name"])
        if not NAME_PATTERN.match(name):
            raise ValueError(f"{where}: name {name!r} must match [A-Za-z0-9._-]+")
        if name in names:
            raise ValueError(f"{where}: name {name!r} appears twice")
        if "model" not in ckpt:
            raise ValueError(f"{where} ({name!r}): needs `model`")
        names.add(name)
    return checkpoints


def pair_is_done(pair_dir: Path) -> bool:
    """The marker, not the results file: lm-eval saves its results before the sample logs, so
    a run killed in between leaves a results file without complete samples."""
    return (pair_dir / DONE_MARKER).is_file()


def clear_unfinished(pair_dir: Path) -> None:
    """Remove the results and sample logs of an attempt that did not finish, so that reports
    and rescoring never read them (its completions stay in the completion log)."""
    leftovers = [*pair_dir.rglob("results_*.json"), *pair_dir.rglob("samples_*.jsonl")]
    if leftovers:
        log.warning("%s: removing %d files of an unfinished attempt", pair_dir, len(leftovers))
    for file in leftovers:
        file.unlink()


def run_pair(ckpt: dict, entry: dict, ckpt_dir: Path, extra: list[str]) -> bool:
    """One (checkpoint, task) pair through lm-eval, resuming from the pair's completion log;
    the `done` marker is written only when lm-eval exited cleanly after saving its results."""
    pair_dir = ckpt_dir / entry["task"]
    clear_unfinished(pair_dir)
    wrapped = {"model": ckpt["model"], "model_args": ckpt.get("model_args", ""),
               "log": str(pair_dir / COMPLETION_LOG)}
    command = lm_eval_command("resumable", wrapped, task_flags(entry) + extra, pair_dir)
    if run_logged(command, pair_dir / PAIR_LOG) != 0 or not results_files(pair_dir):
        return False
    (pair_dir / DONE_MARKER).write_text(json.dumps({"command": command}), encoding="utf-8")
    return True


def claim_checkpoint_dir(ckpt: dict, ckpt_dir: Path) -> None:
    """Record which model a checkpoint directory holds; refuse one recorded for another model,
    whose cached completions and finished pairs would otherwise be reused under this name."""
    description = ckpt_dir / CHECKPOINT_FILE
    if description.is_file():
        recorded = json.loads(description.read_text(encoding="utf-8"))
        if recorded != ckpt:
            raise ValueError(
                f"{ckpt_dir} holds checkpoint {recorded}, not {ckpt}: give the changed "
                "checkpoint a new name, or delete that directory to start it afresh"
            )
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    description.write_text(json.dumps(ckpt, indent=1), encoding="utf-8")


def run_leaderboard(
    checkpoints: list[dict], entries: list[dict], output: Path, extra: list[str]
) -> dict[str, list[str]]:
    """Every pair not yet finished; returns the pairs `done` (before), `ran` and `failed`."""
    outcome: dict[str, list[str]] = {"done": [], "ran": [], "failed": []}
    pairs = [(ckpt, entry) for ckpt in checkpoints for entry in entries]
    refused = set()
    for ckpt in checkpoints:
        try:
            claim_checkpoint_dir(ckpt, output / ckpt["name"])
        except ValueError as exc:
            log.error("%s", exc)
            refused.add(ckpt["name"])
    for number, (ckpt, entry) in enumerate(pairs, start=1):
        ckpt_dir = output / ckpt["name"]
        label = f"[{number}/{len(pairs)}] {ckpt['name']} x {entry['task']}"
        if ckpt["name"] in refused:
            log.error("%s: not run (checkpoint directory holds another model)", label)
            outcome["failed"].append(f"{ckpt['name']}/{entry['task']}")
            continue
        if pair_is_done(ckpt_dir / entry["task"]):
            log.info("%s: finished earlier, skipped", label)
            outcome["done"].append(f"{ckpt['name']}/{entry['task']}")
            continue
        log.info("%s: running (log: %s)", label, ckpt_dir / entry["task"] / PAIR_LOG)
        start = time.monotonic()
        ok = run_pair(ckpt, entry, ckpt_dir, extra)
        outcome["ran" if ok else "failed"].append(f"{ckpt['name']}/{entry['task']}")
        log.log(
            logging.INFO if ok else logging.ERROR,
            "%s: %s in %.0f s", label, "finished" if ok else "FAILED", time.monotonic() - start,
        )
    return outcome
