"""Formatting a leaderboard report: tables, Markdown, self-contained HTML and PNG plots.

Works on the plain data `report.build_report` returns; reads no files.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from .plots import plots

PARTIAL = "†"
INCOMPLETE = "‡"
LEGEND = (
    "Percent; ± is lm-eval's stderr; (Δ) is percentage points against the reference "
    "row (published figures); the average is over the benchmarks the reference has "
    "(all when there is none), '-' for a checkpoint that lacks one of them."
)
LEGEND_UNREFERENCED = (  # no published figure for any benchmark of the report
    "Percent; ± is lm-eval's stderr; no published figures for these benchmarks, so no Δ; "
    "the average is over all of them, '-' for a checkpoint that lacks one."
)
REASON_WIDTH = 160  # a reason line is cut here: the pair's lm_eval.log has it in full


def percent(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}"


def score_text(score: dict | None, missing: str = "") -> str:
    """A score cell; a pair with no score says `failed` or `not run` when the board knows."""
    if score is None:
        return ("failed" if missing.startswith("failed") else "not run") if missing else "-"
    text = percent(score["value"])
    if score["stderr"] is not None:
        text += f" ± {percent(score['stderr'])}"
    if score["delta"] is not None:
        text += f" ({score['delta']:+.1f}{'' if score.get('comparable', True) else PARTIAL})"
    return text


def docs_text(score: dict | None) -> str:
    """Docs scored / docs in the benchmark: the size its YAML declares where it does (a sample
    in a mirror, the demo's 15 MATH problems, is 15/5000), else the docs of the data read."""
    if score is None or score.get("scored") is None:
        return "-"
    return f"{score['scored']}/{score.get('benchmark_docs') or score['total']}"


def docs_table(report: dict) -> tuple[list[str], list[list[str]]]:
    """Docs scored / docs in the benchmark, per checkpoint and benchmark."""
    header = ["checkpoint"] + [c["label"] for c in report["columns"]]
    rows = [
        [row["checkpoint"]] + [docs_text(row["scores"][c["task"]]) for c in report["columns"]]
        for row in report["rows"]
    ]
    return header, rows


def comparison_text(comparison: dict) -> str:
    if "delta" not in comparison:
        return f"- ({comparison.get('why', 'no comparison')})"
    star = " *" if comparison["significant"] else ""
    p = comparison.get("p")
    p_text = "" if p is None else (", p<0.001" if p < 0.001 else f", p={p:.2g}")
    return (
        f"{comparison['delta']:+.1f} [{comparison['low']:+.1f}, {comparison['high']:+.1f}]"
        f"{star} (n={comparison['docs']}{p_text})"
    )


def baseline_table(report: dict) -> tuple[list[str], list[list[str]]]:
    """Δ vs the baseline checkpoint with its interval, per checkpoint and benchmark."""
    baseline = report["baseline"]
    header = [f"vs {baseline['name']}"] + [c["label"] for c in report["columns"]]
    rows = [
        [name] + [comparison_text(cells.get(c["task"], {})) for c in report["columns"]]
        for name, cells in baseline["rows"].items()
    ]
    return header, rows


def preamble(report: dict) -> list[str]:
    """What the numbers are, and what to read them with."""
    referenced = bool(report["reference"] and report["reference"]["scores"])
    lines = [LEGEND if referenced else LEGEND_UNREFERENCED]
    partial = [
        row["checkpoint"]
        for row in report["rows"]
        if any(
            s and s["delta"] is not None and not s.get("comparable", True)
            for s in row["scores"].values()
        )
    ]
    if partial:
        lines.append(
            f"{PARTIAL} Δ from a partial run ({', '.join(partial)} did not score every "
            "doc of the benchmark: --limit, or a sample of its data): not comparable "
            "with the published figure; see "
            '"Docs scored".'
        )
    left_out = (report.get("average") or {}).get("left_out")
    if left_out:
        lines.append(
            f"{INCOMPLETE} the average leaves out {', '.join(left_out)} (no checkpoint "
            "has a score): it is not the average over the whole suite."
        )
    lines += [
        reason_line(f"{row['checkpoint']} x {task}: {why}")
        for row in report["rows"]
        for task, why in row.get("missing", {}).items()
        if why != "not run"
    ]
    return lines


def reason_line(text: str) -> str:
    """One line, cut at `REASON_WIDTH` (a server's JSON answer can be long)."""
    text = " ".join(text.split())
    if len(text) <= REASON_WIDTH:
        return text
    return text[: REASON_WIDTH - 1] + "… (in full in the pair's lm_eval.log)"


def reference_text(reference: dict | None, task: str) -> str:
    ref = (reference or {}).get("scores", {}).get(task)
    return f"{ref['value']:.1f}" if ref else "-"


def leaderboard_table(report: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the main table, the reference row last."""
    avg = report.get("average") or {"tasks": [], "rows": {}, "reference": None}
    header = ["checkpoint"] + [f"{c['label']} ({c['metric']})" for c in report["columns"]]
    header.append(f"average of {len(avg['tasks'])}" + (INCOMPLETE if avg.get("left_out") else ""))
    rows = [
        [row["checkpoint"]]
        + [
            score_text(row["scores"][c["task"]], row.get("missing", {}).get(c["task"], ""))
            for c in report["columns"]
        ]
        + [percent(avg["rows"].get(row["checkpoint"])) or "-"]
        for row in report["rows"]
    ]
    if report["reference"] and report["reference"]["scores"]:
        rows.append(
            [report["reference"]["name"]]
            + [reference_text(report["reference"], c["task"]) for c in report["columns"]]
            + [f"{avg['reference']:.1f}" if avg["reference"] is not None else "-"]
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


def sections(report: dict) -> list[tuple[str, str, tuple]]:
    """(title, note, (header, rows)) of the tables after the leaderboard."""
    found = []
    if report.get("baseline"):
        note = (
            f"Percentage points against {report['baseline']['name']} on the same docs, "
            f"[95% interval], * significant: {report['baseline']['method']}."
        )
        found.append((f"Δ vs baseline {report['baseline']['name']}", note, baseline_table(report)))
    found.append(("Docs scored", "Docs scored / docs in the benchmark.", docs_table(report)))
    return found


def to_markdown(report: dict) -> str:
    parts = [f"# {report['title']}", ""]
    parts += [*preamble(report), "", markdown_table(*leaderboard_table(report)), ""]
    notes = reference_notes(report["reference"])
    if notes:
        parts += ["Reference: " + report["reference"]["name"], ""]
        parts += [f"- {note}" for note in notes] + [""]
    for title, note, table in sections(report):
        parts += [f"## {title}", "", note, "", markdown_table(*table), ""]
    for title, header, rows in breakdown_tables(report):
        parts += [f"## {title}", "", markdown_table(header, rows), ""]
    return "\n".join(parts)


# --- HTML ----------------------------------------------------------------------------------------


def html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="scroll">{table}</div>'  # a wide table scrolls, the page does not


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.8em; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
td { white-space: nowrap; }
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
        *[f"<p>{html.escape(line)}</p>" for line in preamble(report)],
        html_table(*leaderboard_table(report)),
    ]
    for name, png in images.items():
        data = base64.b64encode(png).decode("ascii")
        parts.append(f'<p><img alt="{html.escape(name)}" src="data:image/png;base64,{data}"></p>')
    notes = reference_notes(report["reference"])
    if notes:
        parts.append(f"<p>Reference: {html.escape(report['reference']['name'])}</p><ul>")
        parts += [f"<li>{html.escape(note)}</li>" for note in notes]
        parts.append("</ul>")
    for table_title, note, table in sections(report):
        parts += [
            f"<h2>{html.escape(table_title)}</h2>",
            f"<p>{html.escape(note)}</p>",
            html_table(*table),
        ]
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
