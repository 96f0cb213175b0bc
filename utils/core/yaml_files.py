"""YAML files the user writes (`models.yaml`, suites, references), read with errors that name
the file and the line, not PyYAML's `<unicode string>`."""

from __future__ import annotations

from pathlib import Path

import yaml


def read_yaml(path: str | Path):
    """The parsed file; a syntax error is a `ValueError` naming the file, line and column."""
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ValueError(f"{path}{where}: not valid YAML: {exc.problem}") from None
