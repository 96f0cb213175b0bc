"""Rewards for rollouts: a task's per-sample metrics computed by the task's own lm-eval
filters and `process_results` (the pack's scorers, bounded in time; code through the sandbox),
and the per-doc, per-subtask results over a group of rollouts with the pack's estimators.

`score_samples` runs exactly what lm-eval's evaluator runs for a doc with one response (the
completion cut at the request's stop strings, as the pack's backends cut it), so a reward
equals the per-sample metric the lm-eval path logs for the same completion. Nothing here
imports `verifiers`.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import mean

from lm_eval.api.instance import Instance

from ..core.text import cut_at_stops
from ..models.requests import render_messages
from ..scoring.sampling_metrics import pass_at_k, powers_of_two_up_to
from .rows import NotAChatTask, Row, lm_tasks, loaded

_PASS_K = re.compile(r"pass(?:_at_|@)(\d+)")
_ONE_SAMPLE = re.compile(r"(_at_|@)\d+")  # pass_at_10 -> pass_at_1, pass@16 -> pass@1
_LOCK = threading.Lock()  # lm-eval task objects are not made for concurrent scoring


@dataclass(frozen=True)
class Primary:
    metric: str  # the per-sample metric the reward is
    filter: str


def declared_primary(row: Row, metadata: dict | None = None) -> dict:
    """The task's declared primary metric (YAML `metadata.primary`; a group's applies to its
    subtasks)."""
    tasks_and_groups = loaded(row.group, metadata)
    declared = (tasks_and_groups["tasks"][row.task].config.metadata or {}).get("primary")
    for group in (tasks_and_groups.get("groups") or {}).values():
        declared = declared or (getattr(group, "metadata", None) or {}).get("primary")
    if not declared:
        raise ValueError(f"{row.task}: its YAML declares no metadata.primary to reward")
    return declared


def primary(row: Row, metadata: dict | None = None) -> Primary:
    """The primary metric as one sample's metric: pass_at_10 over n samples is pass_at_1 of
    one."""
    declared = declared_primary(row, metadata)
    return Primary(_ONE_SAMPLE.sub(r"\g<1>1", declared["metric"]), declared["filter"])


def check_rewardable(row: Row, metadata: dict | None = None) -> None:
    """A reward must be a per-sample score: the primary metric (as one sample's) must be one the
    task averages over docs (AlpacaEval's judged win rate is computed over the whole set)."""
    chosen = primary(row, metadata)
    task = lm_tasks(row.group, metadata)[row.task]
    # lm-eval averages a metric its metric_list does not name (or names with no aggregation)
    aggregation = {
        m["metric"]: m.get("aggregation") or "mean" for m in task.config.metric_list or []
    }
    if aggregation.get(chosen.metric, "mean") != "mean":
        raise NotAChatTask(
            f"{row.task}: its primary metric {chosen.metric} is not a mean of "
            "per-sample scores, so no reward can be one sample's; it has no "
            "verifiers environment"
        )


def score_samples(
    rows: Sequence[Row], completions: Sequence[str], metadata: dict | None = None
) -> list[dict]:
    """Per (row, completion): every metric the task's `process_results` gives for that one
    response under each of its filters, keyed `metric,filter` as lm-eval logs them. All
    samples of one subtask go through its filters in one batch (parallel execution)."""
    by_task: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_task[row.task].append(i)
    out: list[dict] = [{} for _ in rows]
    for name, positions in by_task.items():
        task = lm_tasks(rows[positions[0]].group, metadata)[name]
        instances = [_instance(rows[i], completions[i]) for i in positions]
        with _LOCK:
            for ensemble in task._filters:
                ensemble.apply(instances)
            for i, instance in zip(positions, instances):
                for key, value in instance.filtered_resps.items():
                    metrics = task.process_results(rows[i].doc, [value])
                    out[i].update({f"{metric},{key}": v for metric, v in metrics.items()})
    return out


def _instance(row: Row, completion: str) -> Instance:
    instance = Instance(
        request_type="generate_until",
        doc=row.doc,
        arguments=(render_messages(row.messages), row.gen_kwargs),
        idx=0,
        metadata=(row.task, row.doc_id, 1),
    )
    instance.resps = [cut_at_stops(completion, row.stops)]
    return instance


def reward(row: Row, scores: dict, metadata: dict | None = None) -> float:
    """The reward of one scored sample: its primary per-sample metric."""
    chosen = primary(row, metadata)
    key = f"{chosen.metric},{chosen.filter}"
    if key not in scores:
        raise ValueError(
            f"{row.task}: its scorers gave no {key} (they gave {', '.join(sorted(scores))})"
        )
    return float(scores[key])


def numeric(scores: dict) -> dict[str, float]:
    """The scalar metrics of a sample (IFEval's per-instruction lists are left to the log)."""
    return {k: float(v) for k, v in scores.items() if isinstance(v, (int, float))}


@dataclass(frozen=True)
class Rollout:
    """One finished rollout as the summary needs it."""

    task: str
    doc_key: str
    reward: float
    metrics: dict


def declared_ks(row: Row, metadata: dict | None = None) -> list[int]:
    """The ks of a task's pass@k metrics, its primary's and its metric list's (HumanEval's
    pass_at_10: 1 and 10; MBPP+'s olmo3 task: 1, 5 and 10)."""
    task = lm_tasks(row.group, metadata)[row.task]
    names = [m["metric"] for m in task.config.metric_list or []]
    names.append(declared_primary(row, metadata)["metric"])
    return sorted({int(found[1]) for name in names if (found := _PASS_K.search(name))})


def summarize(rollouts: Iterable[Rollout], ks: Iterable[int] = ()) -> dict[str, dict[str, float]]:
    """Per subtask: the mean of every metric and of the reward over all rollouts, and the
    pack's unbiased pass@k (k = 1, 2, 4, ... and `ks`, up to the rollouts per doc; reward > 0
    counting as correct) averaged over docs; the docs' count and rollouts per doc."""
    per_task: dict[str, dict[str, list[Rollout]]] = defaultdict(lambda: defaultdict(list))
    for rollout in rollouts:
        per_task[rollout.task][rollout.doc_key].append(rollout)
    summary = {}
    for task, docs in sorted(per_task.items()):
        samples = [r for group in docs.values() for r in group]
        n = min(len(group) for group in docs.values())
        result = {
            "docs": float(len(docs)),
            "rollouts_per_doc": float(n),
            "reward": mean(r.reward for r in samples),
        }
        for key in sorted({k for r in samples for k in r.metrics}):
            values = [r.metrics[key] for r in samples if key in r.metrics]
            result[key] = mean(values)
        for k in sorted(set(powers_of_two_up_to(n)) | {k for k in ks if k <= n}):
            result[f"pass@{k}"] = mean(
                pass_at_k(len(group), sum(r.reward > 0 for r in group), k)
                for group in docs.values()
            )
        summary[task] = result
    return summary
