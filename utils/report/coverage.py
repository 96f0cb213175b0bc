"""What a report lacks: the pairs of a leaderboard that failed (a `failed` marker: their
results, if any, are not scores) and the suite members that never ran (the board's plan names
them, and why they could not run), so that neither a missing column nor an average over part of
a suite passes for the whole; and the `--checkpoints` filter that leaves out rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ..core.suggest import did_you_mean
from ..leaderboard.plan import PLAN_FILE
from ..leaderboard.rundirs import DONE_MARKER, FAILED_MARKER, run_folder


def pair_failure(folder: Path) -> str | None:
    """The reason in a pair folder's `failed` marker (and no `done`), else None."""
    if (folder / FAILED_MARKER).is_file() and not (folder / DONE_MARKER).is_file():
        return (folder / FAILED_MARKER).read_text(encoding="utf-8").strip() or "failed"
    return None


def failed_pair(results_file: Path) -> str | None:
    """The reason a leaderboard pair failed when `results_file` belongs to one, else None."""
    return pair_failure(run_folder(results_file))


def board_plan(root: Path) -> dict | None:
    """The plan `leaderboard run` saved in a board directory, if any."""
    path = root / PLAN_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def missing_text(status: str) -> str:
    """A short cell for a pair with no score: `failed`, `not run`."""
    return "failed" if status.startswith("failed") else "not run"


def gaps(checkpoints: dict, columns: list[dict]) -> dict:
    """{checkpoint: {task: why it has no score}} for every column a checkpoint lacks: its
    failure, the plan's reason it could not run, or `not run`."""
    found: dict[str, dict] = {}
    for name, ckpt in checkpoints.items():
        plan = ckpt.get("plan", {})
        for column in columns:
            task = column["task"]
            if task in ckpt["results"]:
                continue
            if task in ckpt.get("failed", {}):
                why = f"failed: {ckpt['failed'][task]}"
            else:
                status = plan.get(task, "run")
                why = "not run" + ("" if status in ("run", "done") else f": {status}")
            found.setdefault(name, {})[task] = why
    return found


def checkpoint_names(choice: str) -> list[str]:
    """`--checkpoints`: comma-separated names, or a models.yaml whose checkpoints to keep."""
    path = Path(choice)
    if path.suffix in (".yaml", ".yml", ".json") and path.is_file():
        config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return [str(c["name"]) for c in config.get("checkpoints", []) if isinstance(c, dict)]
    return [name.strip() for name in choice.split(",") if name.strip()]


def keep_checkpoints(checkpoints: dict, choice: str | None) -> dict:
    """The rows `--checkpoints` names (a row `LABEL/name` matches `name` too), in the order
    named; a name no row has is an error listing the rows there are."""
    if not choice:
        return checkpoints
    wanted = checkpoint_names(choice)
    kept = {
        row: checkpoints[row]
        for name in wanted
        for row in checkpoints
        if name in (row, row.rsplit("/", 1)[-1])
    }
    unknown = [w for w in wanted if not any(w in (r, r.rsplit("/", 1)[-1]) for r in kept)]
    if unknown:
        raise ValueError(
            f"--checkpoints: no row named {unknown[0]!r}"
            f"{did_you_mean(unknown[0], checkpoints)}; the rows: "
            f"{', '.join(sorted(checkpoints))}"
        )
    return kept
