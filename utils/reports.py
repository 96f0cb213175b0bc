"""`evalpack report`: one leaderboard from lm-eval result files.

Reads every `results_*.json` under the given directories (an lm-eval `--output_path`, a
leaderboard directory, or `NAME=DIR` to name the row yourself). A row is a checkpoint: the
`checkpoint.json` that `evalpack leaderboard run` leaves in the checkpoint's directory names it,
else the directory given. When one checkpoint has several results for a task, the newest wins.

Writes `report.json` (the data below, numbers exactly as in the result files, 0..1),
`report.md`, a self-contained `report.html` (plots embedded as base64 PNG) and the PNGs.
Tables show percentages; deltas are percentage points against the reference row.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import logging
import math
from pathlib import Path

import yaml

from evalpack.data import read_jsonl
from evalpack.runs import CHECKPOINT_FILE, requested_tasks, results_files

log = logging.getLogger("evalpack.reports")

# Primary metric per task, by the longest matching task-name prefix: (metric, filter, label).
PRIMARY = {
    "minerva_math_tulu": ("exact_match_flex", "olmes", "MATH"),
    "minerva_math_500_tulu": ("exact_match_flex", "olmes", "MATH-500"),
    "bbh_cot_v1_tulu": ("exact_match", "cot", "BBH cot-v1"),
    "bbh_cot_tulu": ("exact_match", "cot", "BBH (release)"),
    "codex_humaneval_tulu": ("pass_at_10", "execution", "HumanEval pass@10"),
    "codex_humaneval_tulu_greedy": ("pass_at_1", "execution", "HumanEval greedy"),
    "reasoning_math": ("pass@1", "samples", "Reasoning math pass@1"),
    "math500": ("pass@1", "samples", "MATH-500 pass@1"),
    "aime24": ("pass@1", "samples", "AIME24 pass@1"),
    "aime25": ("pass@1", "samples", "AIME25 pass@1"),
}

# Tulu-3 8B SFT's published numbers (percent); `--reference FILE` replaces them.
TULU3_PAPER = "Tulu 3 paper (Lambert et al. 2024, arXiv:2411.15124), Llama-3.1-Tulu-3-8B-SFT"
DEFAULT_REFERENCE = {
    "name": "Tulu-3 8B SFT (published)",
    "scores": {
        "minerva_math_tulu": {"value": 31.5, "metric": "exact_match_flex", "source": TULU3_PAPER},
        "codex_humaneval_tulu": {"value": 86.2, "metric": "pass_at_10", "source": TULU3_PAPER},
        "bbh_cot_tulu": {
            "value": 67.9, "metric": "exact_match",
            "source": TULU3_PAPER + ", release-time BBH (OLMES bbh:cot::tulu)",
        },
        "bbh_cot_v1_tulu": {
            "value": 69.7, "metric": "exact_match",
            "source": "figure quoted for OLMES bbh:cot-v1::tulu, Llama-3.1-Tulu-3-8B-SFT",
        },
    },
}
MATH_SUBJECT_PREFIX = "minerva_math_tulu_"
BBH_FAMILIES = ("bbh_cot_v1_tulu", "bbh_cot_tulu")
LEVELS = ("Level 1", "Level 2", "Level 3", "Level 4", "Level 5")


# --- reading ------------------------------------------------------------------------------------


def primary_metric(task: str, available: dict) -> tuple[str, str, str]:
    """(metric, filter, label) for a task; for an unknown task its first reported metric."""
    matches = [prefix for prefix in PRIMARY if task == prefix or task.startswith(prefix + "_")]
    if matches:
        metric, filt, label = PRIMARY[max(matches, key=len)]
        return metric, filt, label if task in PRIMARY else task
    for key in available:
        if "," in key and "_stderr," not in key:
            metric, filt = key.split(",", 1)
            return metric, filt, task
    return "", "", task


def checkpoint_name(results_file: Path, root: Path, label: str | None) -> str:
    """`label`, else the nearest `checkpoint.json` between the file and `root`, else root's name."""
    if label:
        return label
    for folder in [results_file.parent, *results_file.parent.parents]:
        description = folder / CHECKPOINT_FILE
        if description.is_file():
            return json.loads(description.read_text(encoding="utf-8"))["name"]
        if folder == root:
            break
    return root.resolve().name


