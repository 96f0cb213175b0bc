"""Whether a finished lm-eval run has what it was run for: the primary metric of every task it
was asked for, as a number. lm-eval exits cleanly with `NaN` when a metric could not be
computed (every AlpacaEval judgement failed, no judge configured): such a run is a failure with
a reason, never a finished leaderboard pair or a rescored run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..core import catalog
from .rundirs import requested_tasks, results_files


def first_metric(available: dict) -> tuple[str, str]:
    """(metric, filter) of the first metric a result reports: for tasks that declare none."""
    for key in available:
        if "," in key and "_stderr," not in key:
            metric, filt = key.split(",", 1)
            return metric, filt
    return "", ""


def primary_metric(task: str, available: dict) -> tuple[str, str, str]:
    """(metric, filter, label) for a task, from its YAML metadata (a group member: its group's
    metric, under its own name); for a task that declares none (not one of the pack's), its
    first reported metric and its own name."""
    declared = catalog.facts(task)
    if "primary" in declared:
        return (
            declared["primary"]["metric"],
            declared["primary"]["filter"],
            declared.get("label", task),
        )
    group = catalog.group_of(task)
    primary = catalog.facts(group).get("primary") if group else None
    if primary:
        return primary["metric"], primary["filter"], task
    return (*first_metric(available), task)


def missing_primaries(results: dict) -> list[str]:
    """`task: metric is NaN` for each requested task whose primary metric is reported but is
    not a number (a metric lm-eval does not report at all is not judged here)."""
    problems = []
    for task in requested_tasks(results):
        available = results.get("results", {}).get(task, {})
        metric, filt, _ = primary_metric(task, available)
        key = f"{metric},{filt}"
        if key not in available:
            continue
        value = available[key]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
            problems.append(f"{task}: {metric} is {value} (could not be computed)")
    return problems


def run_problem(output: Path) -> str | None:
    """Why the newest run under `output` does not count as finished, or None: no results, or
    a primary metric that is not a number."""
    files = results_files(output)
    if not files:
        return "lm-eval saved no results"
    problems = missing_primaries(json.loads(files[-1].read_text(encoding="utf-8")))
    return "; ".join(problems) or None
