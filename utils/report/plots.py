"""The report's PNG plots, from `report.build_report`'s plain data.

Heat maps, checkpoints down and benchmarks across, every cell labelled with its number: they
stay readable at 10 checkpoints x 12 benchmarks where grouped bars do not, a zero is a
labelled cell like any other, a missing score is a grey cell marked "–", and there is no
legend to sit on the data (the colour bar is beside the grid).
"""

from __future__ import annotations

import io
import math

MISSING = "#e6e6e6"
NOT_SIGNIFICANT = "#d9d9d9"


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    pyplot().close(fig)
    return buffer.getvalue()


def grid_figure(rows: int, columns: int):
    """A figure sized so that each cell holds two short lines of text."""
    plt = pyplot()
    return plt.subplots(figsize=(max(6.0, 1.15 * columns + 3), max(2.6, 0.55 * rows + 1.9)))


def label_axes(ax, row_names: list[str], column_names: list[str]) -> None:
    ax.set_xticks(range(len(column_names)), column_names, rotation=30, ha="right", fontsize=9)
    ax.set_yticks(range(len(row_names)), row_names, fontsize=9)
    ax.tick_params(length=0)
    ax.set_xticks([x - 0.5 for x in range(1, len(column_names))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(row_names))], minor=True)
    ax.grid(which="minor", color="white", linewidth=2)


def text_colour(rgba) -> str:
    red, green, blue = rgba[:3]
    return "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"


def scores_heatmap(report: dict) -> bytes:
    """Percent per checkpoint and benchmark, the reference row (published figures) last."""
    plt = pyplot()
    columns = report["columns"]
    names = [row["checkpoint"] for row in report["rows"]]
    grid = [
        [(row["scores"][c["task"]] or {}).get("value") for c in columns] for row in report["rows"]
    ]
    grid = [[None if v is None else 100 * v for v in values] for values in grid]
    reference = report.get("reference")
    if reference and reference["scores"]:
        names.append(reference["name"])
        grid.append([(reference["scores"].get(c["task"]) or {}).get("value") for c in columns])
    fig, ax = grid_figure(len(names), len(columns))
    cmap = plt.get_cmap("viridis").with_extremes(bad=MISSING)
    values = [[math.nan if v is None else v for v in row] for row in grid]
    image = ax.imshow(values, cmap=cmap, vmin=0, vmax=100, aspect="auto")
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            text = "–" if value is None else f"{value:.1f}"
            colour = "black" if value is None else text_colour(cmap(value / 100))
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=colour)
    if reference and reference["scores"]:
        ax.axhline(len(names) - 1.5, color="black", linewidth=2)
    label_axes(ax, names, [c["label"] for c in columns])
    ax.set_title("score (%); grey –: not run")
    fig.colorbar(image, ax=ax, label="%", fraction=0.04, pad=0.02)
    return figure_png(fig)


def delta_heatmap(report: dict) -> bytes:
    """Δ vs the baseline in points with its 95% interval; colour by sign where significant,
    grey where the interval includes 0."""
    from matplotlib.colors import TwoSlopeNorm

    plt = pyplot()
    baseline, columns = report["baseline"], report["columns"]
    names = list(baseline["rows"])
    cells = [[baseline["rows"][n].get(c["task"], {}) for c in columns] for n in names]
    largest = max([abs(c["delta"]) for row in cells for c in row if "delta" in c] + [1.0])
    norm = TwoSlopeNorm(vmin=-largest, vcenter=0, vmax=largest)
    cmap = plt.get_cmap("RdBu")
    fig, ax = grid_figure(len(names), len(columns))
    colours = [[cell_colour(c, cmap, norm) for c in row] for row in cells]
    ax.imshow(colours, aspect="auto")
    for i, row in enumerate(cells):
        for j, comparison in enumerate(row):
            ax.text(
                j,
                i,
                delta_text(comparison),
                ha="center",
                va="center",
                fontsize=8,
                color=text_colour(colours[i][j]),
            )
    label_axes(ax, names, [c["label"] for c in columns])
    ax.set_title(
        f"Δ vs {baseline['name']} (points, 95% paired CI): blue better, red worse, "
        "grey not significant",
        fontsize=9,
    )
    fig.colorbar(
        plt.cm.ScalarMappable(norm=norm, cmap=cmap),
        ax=ax,
        label="Δ points",
        fraction=0.04,
        pad=0.02,
    )
    return figure_png(fig)


def cell_colour(comparison: dict, cmap, norm) -> tuple:
    from matplotlib.colors import to_rgba

    if "delta" not in comparison:
        return to_rgba(MISSING)
    if not comparison["significant"]:
        return to_rgba(NOT_SIGNIFICANT)
    return cmap(norm(comparison["delta"]))


def delta_text(comparison: dict) -> str:
    if "delta" not in comparison:
        return "–"
    star = "*" if comparison["significant"] else ""
    return (
        f"{comparison['delta']:+.1f}{star}\n[{comparison['low']:+.1f}, {comparison['high']:+.1f}]"
    )


def subtask_heatmap(per_ckpt: dict, title: str) -> bytes:
    """Checkpoints x subtasks, percent in each cell."""
    plt = pyplot()
    names = list(per_ckpt)
    subtasks = sorted({s for values in per_ckpt.values() for s in values})
    grid = [[100 * per_ckpt[n].get(s, math.nan) for s in subtasks] for n in names]
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(subtasks) + 2), 3.2 + 0.5 * len(names)))
    cmap = plt.get_cmap("viridis").with_extremes(bad=MISSING)
    image = ax.imshow(grid, cmap=cmap, vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(subtasks)), subtasks, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), names)
    for i, values in enumerate(grid):
        for j, value in enumerate(values):
            if not math.isnan(value):
                ax.text(
                    j,
                    i,
                    f"{value:.0f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color=text_colour(cmap(value / 100)),
                )
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="%")
    return figure_png(fig)


def plots(report: dict) -> dict[str, bytes]:
    """PNG name -> bytes: the scores, the comparison with the baseline, subtask heat maps."""
    images = {"scores.png": scores_heatmap(report)}
    if report.get("baseline"):
        images["baseline.png"] = delta_heatmap(report)
    for entry in report["breakdowns"]:
        if entry["by"] == "subtasks":
            title = f"{entry['label']} subtasks ({entry['metric']})"
            images[f"{entry['task']}_heatmap.png"] = subtask_heatmap(entry["scores"], title)
    return images