def collect(sources: list[str]) -> dict:
    """Per checkpoint: task results, the tasks asked for, and each task's sample log."""
    checkpoints: dict[str, dict] = {}
    for source in sources:
        label, _, folder = source.rpartition("=") if "=" in source else (None, "", source)
        root = Path(folder)
        files = results_files(root)
        if not files:
            raise FileNotFoundError(f"no lm-eval results_*.json under {root}")
        for results_file in files:  # oldest first, so newer results overwrite older ones
            data = json.loads(results_file.read_text(encoding="utf-8"))
            name = checkpoint_name(results_file, root, label or None)
            ckpt = checkpoints.setdefault(name, {"results": {}, "top": [], "samples": {}})
            ckpt["results"].update(data["results"])
            ckpt["top"] += [t for t in requested_tasks(data) if t not in ckpt["top"]]
            stamp = results_file.stem.removeprefix("results_")
            for task in data.get("configs", {}):
                samples = results_file.with_name(f"samples_{task}_{stamp}.jsonl")
                if samples.is_file():
                    ckpt["samples"][task] = samples
    return checkpoints


def load_reference(choice: str | None) -> dict | None:
    """The reference row: the published default, a YAML file of the same shape, or none."""
    if choice is None:
        return DEFAULT_REFERENCE
    if choice == "none":
        return None
    reference = yaml.safe_load(Path(choice).read_text(encoding="utf-8"))
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


def cell(results: dict, column: dict, reference: dict | None) -> dict | None:
    """One score: value and stderr as lm-eval reported them, delta in percentage points."""
    task_results = results.get(column["task"], {})
    key = f"{column['metric']},{column['filter']}"
    value = task_results.get(key)
    if not isinstance(value, (int, float)):
        return None
    stderr = task_results.get(f"{column['metric']}_stderr,{column['filter']}")
    ref = (reference or {}).get("scores", {}).get(column["task"])
    usable = ref and ref.get("metric", column["metric"]) == column["metric"]
    return {
        "value": value,
        "stderr": stderr if isinstance(stderr, (int, float)) else None,
        "delta": round(100 * value - ref["value"], 10) if usable else None,
    }


def bbh_breakdown(checkpoints: dict) -> dict:
    """Per BBH family: {checkpoint: {subtask: exact_match}} from the result files."""
    breakdown: dict[str, dict] = {}
    for name, ckpt in checkpoints.items():
        for task, values in ckpt["results"].items():
            family = next((f for f in BBH_FAMILIES if task.startswith(f + "_")), None)
            if family and isinstance(values.get("exact_match,cot"), (int, float)):
                subtask = task[len(family) + 1:]
                breakdown.setdefault(family, {}).setdefault(name, {})[subtask] = values[
                    "exact_match,cot"
                ]
    return breakdown


def level_scores(samples: list[dict], metric: str) -> dict[str, dict]:
    """{level: {correct, n, value}} from one subject's sample log."""
    counts: dict[str, list[float]] = {}
    for sample in samples:
        level = sample["doc"].get("level", "unknown")
        counts.setdefault(level, []).append(float(sample[metric]))
    return {
        level: {"correct": sum(v), "n": len(v), "value": sum(v) / len(v)}
        for level, v in sorted(counts.items())
    }


def math_breakdown(checkpoints: dict) -> dict:
    """{checkpoint: {subject: {level: {correct, n, value}}}} from the MATH sample logs."""
    metric = PRIMARY["minerva_math_tulu"][0]
    breakdown: dict[str, dict] = {}
    for name, ckpt in checkpoints.items():
        for task, samples in sorted(ckpt["samples"].items()):
            if task.startswith(MATH_SUBJECT_PREFIX):
                subject = task[len(MATH_SUBJECT_PREFIX):]
                breakdown.setdefault(name, {})[subject] = level_scores(read_jsonl(samples), metric)
    return breakdown


