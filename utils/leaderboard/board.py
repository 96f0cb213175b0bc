"""`evalpack leaderboard run`: every (checkpoint, task) pair of a suite through lm-eval,
resumable (layout: `rundirs`).

Work is split by checkpoint: a unit is one checkpoint's unfinished tasks, run in one worker
process that loads the model once (`worker`), on this machine or on a Ray cluster
(`executors`, `ray_dispatch`). A unit that fails or is lost is submitted again with its
unfinished pairs (`max_retries` times), which resume from their completion logs.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from . import identity
from .executors import Unit
from .progress import Progress
from .ray_dispatch import make_executor
from .retries import retryable_reason
from .rundirs import (
    CHECKPOINT_FILE,
    DONE_MARKER,
    FAILED_MARKER,
    PAIR_LOG,
    error_line,
    pair_is_done,
    reason_line,
)

log = logging.getLogger("evalpack.leaderboard")


class Interrupted(Exception):
    """Ctrl-C: the pairs that were running."""

    def __init__(self, pairs: list[str]) -> None:
        super().__init__(", ".join(pairs))
        self.pairs = pairs


def claim_checkpoint_dir(ckpt: dict, ckpt_dir: Path) -> None:
    """Record which model a checkpoint directory holds; refuse one recorded for another model or
    other settings (`identity`), whose cached completions and finished pairs would otherwise be
    reused under this name. A change of transport only (a server's URL) resumes."""
    description = ckpt_dir / CHECKPOINT_FILE
    if description.is_file():
        recorded = json.loads(description.read_text(encoding="utf-8"))
        changed = identity.changes(recorded, ckpt)
        if changed:
            raise ValueError(
                f"{ckpt_dir} holds the results of another model or settings "
                f"({'; '.join(changed)}): give the changed checkpoint a new name, or delete that "
                "directory to start it afresh (a changed base_url, concurrency or timeout "
                "resumes)"
            )
        moved = identity.transport_changes(recorded, ckpt)
        if moved:
            log.info("%s: resuming with %s", ckpt["name"], "; ".join(moved))
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    description.write_text(json.dumps(ckpt, indent=1), encoding="utf-8")


def pair_name(ckpt: dict, entry: dict) -> str:
    return f"{ckpt['name']} x {entry['task']}"


def current_pair(unit: Unit, output: Path) -> str:
    """The pair a running unit is on: its first unfinished one (a worker runs them in order)."""
    for entry in unit.entries:
        if not pair_is_done(output / unit.name / entry["task"]):
            return pair_name(unit.checkpoint, entry)
    return f"{unit.name} (finishing)"


class Board:
    """The bookkeeping of one `leaderboard run`: outcome lists, progress lines, retries."""

    def __init__(self, output: Path, max_retries: int, progress: Progress, outcome: dict):
        self.output, self.max_retries = output, max_retries
        self.progress, self.outcome = progress, outcome
        self.reported: set[tuple] = set()
        self.final: set[tuple] = set()  # (checkpoint, task) failed for good: not retried

    def pair_dir(self, unit: Unit, entry: dict) -> Path:
        return self.output / unit.name / entry["task"]

    def report_markers(self, units: list[Unit]) -> None:
        """A line for every pair of `units` that finished or failed since the last look."""
        for unit in units:
            for entry in unit.entries:
                key, folder = (unit.name, entry["task"], unit.attempt), self.pair_dir(unit, entry)
                if key in self.reported:
                    continue
                if (folder / DONE_MARKER).is_file():
                    self.reported.add(key)
                    marker = json.loads((folder / DONE_MARKER).read_text(encoding="utf-8"))
                    self.outcome["ran"].append(f"{unit.name}/{entry['task']}")
                    self.progress.finished(
                        pair_name(unit.checkpoint, entry),
                        marker.get("seconds"),
                        str(marker.get("node", "?")),
                    )
                elif (folder / FAILED_MARKER).is_file():
                    self.reported.add(key)
                    reason = (folder / FAILED_MARKER).read_text(encoding="utf-8").strip()
                    reason = reason or reason_line(folder / PAIR_LOG)
                    self.failed(unit, entry, reason, retryable_reason(reason))

    def failed(self, unit: Unit, entry: dict, reason: str, transient: bool = True) -> None:
        """A failed pair: retried while attempts are left if its cause may be `transient`
        (`retries`), else failed for good now."""
        if not transient:
            self.final.add((unit.name, entry["task"]))
            note = " (not retried: a retry would fail the same way)"
        elif unit.attempt <= self.max_retries:
            note = f" (attempt {unit.attempt} of {self.max_retries + 1}, will retry)"
        else:
            note = ""
        if "will retry" not in note:
            self.outcome["failed"].append(f"{unit.name}/{entry['task']}")
        self.progress.failed(pair_name(unit.checkpoint, entry), reason, note)

    def settle(self, unit: Unit, error: str | None) -> Unit | None:
        """After a unit ended: report pairs it left without a marker; the retry, if any."""
        unfinished = [
            e
            for e in unit.entries
            if not pair_is_done(self.pair_dir(unit, e)) and (unit.name, e["task"]) not in self.final
        ]
        unmarked = [
            e for e in unfinished if (unit.name, e["task"], unit.attempt) not in self.reported
        ]
        for number, entry in enumerate(unmarked):
            folder = self.pair_dir(unit, entry)
            if number == 0:  # the pair it was on when it ended
                reason = error or "the worker ended without finishing it"
                logged = error_line(folder / PAIR_LOG)
                if logged:
                    reason += f"; log: {logged}"
                self.failed(unit, entry, reason)
            elif unit.attempt > self.max_retries:
                self.failed(unit, entry, "not run: its checkpoint's worker failed before it")
        if unfinished and unit.attempt <= self.max_retries:
            return Unit(unit.checkpoint, unfinished, unit.attempt + 1)
        return None


def pending_units(
    checkpoints: list[dict],
    entries: list[dict],
    output: Path,
    outcome: dict,
    cannot: dict | None = None,
) -> list[Unit]:
    """One unit per checkpoint with unfinished pairs; finished and refused pairs, and those the
    plan found cannot run (`cannot`: {(checkpoint, task): reason}), go straight into
    `outcome`."""
    units = []
    for ckpt in checkpoints:
        ckpt_dir = output / ckpt["name"]
        try:
            claim_checkpoint_dir(ckpt, ckpt_dir)
        except ValueError as exc:
            log.error("%s", exc)
            for entry in entries:
                log.error(
                    "%s: not run (checkpoint directory holds another model)", pair_name(ckpt, entry)
                )
                outcome["failed"].append(f"{ckpt['name']}/{entry['task']}")
            continue
        pending = []
        for entry in entries:
            if pair_is_done(ckpt_dir / entry["task"]):
                log.info("%s: finished earlier, skipped", pair_name(ckpt, entry))
                outcome["done"].append(f"{ckpt['name']}/{entry['task']}")
            elif (ckpt["name"], entry["task"]) in (cannot or {}):
                outcome["cannot"].append(f"{ckpt['name']}/{entry['task']}")
            else:
                pending.append(entry)
        if pending:
            units.append(Unit(ckpt, pending))
    return units


def run_leaderboard(
    checkpoints: list[dict],
    entries: list[dict],
    output: Path,
    extra: list[str],
    executor: str = "local",
    address: str | None = None,
    max_retries: int = 2,
    cannot: dict | None = None,
    gpus: list[str] | None = None,
) -> dict[str, list[str]]:
    """Every pair not yet finished and not in `cannot` (the plan's pairs that cannot run);
    returns the pairs `done` (before), `ran`, `failed` and `cannot`. Raises `Interrupted`
    (naming the running pairs) on Ctrl-C, after stopping the workers (and their servers).
    `gpus`: the devices checkpoints with `serve:` share (`gpu_pool`)."""
    outcome: dict[str, list[str]] = {"done": [], "ran": [], "failed": [], "cannot": []}
    queue = pending_units(checkpoints, entries, output, outcome, cannot)
    if not queue:
        return outcome
    # the bar counts the pairs that run now: not those finished earlier, refused or that cannot
    progress = Progress(sum(len(unit.entries) for unit in queue))
    board = Board(output, max_retries, progress, outcome)
    runner = None
    try:
        runner = make_executor(executor, output, extra, address, gpus)
        while queue or runner.units():
            # the first waiting unit there is room for (a smaller one may pass a larger one)
            while fits := next((u for u in queue if runner.has_room(u)), None):
                queue.remove(fits)
                runner.start(fits)
            ended = runner.wait(1.0)
            board.report_markers(runner.units() + [unit for unit, _ in ended])
            for unit, error in ended:
                retry = board.settle(unit, error)
                if retry:
                    queue.append(retry)
    except KeyboardInterrupt:
        running = [current_pair(u, output) for u in (runner.units() if runner else [])]
        if runner:
            runner.cancel()
        raise Interrupted(running) from None
    return outcome
