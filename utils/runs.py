"""The pack's own subcommands: suites, leaderboard runs, rescoring and reports.

* `evalpack suite list|show`: named suites of tasks with their run settings (`suites.yaml`
  beside this file, plus the user's own with `--suites FILE`).
* `evalpack leaderboard run --models models.yaml --suite NAME --output DIR`: every
  (checkpoint, task) pair through lm-eval, one subprocess per pair, resumable.
* `evalpack rescore DIR`: every metric recomputed from the per-sample logs of a saved run,
  by replaying the logged responses through lm-eval with the current scorers.
* `evalpack report DIR...`: see `evalpack.reports`.

Leaderboard layout: `DIR/<checkpoint>/checkpoint.json` (name, model, model_args) and
`DIR/<checkpoint>/<task>/`: lm-eval's `--output_path` for that pair, with `lm_eval.log`,
`completions.jsonl` (every completion as it arrived, greedy and sampled: the checkpoint's model
runs inside `evalpack.resume`'s `resumable` wrapper, so an interrupted pair restarts from it) and
a `done` marker written once lm-eval has exited cleanly with its results and sample logs saved.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

from evalpack.data import read_jsonl

SUITES_FILE = Path(__file__).with_name("suites.yaml")
CHECKPOINT_FILE = "checkpoint.json"
PAIR_LOG = "lm_eval.log"
DONE_MARKER = "done"
COMPLETION_LOG = "completions.jsonl"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
log = logging.getLogger("evalpack.runs")


# --- suites -------------------------------------------------------------------------------------


def load_suites(user_file: str | None = None) -> dict[str, dict]:
    """Built-in suites, then the user's file on top (same name: the user's suite wins)."""
    suites = yaml.safe_load(SUITES_FILE.read_text(encoding="utf-8"))
    if user_file:
        suites.update(yaml.safe_load(Path(user_file).read_text(encoding="utf-8")) or {})
    for name, suite in suites.items():
        if not isinstance(suite, dict) or not isinstance(suite.get("tasks"), list):
            raise TypeError(f"suite {name!r}: needs a `tasks` list")
        for entry in suite["tasks"]:
            if not isinstance(entry, dict) or "task" not in entry:
                raise TypeError(f"suite {name!r}: every task entry needs a `task` field")
    return suites


def suite_tasks(suites: dict, name: str, only: list[str] | None = None) -> list[dict]:
    """The task entries of suite `name` (optionally only those named in `only`), each with
    `chat` forced on when the task's own YAML asks for a chat template."""
    from lm_eval.tasks import TaskManager

    from evalpack.cli import TASKS_DIR, chat_tasks

    if name not in suites:
        raise ValueError(f"unknown suite {name!r}; known: {', '.join(sorted(suites))}")
    entries = suites[name]["tasks"]
    if only:
        unknown = set(only) - {e["task"] for e in entries}
        if unknown:
            raise ValueError(f"suite {name!r} has no task {', '.join(sorted(unknown))}")
        entries = [e for e in entries if e["task"] in only]
    index = TaskManager(include_path=str(TASKS_DIR), include_defaults=False).task_index
    resolved = []
    for entry in entries:
        needs_chat = bool(chat_tasks([entry["task"]], index))
        if needs_chat and not entry.get("chat"):
            log.warning("%s needs a chat template: turning `chat` on", entry["task"])
        resolved.append({**entry, "chat": bool(entry.get("chat")) or needs_chat})
    return resolved


def task_flags(entry: dict) -> list[str]:
    """lm-eval flags for one suite task entry."""
    flags = ["--tasks", entry["task"]]
    if entry["chat"]:
        flags += ["--apply_chat_template", "--fewshot_as_multiturn", "true"]
    return flags + [str(arg) for arg in entry.get("args", [])]


# --- running lm-eval ----------------------------------------------------------------------------


def lm_eval_command(
    model: str, model_args: str | dict, flags: list[str], output: Path
) -> list[str]:
    """The `evalpack` (lm-eval) command line for one run, logging samples into `output`.
    A mapping of model arguments goes as JSON, which lm-eval's CLI requires as soon as a
    value contains `{` (as `from_doc={solution}` does)."""
    command = [sys.executable, "-m", "evalpack.cli", "--model", model]
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


# --- leaderboard --------------------------------------------------------------------------------


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


# --- rescoring ----------------------------------------------------------------------------------


def requested_tasks(results: dict) -> list[str]:
    """The tasks and groups named on the original command line: groups that are nobody's
    subtask, then the tasks outside every group (lm-eval lists no groups for a plain run)."""
    groups = results.get("group_subtasks", {})
    inner = {sub for subs in groups.values() for sub in subs}
    names = [*groups, *(task for task in results.get("configs", {}) if task not in groups)]
    return [name for name in names if name not in inner]


