"""The files `index_cache` keeps lm-eval's task indexes in, read and written without lm-eval's
task machinery.

A file holds its key (the format, lm-eval's version, the folder indexed and a hash of the
listing of its YAML files: see `cache_key`) and one row per name of the index:
`[name, kind, YAML file relative to the folder (None: a tag), tags, output type]`, the kind
being the name of lm-eval's `Kind`. `catalog` reads the include path's index from here: a
task's kind and YAML file are all a board, a report or a suite listing needs, so those
processes never import lm-eval's task machinery (with `datasets` and pandas, about half a
second of CPU); `index_cache` builds a missing or stale index with lm-eval and writes it here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import NamedTuple

import lm_eval

log = logging.getLogger("evalpack.index_cache")

FORMAT = 1  # bump when what is stored changes
CACHE_ENV = "EVALPACK_CACHE_DIR"
IGNORED = {"__pycache__", ".ipynb_checkpoints"}  # folders lm-eval's index does not look in


class TaskFile(NamedTuple):
    """A name of the index as the pack's catalog sees it: its kind (`Kind`'s name) and its YAML
    file (None for a tag)."""

    kind: str
    yaml_path: Path | None


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "evalpack"


def listing_hash(root: Path) -> str:
    """A hash of every YAML file under `root` lm-eval's index reads: path, size, mtime."""
    rows = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in IGNORED]
        for name in files:
            if name.endswith(".yaml"):
                stat = os.stat(os.path.join(folder, name))
                rel = os.path.relpath(os.path.join(folder, name), root)
                rows.append(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()


def cache_key(root: Path) -> dict:
    return {
        "format": FORMAT,
        "lm_eval": lm_eval.__version__,
        "root": str(root),
        "listing": listing_hash(root),
    }


def cache_file(root: Path) -> Path:
    """This lm-eval installation's file (one per version and folder: several virtual
    environments do not overwrite each other's)."""
    install = hashlib.sha256(f"{lm_eval.__version__}\0{root}".encode()).hexdigest()[:16]
    return cache_dir() / f"lm_eval_task_index-{install}.json"


def well_formed(row) -> bool:
    return (
        isinstance(row, list)
        and len(row) == 5
        and all(isinstance(field, str) for field in row[:2])
        and isinstance(row[2], (str, type(None)))
        and isinstance(row[3], list)
    )


def read(file: Path, key: dict, kinds: set[str] | None = None) -> list[list] | None:
    """The rows stored under `key`, or None (with one line why, unless there is no file yet);
    a row whose kind is not one of `kinds` (when given) makes the file unreadable."""
    try:
        stored = json.loads(file.read_text(encoding="utf-8"))
        if {k: stored.get(k) for k in key} != key:
            log.warning(
                "the tasks in %s changed since %s was written: indexing them again",
                key["root"],
                file,
            )
            return None
        rows = stored["rows"]
        if not isinstance(rows, list) or not all(well_formed(row) for row in rows):
            raise ValueError("a row is not [name, kind, file, tags, output type]")
        unknown = sorted({row[1] for row in rows} - kinds) if kinds is not None else []
        if unknown:
            raise ValueError(f"unknown kinds {unknown}")
        return rows
    except (FileNotFoundError, NotADirectoryError):  # none yet (a bad folder: see `write`)
        return None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.warning("cannot read %s (%s): indexing the tasks in %s again", file, exc, key["root"])
        return None


def stored_rows(root: Path, kinds: set[str] | None = None) -> list[list] | None:
    """The rows kept for the folder `root` (an absolute path) while their key holds, else None
    (see `read`)."""
    return read(cache_file(root), cache_key(root), kinds)


def task_files(rows: list[list], root: Path) -> dict[str, TaskFile]:
    return {
        name: TaskFile(kind, None if rel is None else root / rel)
        for name, kind, rel, _tags, _output in rows
    }


def write_json(file: Path, record: dict, what: str) -> None:
    """Replace `file` with `record` atomically; a cache folder that cannot be written is one
    line, naming `what` was not kept."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=file.parent, prefix=file.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(record, out)
            os.replace(temporary, file)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as exc:
        log.warning("cannot write %s to %s (%s)", what, file, exc)


def write(root: Path, rows: list[list]) -> None:
    """The rows of the folder `root` (an absolute path) kept under its current key."""
    write_json(cache_file(root), {**cache_key(root), "rows": rows}, "the task index")
