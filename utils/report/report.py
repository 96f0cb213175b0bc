"""`evalpack report`: one leaderboard from lm-eval result files.

Reads every `results_*.json` under the given directories (an lm-eval `--output_path`, a leaderboard
directory, or `NAME=DIR` to name the row yourself). A row is a checkpoint: the `checkpoint.json`
that `evalpack leaderboard run` leaves in the checkpoint's directory names it (prefixed `NAME/`
when the leaderboard is given as `NAME=DIR`), else the directory given; the same name from two
sources is refused, never merged. Of one checkpoint's several results for a task, the newest wins.

What to show for a task comes from its YAML metadata (`catalog.facts`): the primary metric and
filter, the label, the breakdowns, and the published reference figures. Writes `report.json`
(numbers exactly as in the result files, 0..1), `report.md`, a self-contained `report.html` and PNG
plots (`render`, `plots`). Tables show percentages; deltas are points against the reference row,
marked not comparable for a run that did not score every doc (`--limit`); `--baseline NAME` adds
paired comparisons with that checkpoint (`compare`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..core import catalog
from ..core.data import read_jsonl
from ..core.yaml_files import read_yaml
from ..leaderboard.outcome import primary_metric
from ..leaderboard.rundirs import CHECKPOINT_FILE, requested_tasks, results_files
from .compare import compare
from .coverage import board_plan, failed_pair, gaps, keep_checkpoints, pair_failure
from .render import write_report

log = logging.getLogger("evalpack.report")
DEFAULT_REFERENCE_MODEL = "Tulu-3-8B-SFT"


# --- reading ------------------------------------------------------------------------------------


def described_name(results_file: Path, root: Path) -> str | None:
    """The name in the nearest `checkpoint.json` between the file and `root`, if any."""
    for folder in [results_file.parent, *results_file.parent.parents]:
        description = folder / CHECKPOINT_FILE
        if description.is_file():
            return json.loads(description.read_text(encoding="utf-8"))["name"]
        if folder == root:
            break
    return None


def checkpoint_name(results_file: Path, root: Path, label: str | None) -> str:
    """A row's name: `LABEL/checkpoint` for a named leaderboard, `LABEL` for a named run,
    else the checkpoint's own name, else the model's (lm-eval's `DIR/<model>/` folder)."""
    described, folder = described_name(results_file, root), results_file.parent.resolve()
    if label:
        return f"{label}/{described}" if described else label
    return described or (folder if folder != root.resolve() else root.resolve()).name


def split_source(source: str) -> tuple[str | None, Path]:
    """`NAME=DIR` or `DIR`."""
    label, sep, folder = source.partition("=")
    return (label, Path(folder)) if sep and label else (None, Path(source))


def add_docs(ckpt: dict, data: dict) -> None:
    """Docs scored and in total per task, from lm-eval's `n-samples`."""
    for task, counts in (data.get("n-samples") or {}).items():
        ckpt["docs"][task] = {"scored": counts.get("effective"), "total": counts.get("original")}


def collect(sources: list[str]) -> dict:
    """Per checkpoint: task results, the tasks asked for, each task's sample log and docs.
    A checkpoint name found under two sources is refused (name the sources to prefix them)."""
    checkpoints: dict[str, dict] = {}
    origin: dict[str, str] = {}
    for source in sources:
        label, root = split_source(source)
        files = results_files(root)
        if not files and board_plan(root) is None:  # a board whose pairs all failed: its plan
            raise FileNotFoundError(f"no lm-eval results_*.json under {root}")
        for results_file in files:  # oldest first, so newer results overwrite older ones
            name = checkpoint_name(results_file, root, label)
            if origin.setdefault(name, source) != source:
                raise ValueError(
                    f"checkpoint {name!r} is in both {origin[name]} and {source}: name them "
                    f"(a={origin[name].split('=')[-1]} b={root}) to tell their rows apart"
                )
            data = json.loads(results_file.read_text(encoding="utf-8"))
            ckpt = checkpoints.setdefault(name, new_checkpoint())
            failure = failed_pair(results_file)
            if failure:  # a failed leaderboard pair's results are no scores
                ckpt["failed"].update({task: failure for task in requested_tasks(data)})
                ckpt["top"] += [t for t in requested_tasks(data) if t not in ckpt["top"]]
                continue
            ckpt["results"].update(data["results"])
            ckpt["top"] += [t for t in requested_tasks(data) if t not in ckpt["top"]]
            add_docs(ckpt, data)
            stamp = results_file.stem.removeprefix("results_")
            for task in data.get("configs", {}):
                samples = results_file.with_name(f"samples_{task}_{stamp}.jsonl")
                if samples.is_file():
                    ckpt["samples"][task] = samples
        add_plan(checkpoints, board_plan(root), label, root)
    return checkpoints


def new_checkpoint() -> dict:
    return {"results": {}, "top": [], "samples": {}, "docs": {}, "failed": {}, "plan": {}}


def add_plan(checkpoints: dict, plan: dict | None, label: str | None, root: Path) -> None:
    """A board's plan: every suite member becomes a column of its checkpoints, in the suite's
    order (so members that never ran are shown), with the reason a pair could not run or, for
    a pair that failed before lm-eval saved anything, why it failed."""
    for ckpt_name, statuses in (plan or {}).get("pairs", {}).items():
        ckpt = checkpoints.setdefault(
            f"{label}/{ckpt_name}" if label else ckpt_name, new_checkpoint()
        )
        ckpt["plan"] = statuses
        for task in statuses:
            failure = pair_failure(root / ckpt_name / task)
            if failure and task not in ckpt["results"]:
                ckpt["failed"].setdefault(task, failure)
        ckpt["top"] = [*plan["tasks"], *(t for t in ckpt["top"] if t not in plan["tasks"])]


# --- references ---------------------------------------------------------------------------------


def published_reference(model: str, tasks: list[str]) -> dict:
    """The reference row for `model` from the published figures the tasks' YAML declares."""
    scores = {}
    for task in tasks:
        declared = catalog.facts(task)
        for ref in declared.get("references", []):
            if ref["model"] == model:
                metric = ref.get("metric", declared.get("primary", {}).get("metric"))
                scores[task] = {"value": ref["value"], "metric": metric, "source": ref["source"]}
    return {"name": f"{model} (published)", "scores": scores}


def load_reference(choice: str | None, tasks: list[str]) -> dict | None:
    """The reference row: a published model's figures (`Tulu-3-8B-SFT` by default), a YAML
    file `{name, scores: {task: {value, metric, source}}}`, or none."""
    if choice == "none":
        return None
    if choice is None or not Path(choice).suffix:
        return published_reference(choice or DEFAULT_REFERENCE_MODEL, tasks)
    reference = read_yaml(choice)
    if not isinstance(reference, dict) or not isinstance(reference.get("scores"), dict):
        raise TypeError(f"{choice}: a reference needs `name` and `scores: {{task: {{value}}}}`")
    return reference


# --- the leaderboard data -----------------------------------------------------------------------


def columns_for(checkpoints: dict) -> list[dict]:
    """One column per task asked for, in order of first appearance."""
    columns, seen = [], set()
    for ckpt in checkpoints.values():
        for task in ckpt["top"]:
            if task not in seen:
                seen.add(task)
                metric, filt, label = primary_metric(task, ckpt["results"].get(task, {}))
                columns.append({"task": task, "metric": metric, "filter": filt, "label": label})
    return columns


def docs_of(docs: dict, task: str) -> dict:
    """{scored, total} for a task or group (summed over its member tasks)."""
    if task in docs:
        return docs[task]
    parts = [docs_of(docs, m) for m in catalog.members(catalog.task_config(task))]
    parts = [p for p in parts if p.get("scored") is not None]
    if not parts:
        return {"scored": None, "total": None}
    return {key: sum(p[key] or 0 for p in parts) for key in ("scored", "total")}


def cell(ckpt: dict, column: dict, reference: dict | None) -> dict | None:
    """One score: value and stderr as lm-eval reported them, delta in points against the
    reference, the docs scored, read and in the benchmark, and whether the delta compares."""
    results, docs = ckpt["results"], docs_of(ckpt.get("docs", {}), column["task"])
    task_results = results.get(column["task"], {})
    key = f"{column['metric']},{column['filter']}"
    value = task_results.get(key)
    if not isinstance(value, (int, float)):
        return None
    stderr = task_results.get(f"{column['metric']}_stderr,{column['filter']}")
    if catalog.facts(column["task"]).get("primary", {}).get("percent"):
        # metrics reported on a 0-100 scale (AlpacaEval's, as OLMES names them)
        value = value / 100
        stderr = stderr / 100 if isinstance(stderr, (int, float)) else stderr
    ref = (reference or {}).get("scores", {}).get(column["task"])
    usable = ref and ref.get("metric", column["metric"]) == column["metric"]
    return {
        "value": value,
        "stderr": stderr if isinstance(stderr, (int, float)) else None,
        "delta": round(100 * value - ref["value"], 10) if usable else None,
        **docs,
        "benchmark_docs": catalog.facts(column["task"]).get("docs"),
        "comparable": comparable(docs, catalog.facts(column["task"]).get("docs")),
    }


def comparable(docs: dict, full: int | None) -> bool:
    """Whether a score covers the benchmark the published figures are on: every doc of its
    data scored (no `--limit`), and as many docs as the benchmark declares (`metadata.docs`),
    so a sample in a mirror (the demo's 15 MATH problems) is not compared as the whole."""
    return (
        docs["scored"] is not None
        and docs["scored"] == docs["total"]
        and (full is None or docs["total"] == full)
    )


def subtask_scores(checkpoints: dict, column: dict) -> dict:
    """{checkpoint: {subtask: value}}: a group's members on its primary metric (the member's
    name less the group's prefix)."""
    group, key = column["task"], f"{column['metric']},{column['filter']}"
    subtasks = catalog.members(catalog.task_config(group))
    scores: dict[str, dict] = {}
    for name, ckpt in checkpoints.items():
        for task in subtasks:
            value = ckpt["results"].get(task, {}).get(key)
            if isinstance(value, (int, float)):
                scores.setdefault(name, {})[task.removeprefix(group + "_")] = value
    return scores


def prefix_scores(per_subtask: dict, separator: str) -> dict:
    """{checkpoint: {prefix: value}}: the plain mean of each checkpoint's subtasks whose names
    share the part before `separator` (DeepMind Mathematics' areas over its categories)."""
    scores: dict[str, dict] = {}
    for name, values in per_subtask.items():
        groups: dict[str, list[float]] = {}
        for subtask, value in values.items():
            groups.setdefault(subtask.split(separator)[0], []).append(value)
        scores[name] = {prefix: sum(v) / len(v) for prefix, v in groups.items()}
    return scores


def field_scores(samples: list[dict], field: str, metric: str) -> dict[str, dict]:
    """{value of doc[field]: {correct, n, value}} from one task's sample log."""
    counts: dict[str, list[float]] = {}
    for sample in samples:
        key = str(sample["doc"].get(field, "unknown"))
        counts.setdefault(key, []).append(float(sample[metric]))
    return {
        key: {"correct": sum(v), "n": len(v), "value": sum(v) / len(v)}
        for key, v in sorted(counts.items())
    }


def doc_field_scores(
    checkpoints: dict, tasks: list[str], prefix: str, field: str, metric: str
) -> dict:
    """{checkpoint: {task less prefix: {field value: {correct, n, value}}}} from sample logs."""
    scores: dict[str, dict] = {}
    for name, ckpt in checkpoints.items():
        for task in tasks:
            if task in ckpt["samples"]:
                samples = read_jsonl(ckpt["samples"][task])
                scores.setdefault(name, {})[task.removeprefix(prefix + "_")] = field_scores(
                    samples, field, metric
                )
    return scores


def suffix_scores(checkpoints: dict, column: dict, suffix: str, prefix: str = "") -> dict:
    """{checkpoint: {metric less suffix: value}}: a task's per-item metrics (IFEval's
    `<instruction>_loose_acc`), those starting with `prefix` only (pass@k's `pass_at_`)."""
    scores, tail = {}, f"{suffix},{column['filter']}"
    for name, ckpt in checkpoints.items():
        for key, value in ckpt["results"].get(column["task"], {}).items():
            wanted = key.startswith(prefix) and key.endswith(tail) and "_stderr" not in key
            if wanted and isinstance(value, (int, float)):
                scores.setdefault(name, {})[key.removesuffix(tail)] = value
    return scores


def declared_breakdowns(task: str) -> tuple[str, list[dict]]:
    """(owner, specs): the breakdowns a task declares, else (for a group member run on its
    own) its group's per-doc ones."""
    specs = catalog.facts(task).get("breakdown")
    if specs:
        return task, specs
    group = catalog.group_of(task)
    inherited = catalog.facts(group).get("breakdown", []) if group else []
    return group or task, [s for s in inherited if s["by"] == "doc_field"]


def breakdown_scores(checkpoints: dict, column: dict, owner: str, spec: dict) -> dict:
    if spec["by"] == "subtasks":
        return subtask_scores(checkpoints, column)
    if spec["by"] == "subtask_prefix":
        return prefix_scores(subtask_scores(checkpoints, column), spec["separator"])
    if spec["by"] == "doc_field":
        tasks = catalog.members(catalog.task_config(column["task"])) or [column["task"]]
        return doc_field_scores(checkpoints, tasks, owner, spec["field"], column["metric"])
    return suffix_scores(checkpoints, column, spec["suffix"], spec.get("prefix", ""))


def breakdowns(checkpoints: dict, columns: list[dict]) -> list[dict]:
    """Every breakdown the columns' tasks declare, as plain data; group members run on their
    own share one entry per breakdown of their group."""
    found: dict[tuple, dict] = {}
    for column in columns:
        owner, specs = declared_breakdowns(column["task"])
        for spec in specs:
            scores = breakdown_scores(checkpoints, {**column, **spec}, owner, spec)  # its metric
            if not scores:
                continue
            label = catalog.facts(owner).get("label", owner)
            entry = found.setdefault(
                (owner, *spec.values()),
                {"task": owner, "label": label, "metric": column["metric"], **spec, "scores": {}},
            )
            for name, values in scores.items():
                entry["scores"].setdefault(name, {}).update(values)
    return list(found.values())


def present_reference(reference: dict | None, columns: list[dict]) -> dict | None:
    """The reference with only the benchmarks this report has."""
    if not reference:
        return reference
    tasks = {c["task"] for c in columns}
    return {**reference, "scores": {t: v for t, v in reference["scores"].items() if t in tasks}}


def average(rows: list[dict], reference: dict | None, columns: list[dict]) -> dict:
    """Each row's mean primary score (0..1) over the benchmarks the reference has (all when
    there is none) that some row scored, and the reference's (percent) over the same: None for
    a row that lacks one of them, so an average never mixes different benchmark sets.
    `left_out` names the benchmarks no row scored: the average is then not the suite's."""
    ref_scores = (reference or {}).get("scores", {})
    wanted = (
        [c["task"] for c in columns if c["task"] in ref_scores]
        if ref_scores
        else [c["task"] for c in columns]
    )
    tasks = [t for t in wanted if any(row["scores"][t] for row in rows)]
    values = {}
    for row in rows:
        scores = [row["scores"][t] for t in tasks]
        values[row["checkpoint"]] = (
            sum(s["value"] for s in scores) / len(scores) if tasks and all(scores) else None
        )
    ref_avg = (
        sum(ref_scores[t]["value"] for t in tasks) / len(tasks) if ref_scores and tasks else None
    )
    return {
        "tasks": tasks,
        "rows": values,
        "reference": ref_avg,
        "left_out": [t for t in wanted if t not in tasks],
    }


def build_report(
    checkpoints: dict, reference: dict | None, title: str, baseline: str | None = None
) -> dict:
    """Plain data for every output format."""
    columns = columns_for(checkpoints)
    reference = present_reference(reference, columns)
    missing = gaps(checkpoints, columns)
    rows = [
        {
            "checkpoint": name,
            "scores": {c["task"]: cell(ckpt, c, reference) for c in columns},
            "missing": missing.get(name, {}),
        }
        for name, ckpt in checkpoints.items()
    ]
    return {
        "title": title,
        "columns": columns,
        "rows": rows,
        "reference": reference,
        "average": average(rows, reference, columns),
        "baseline": compare(checkpoints, columns, baseline) if baseline else None,
        "breakdowns": breakdowns(checkpoints, columns),
    }


def report_command(args) -> int:
    """`evalpack report DIR... --output OUT`."""
    checkpoints = keep_checkpoints(collect(args.dirs), getattr(args, "checkpoints", None))
    tasks = [t for ckpt in checkpoints.values() for t in ckpt["top"]]
    report = build_report(
        checkpoints,
        load_reference(args.reference, tasks),
        args.title,
        getattr(args, "baseline", None),
    )
    written = write_report(report, Path(args.output))
    log.info("report: %s", ", ".join(str(p) for p in written.values()))
    return 0