def build_report(checkpoints: dict, reference: dict | None, title: str) -> dict:
    """Plain data for every output format."""
    columns = columns_for(checkpoints)
    rows = [
        {
            "checkpoint": name,
            "scores": {c["task"]: cell(ckpt["results"], c, reference) for c in columns},
        }
        for name, ckpt in checkpoints.items()
    ]
    return {
        "title": title,
        "columns": columns,
        "rows": rows,
        "reference": reference,
        "bbh": bbh_breakdown(checkpoints),
        "math_levels": math_breakdown(checkpoints),
    }


# --- formatting ---------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}"


def score_text(score: dict | None) -> str:
    if score is None:
        return "-"
    text = percent(score["value"])
    if score["stderr"] is not None:
        text += f" ± {percent(score['stderr'])}"
    if score["delta"] is not None:
        text += f" ({score['delta']:+.1f})"
    return text


def reference_text(reference: dict | None, task: str) -> str:
    ref = (reference or {}).get("scores", {}).get(task)
    return f"{ref['value']:.1f}" if ref else "-"


def leaderboard_table(report: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the main table, the reference row last."""
    header = ["checkpoint"] + [f"{c['label']} ({c['metric']})" for c in report["columns"]]
    rows = [
        [row["checkpoint"]] + [score_text(row["scores"][c["task"]]) for c in report["columns"]]
        for row in report["rows"]
    ]
    if report["reference"]:
        rows.append(
            [report["reference"]["name"]]
            + [reference_text(report["reference"], c["task"]) for c in report["columns"]]
        )
    return header, rows


def bbh_tables(report: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) per BBH family: subtasks down, checkpoints across."""
    tables = []
    for family, per_ckpt in report["bbh"].items():
        names = list(per_ckpt)
        subtasks = sorted({s for values in per_ckpt.values() for s in values})
        rows = [[s] + [percent(per_ckpt[n].get(s)) for n in names] for s in subtasks]
        tables.append((f"{family}: {len(subtasks)} subtasks (exact_match)", ["subtask"] + names,
                       rows))
    return tables


def math_tables(report: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) per checkpoint: subjects down, levels across, `correct/n`."""
    tables = []
    for name, subjects in report["math_levels"].items():
        header = ["subject", *LEVELS, "all"]
        rows = []
        for subject, levels in subjects.items():
            correct = sum(v["correct"] for v in levels.values())
            total = sum(v["n"] for v in levels.values())
            rows.append(
                [subject]
                + [level_cell(levels.get(level)) for level in LEVELS]
                + [level_cell({"correct": correct, "n": total, "value": correct / total})]
            )
        tables.append((f"MATH by subject and level: {name} (exact_match_flex)", header, rows))
    return tables


def level_cell(level: dict | None) -> str:
    if level is None:
        return "-"
    return f"{percent(level['value'])} ({level['correct']:g}/{level['n']})"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def reference_notes(reference: dict | None) -> list[str]:
    if not reference:
        return []
    return [
        f"{task}: {ref['value']} ({ref.get('metric', '')}), {ref.get('source', 'no source given')}"
        for task, ref in reference["scores"].items()
    ]


def to_markdown(report: dict) -> str:
    parts = [f"# {report['title']}", ""]
    parts += ["Percent; ± is lm-eval's stderr; (Δ) is percentage points against the reference.",
              "", markdown_table(*leaderboard_table(report)), ""]
    notes = reference_notes(report["reference"])
    if notes:
        parts += ["Reference: " + report["reference"]["name"], ""]
        parts += [f"- {note}" for note in notes] + [""]
    for title, header, rows in bbh_tables(report) + math_tables(report):
        parts += [f"## {title}", "", markdown_table(header, rows), ""]
    return "\n".join(parts)


# --- plots and HTML -----------------------------------------------------------------------------


def bar_plot(report: dict) -> bytes:
    """Grouped bars: one group per task, one bar per checkpoint, the reference as a marker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns, rows = report["columns"], report["rows"]
    width = 0.8 / max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(columns) + 2), 4))
    for i, row in enumerate(rows):
        xs = [j + (i - (len(rows) - 1) / 2) * width for j in range(len(columns))]
        values = [100 * (row["scores"][c["task"]] or {"value": 0})["value"] for c in columns]
        ax.bar(xs, values, width, label=row["checkpoint"])
    refs = [(j, (report["reference"] or {}).get("scores", {}).get(c["task"]))
            for j, c in enumerate(columns)]
    marked = [(j, ref["value"]) for j, ref in refs if ref]
    if marked:
        ax.scatter([j for j, _ in marked], [v for _, v in marked], marker="_", s=900,
                   color="black", label=report["reference"]["name"], zorder=3)
    ax.set_xticks(range(len(columns)), [c["label"] for c in columns], rotation=20, ha="right")
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize="small")
    return figure_png(fig)