def replay_rows(samples: list[dict], task: str) -> list[dict]:
    """Replay completions from a task's sample log: every logged response of every doc."""
    rows = []
    for sample in samples:
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
    return run_logged(command, output / PAIR_LOG) == 0


def rescore(source: Path, output: Path) -> list[Path]:
    """Rescore every run under `source` into the same layout under `output`; the runs that
    failed. Checkpoint descriptions are copied so that `report` names rows the same way."""
    failed = []
    files = results_files(source)
    if not files:
        raise FileNotFoundError(f"no lm-eval results_*.json under {source}")
    for number, results_file in enumerate(files, start=1):
        relative = results_file.parent.relative_to(source)
        log.info("[%d/%d] rescoring %s", number, len(files), results_file)
        if not rescore_results(results_file, output / relative.parent):
            log.error("rescoring %s failed (see %s)", results_file, output / relative.parent)
            failed.append(results_file)
    for description in source.rglob(CHECKPOINT_FILE):
        target = output / description.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(description.read_bytes())
    return failed


# --- command line -------------------------------------------------------------------------------


def _suite_command(args: argparse.Namespace) -> int:
    suites = load_suites(args.suites)
    if args.action == "list":
        for name, suite in suites.items():
            tasks = ", ".join(e["task"] for e in suite["tasks"])
            sys.stdout.write(f"{name}: {suite.get('description', '')}\n    {tasks}\n")
        return 0
    for entry in suite_tasks(suites, args.name):
        sys.stdout.write(" ".join(task_flags(entry)) + "\n")
    return 0


def _leaderboard_command(args: argparse.Namespace) -> int:
    checkpoints = load_checkpoints(args.models)
    only = args.tasks.split(",") if args.tasks else None
    entries = suite_tasks(load_suites(args.suites), args.suite, only)
    extra = (["--limit", str(args.limit)] if args.limit is not None else []) + args.lm_eval_args
    outcome = run_leaderboard(checkpoints, entries, Path(args.output), extra)
    log.info(
        "leaderboard %s: %d pairs finished earlier, %d ran, %d failed%s",
        args.output, len(outcome["done"]), len(outcome["ran"]), len(outcome["failed"]),
        f" ({', '.join(outcome['failed'])})" if outcome["failed"] else "",
    )
    return 1 if outcome["failed"] else 0


def _rescore_command(args: argparse.Namespace) -> int:
    source = Path(args.dir)
    output = Path(args.output) if args.output else source.with_name(source.name + "_rescored")
    failed = rescore(source, output)
    log.info("rescored runs written under %s", output)
    return 1 if failed else 0


def parser() -> argparse.ArgumentParser:
    from evalpack import reports

    top = argparse.ArgumentParser(prog="evalpack")
    commands = top.add_subparsers(dest="command", required=True)

    suite = commands.add_parser("suite", help="list suites or show a suite's lm-eval flags")
    suite.add_argument("action", choices=["list", "show"])
    suite.add_argument("name", nargs="?")
    suite.add_argument("--suites", help="YAML file with your own suites")
    suite.set_defaults(handler=_suite_command)

    board = commands.add_parser("leaderboard", help="run checkpoints x suite, resumable")
    board.add_argument("action", choices=["run"])
    board.add_argument("--models", required=True, help="YAML: checkpoints: [{name, model, ...}]")
    board.add_argument("--suite", required=True)
    board.add_argument("--suites", help="YAML file with your own suites")
    board.add_argument("--tasks", help="comma-separated subset of the suite's tasks")
    board.add_argument("--output", default="leaderboard", help="leaderboard directory")
    board.add_argument("--limit", type=int, help="lm-eval --limit (docs per task)")
    board.epilog = "Extra lm-eval flags for every pair go after `--`."
    board.set_defaults(handler=_leaderboard_command)

    again = commands.add_parser("rescore", help="recompute metrics from --log_samples output")
    again.add_argument("dir", help="an lm-eval --output_path or a leaderboard directory")
    again.add_argument("--output", help="where the rescored runs go (default: DIR_rescored)")
    again.set_defaults(handler=_rescore_command)

    reports.add_arguments(commands.add_parser("report", help="leaderboard report"))
    return top


def main(argv: list[str]) -> None:
    # Everything after a bare `--` is passed to lm-eval untouched.
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser().parse_args(argv[:cut])
    args.lm_eval_args = argv[cut + 1:]
    if args.command == "suite" and args.action == "show" and not args.name:
        raise SystemExit("evalpack suite show: name a suite")
    try:
        status = args.handler(args)
    except (ValueError, TypeError, OSError, yaml.YAMLError) as exc:
        # bad input (a models or suites file, a results directory): one line naming it
        raise SystemExit(f"evalpack {args.command}: error: {exc}") from None
    sys.exit(status)
