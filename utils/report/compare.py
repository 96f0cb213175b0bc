"""Checkpoints against a baseline checkpoint, per benchmark, paired over the same docs.

Per doc scores come from the sample logs (`--log_samples`): the primary metric of the rows of
the primary filter, paired by (task, doc_id, doc_hash), so a doc is only compared with itself.
A group is compared the way lm-eval aggregates it: each member task is a stratum, weighted by
its size (`weight_by_size: true`, lm-eval's default) or equally. The interval is
`scoring.paired`'s bootstrap, in percentage points; significance is its sign-flip test (n, p
shown), valid however few the docs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core import catalog
from ..core.data import read_jsonl
from ..scoring.paired import doc_score, paired_bootstrap, paired_differences

METHOD = (
    "paired bootstrap over docs (10,000 resamples), 95% percentile interval; * when a "
    "paired sign-flip test gives p < 0.05 (exact up to 16 docs that differ)"
)


def doc_scores(samples_file: Path, metric: str, filt: str) -> dict[tuple, float]:
    """{(doc_id, doc_hash): score} for one task's sample log."""
    scores = {}
    for row in read_jsonl(samples_file):
        if row.get("filter", filt) == filt and metric in row:
            scores[(row["doc_id"], row.get("doc_hash"))] = doc_score(row[metric])
    return scores


def by_size(group: str, metric: str) -> bool:
    for agg in catalog.task_config(group).get("aggregate_metric_list", []) or []:
        if agg.get("metric") == metric:
            return bool(agg.get("weight_by_size", True))
    return True


def stratum_weights(task: str, metric: str, sizes: dict[str, int]) -> dict[str, float]:
    """{leaf task: weight} so that Σ weight · mean difference is the group's difference."""
    members = catalog.members(catalog.task_config(task))
    if not members:
        return {task: float(sizes.get(task, 0))}
    weights: dict[str, float] = {}
    for member in members:
        inner = stratum_weights(member, metric, sizes)
        inner_total = sum(inner.values())
        if not inner_total:
            continue
        share = inner_total if by_size(task, metric) else 1.0
        weights.update({leaf: share * w / inner_total for leaf, w in inner.items()})
    return weights


def compare_column(candidate: dict, baseline: dict, column: dict) -> dict:
    """One checkpoint against the baseline on one column: a `Comparison` as a dict in points,
    or {"why": ...} when the sample logs do not allow it."""
    diffs = {}
    for leaf in catalog.leaves(column["task"]):
        files = candidate["samples"].get(leaf), baseline["samples"].get(leaf)
        if None in files:
            continue
        mine, theirs = (doc_scores(f, column["metric"], column["filter"]) for f in files)
        diffs[leaf] = paired_differences(mine, theirs)
    if not any(len(d) for d in diffs.values()):
        return {"why": "no sample logs of the same docs"}
    weights = stratum_weights(
        column["task"], column["metric"], {leaf: len(d) for leaf, d in diffs.items()}
    )
    leaf_names = [leaf for leaf in diffs if weights.get(leaf)]
    result = paired_bootstrap(
        [diffs[leaf] for leaf in leaf_names], [weights[leaf] for leaf in leaf_names]
    ).as_dict()
    scale = 1 / 100 if catalog.facts(column["task"]).get("primary", {}).get("percent") else 1
    for key in ("delta", "low", "high"):
        result[key] = float(np.round(100 * scale * result[key], 10))
    return result


def compare(checkpoints: dict, columns: list[dict], baseline: str) -> dict:
    """{"name", "method", "rows": {checkpoint: {task: comparison}}} for every checkpoint but
    the baseline."""
    if baseline not in checkpoints:
        raise ValueError(
            f"--baseline {baseline!r} is not a checkpoint of this report; "
            f"its checkpoints: {', '.join(checkpoints)}"
        )
    rows = {
        name: {
            column["task"]: compare_column(ckpt, checkpoints[baseline], column)
            for column in columns
        }
        for name, ckpt in checkpoints.items()
        if name != baseline
    }
    return {"name": baseline, "method": METHOD, "rows": rows}