def heat_map(per_ckpt: dict, title: str) -> bytes:
    """Checkpoints x subtasks, percent in each cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(per_ckpt)
    subtasks = sorted({s for values in per_ckpt.values() for s in values})
    grid = [[100 * per_ckpt[n].get(s, float("nan")) for s in subtasks] for n in names]
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(subtasks) + 2), 3.2 + 0.5 * len(names)))
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(subtasks)), subtasks, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), names)
    for i, values in enumerate(grid):
        for j, value in enumerate(values):
            if not math.isnan(value):
                ax.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=6, color="w")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="%")
    return figure_png(fig)


def figure_png(fig) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


def plots(report: dict) -> dict[str, bytes]:
    """PNG name -> bytes."""
    images = {"bars.png": bar_plot(report)}
    for family, per_ckpt in report["bbh"].items():
        images[f"{family}_heatmap.png"] = heat_map(per_ckpt, f"{family} subtasks (exact_match)")
    return images


def html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f2f2f2; }
img { max-width: 100%; }
"""


def to_html(report: dict, images: dict[str, bytes]) -> str:
    title = html.escape(report["title"])
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="en"><head><meta charset="utf-8"><title>{title}</title>',
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{title}</h1>",
        "<p>Percent; ± is lm-eval's stderr; (Δ) is percentage points against the reference.</p>",
        html_table(*leaderboard_table(report)),
    ]
    notes = reference_notes(report["reference"])
    if notes:
        parts.append(f"<p>Reference: {html.escape(report['reference']['name'])}</p><ul>")
        parts += [f"<li>{html.escape(note)}</li>" for note in notes]
        parts.append("</ul>")
    for name, png in images.items():
        data = base64.b64encode(png).decode("ascii")
        parts.append(f'<p><img alt="{html.escape(name)}" src="data:image/png;base64,{data}"></p>')
    for table_title, header, rows in bbh_tables(report) + math_tables(report):
        parts += [f"<h2>{html.escape(table_title)}</h2>", html_table(header, rows)]
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(report: dict, output: Path) -> dict[str, Path]:
    """report.json, report.md, report.html and the PNGs in `output`."""
    output.mkdir(parents=True, exist_ok=True)
    images = plots(report)
    written = {
        "json": output / "report.json",
        "markdown": output / "report.md",
        "html": output / "report.html",
    }
    written["json"].write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    written["markdown"].write_text(to_markdown(report), encoding="utf-8")
    written["html"].write_text(to_html(report, images), encoding="utf-8")
    for name, png in images.items():
        (output / name).write_bytes(png)
    return written


# --- command line -------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="+", help="lm-eval output or leaderboard dirs; NAME=DIR")
    parser.add_argument("--output", default="report", help="where the report goes")
    parser.add_argument(
        "--reference", help="YAML {name, scores: {task: {value, metric, source}}}, or 'none'"
    )
    parser.add_argument("--title", default="evalpack leaderboard")
    parser.set_defaults(handler=report_command)


def report_command(args: argparse.Namespace) -> int:
    report = build_report(collect(args.dirs), load_reference(args.reference), args.title)
    written = write_report(report, Path(args.output))
    log.info("report: %s", ", ".join(str(p) for p in written.values()))
    return 0
