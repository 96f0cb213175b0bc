"""What the task folders' `_generate_configs.py` scripts share: the group YAML over a group's
generated member tasks, and writing a folder's generated files afresh. Each script lists its
members and facts and returns every file it writes from `files()`; a test checks that the
committed files are exactly those (tests/tasks/test_generated_configs.py)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def group_yaml(
    header: str,
    group: str,
    members: Iterable[str],
    aggregates: Iterable[tuple[str, bool]],
    metadata: str,
) -> str:
    """A group YAML: `header` (comment lines, each ending in a newline), the member tasks
    `<group>_<member>`, a mean per `(metric, weight_by_size)` and the `metadata` block's
    indented lines."""
    tasks = "".join(f"  - {group}_{member}\n" for member in members)
    means = "".join(
        f"  - {{metric: {metric}, aggregation: mean, weight_by_size: {str(weighted).lower()}}}\n"
        for metric, weighted in aggregates
    )
    return (
        f"{header}group: {group}\ntask:\n{tasks}aggregate_metric_list:\n{means}"
        f"metadata:\n{metadata}"
    )


def generated_paths(group_file: Path) -> list[Path]:
    """The files a generator owns beside `group_file`: the group's YAML and its members'."""
    return sorted(group_file.parent.glob(f"{group_file.stem}*.yaml"))


def rewrite(files: dict[Path, str], group_files: Iterable[Path]) -> None:
    """Writes `files` (path -> text) after removing the earlier files of each group, so that a
    member taken out of a script leaves no YAML behind."""
    for group_file in group_files:
        for stale in generated_paths(group_file):
            stale.unlink()
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
