"""Formatting a leaderboard report: tables, Markdown, self-contained HTML and PNG plots.

Works on the plain data `report.build_report` returns; reads no files.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path


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


def grid_table(entry: dict) -> tuple[str, list[str], list[list[str]]]:
    """A `subtasks` or `metric_suffix` breakdown: items down, checkpoints across."""
    per_ckpt = entry["scores"]
    names = list(per_ckpt)
    items = sorted({s for values in per_ckpt.values() for s in values})
    rows = [[s] + [percent(per_ckpt[n].get(s)) for n in names] for s in items]
    title = f"{entry['label']}: {len(items)} {entry['by'].replace('_', ' ')} ({entry['metric']})"
    return title, ["item" if entry["by"] != "subtasks" else "subtask", *names], rows


def field_tables(entry: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """A `doc_field` breakdown: per checkpoint, subtasks down, field values across,
    `correct/n`, and the whole row."""
    tables = []
    for name, per_task in entry["scores"].items():
        values = sorted({v for fields in per_task.values() for v in fields})
        rows = []
        for task, fields in per_task.items():
            correct = sum(v["correct"] for v in fields.values())
            total = sum(v["n"] for v in fields.values())
            rows.append(
                [task]
                + [level_cell(fields.get(value)) for value in values]
                + [level_cell({"correct": correct, "n": total, "value": correct / total})]
            )
        title = f"{entry['label']} by {entry['field']}: {name} ({entry['metric']})"
        tables.append((title, ["task", *values, "all"], rows))
    return tables


def breakdown_tables(report: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) for every breakdown in the report."""
    tables = []
    for entry in report["breakdowns"]:
        if entry["by"] == "doc_field":
            tables += field_tables(entry)
        else:
            tables.append(grid_table(entry))
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
    for title, header, rows in breakdown_tables(report):
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
    for entry in report["breakdowns"]:
        if entry["by"] == "subtasks":
            title = f"{entry['label']} subtasks ({entry['metric']})"
            images[f"{entry['task']}_heatmap.png"] = heat_map(entry["scores"], title)
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
    for table_title, header, rows in breakdown_tables(report):
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
