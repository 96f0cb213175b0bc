"""`evalpack rescore`: every metric of a saved run recomputed from its per-sample logs, by
replaying the logged responses through lm-eval with the current scorers (no model). The runs
are replayed one after the other in this process (each run's output in its `lm_eval.log`), so
imports and the task index are paid once, not per run."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from ..core.data import read_jsonl
from ..leaderboard.inprocess import run_lm_eval
from ..leaderboard.outcome import run_problem
from ..leaderboard.plan import PLAN_FILE
from ..leaderboard.rundirs import (
    CHECKPOINT_FILE,
    PAIR_LOG,
    lm_eval_command,
    reason_line,
    requested_tasks,
    results_files,
    run_folder,
)
from ..models.replay import loglikelihood_rows

log = logging.getLogger("evalpack.rescore")


def replay_rows(samples: list[dict], task: str) -> list[dict]:
    """Replay rows from a task's sample log: every logged response of every doc (for
    log-likelihood tasks, the recorded value of every continuation)."""
    rows = []
    for sample in samples:
        recorded = loglikelihood_rows(sample, task)
        if recorded:
            rows += recorded
            continue
        for resp in sample["resps"]:
            texts = resp if isinstance(resp, list) else [resp]
            rows += [
                {"task": task, "doc_id": sample["doc_id"], "repeat": i, "completion": text}
                for i, text in enumerate(texts)
            ]
    return rows


def replay_flags(results: dict) -> list[str]:
    """lm-eval flags that reproduce what affects scoring in the original run."""
    config = results.get("config", {})
    flags = ["--tasks", ",".join(requested_tasks(results)), "--confirm_run_unsafe_code"]
    if config.get("limit") is not None:
        limit = float(config["limit"])
        flags += ["--limit", str(int(limit)) if limit.is_integer() else str(limit)]
    if results.get("chat_template") is not None:
        flags += ["--apply_chat_template"]
        flags += ["--fewshot_as_multiturn", str(bool(results.get("fewshot_as_multiturn")))]
    metadata = run_metadata(results)
    if metadata:
        flags += ["--metadata", json.dumps(metadata)]
    return flags


def run_metadata(results: dict) -> dict:
    """The `--metadata` of the original run: what every task's metadata shares, less the
    model's arguments (lm-eval copies those in) and per-task bookkeeping."""
    model_args = results.get("config", {}).get("model_args")
    model_keys = set(model_args) if isinstance(model_args, dict) else set()
    shared = None
    for config in results.get("configs", {}).values():
        items = {k: v for k, v in config.get("metadata", {}).items() if k not in model_keys}
        shared = items if shared is None else {k: v for k, v in shared.items() if items.get(k) == v}
    return {k: v for k, v in (shared or {}).items() if k not in ("version", "config_source")}


def rescore_results(results_file: Path, output: Path) -> bool:
    """Re-run one saved lm-eval run with the replay model answering from its sample logs."""
    results = json.loads(results_file.read_text(encoding="utf-8"))
    stamp = results_file.stem.removeprefix("results_")
    rows = []
    for task in results.get("configs", {}):
        samples_file = results_file.with_name(f"samples_{task}_{stamp}.jsonl")
        if not samples_file.is_file():
            raise FileNotFoundError(
                f"{samples_file} missing: rescoring needs a run saved with --log_samples"
            )
        rows += replay_rows(read_jsonl(samples_file), task)
    output.mkdir(parents=True, exist_ok=True)
    completions = output / f"replay_{stamp}.jsonl"
    completions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    command = lm_eval_command(
        "replay", {"completions": str(completions)}, replay_flags(results), output
    )
    if run_lm_eval(command[3:], output / PAIR_LOG) is not None:
        return False
    problem = run_problem(output)  # a primary metric that is NaN is no rescored run
    if problem:
        with open(output / PAIR_LOG, "a", encoding="utf-8") as fh:
            fh.write(f"evalpack rescore: error: {problem}\n")
    return problem is None


def selected(files: list[Path], tasks: list[str] | None) -> list[Path]:
    """The result files of runs that named one of `tasks` (all of them without `tasks`)."""
    if not tasks:
        return files
    wanted = set(tasks)
    return [f for f in files if wanted & set(requested_tasks(json.loads(f.read_text("utf-8"))))]


def rescore(source: Path, output: Path, tasks: list[str] | None = None) -> list[Path]:
    """Rescore every run under `source` (or those of `tasks`) into the same layout under
    `output`, each timed; the runs that failed. Checkpoint descriptions (and a board's plan) are
    copied so that `report` names rows the same way and shows the same suite."""
    failed = []
    files = results_files(source)
    if not files:
        raise FileNotFoundError(f"no lm-eval results_*.json under {source}")
    files = selected(files, tasks)
    if not files:
        raise ValueError(f"no run under {source} names {', '.join(tasks or [])}")
    for number, results_file in enumerate(files, start=1):
        folder = run_folder(results_file)
        relative = folder.relative_to(source) if folder.is_relative_to(source) else Path(".")
        start = time.monotonic()
        ok = rescore_results(results_file, output / relative)
        seconds = time.monotonic() - start
        if ok:
            log.info("[%d/%d] rescored %s in %.1f s", number, len(files), relative, seconds)
        else:
            pair_log = output / relative / PAIR_LOG
            log.error(
                "[%d/%d] rescoring %s FAILED: %s (%.1f s; log: %s)",
                number,
                len(files),
                results_file,
                reason_line(pair_log),
                seconds,
                pair_log,
            )
            failed.append(results_file)
    for description in [*source.rglob(CHECKPOINT_FILE), *source.glob(PLAN_FILE)]:
        target = output / description.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(description.read_bytes())
    return failed
