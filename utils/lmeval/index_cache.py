"""lm-eval's task indexes, kept on disk between runs: that of its own built-in tasks and that of
the include path (the pack's tasks, or the user's folder).

A run that names one of lm-eval's tasks, `evalpack ls tasks` and the "did you mean" of an
unknown task name need lm-eval's index of its ~14,000 built-in task YAMLs: `TaskIndex.build`
reads every one of them (with their `include`s, ~12 s here), and `ls tasks` reads each task's
YAML once more for its output type (~19 s). Every command also needs the include path's index
(the pack's ~300 YAML files: ~0.4 s, in every process that evaluates, checks or reports). Both
depend only on those YAML files, so each is built by lm-eval once and kept in the user's cache
folder:

* `EVALPACK_CACHE_DIR`, else `$XDG_CACHE_HOME/evalpack`, else `~/.cache/evalpack`; one file
  per lm-eval installation (its version) and folder indexed, written atomically (a temporary
  file renamed into place), so concurrent runs never read half a file.
* It is used only while its key still holds: the format below, lm-eval's version, the tasks
  folder and a hash of the listing of its YAML files (relative path, size, mtime). Any change
  there (a task file edited, added or removed), or a file that cannot be read, means the index
  is built again by lm-eval and the file rewritten (one line says why; a first run, with no
  file yet, says nothing).
* What is kept is what lm-eval's `TaskManager` keeps in its index: each name's kind, YAML file
  and tags (`Entry`), in lm-eval's order, plus each task's output type for `ls`. A task is then
  built by lm-eval's own factory from its YAML file as before; an entry's parsed config
  (`Entry.cfg`, which the factory does not read for an indexed task) is read from its file
  when first asked for.

The file's format is `index_file`'s, which `catalog` reads without this module; `catalog`
imports this one (and with it lm-eval's task machinery) only to build a missing or stale index.
"""

from __future__ import annotations

from pathlib import Path

import lm_eval.tasks
from lm_eval.tasks._index import Entry, Kind, TaskIndex
from lm_eval.tasks._yaml_loader import load_yaml

from . import index_file


class CachedEntry(Entry):
    """An `Entry` read from the cache: its config is read from its YAML file (as lm-eval's
    index reads it) when first asked for."""

    @property
    def cfg(self):
        if self._cfg is None and self.yaml_path is not None:
            self._cfg = load_yaml(self.yaml_path, resolve_func=False, recursive=True)
        return self._cfg

    @cfg.setter
    def cfg(self, value) -> None:
        self._cfg = value


def builtin_root() -> Path:
    """The folder of lm-eval's built-in tasks (the one its `TaskManager` indexes)."""
    return Path(lm_eval.tasks.__file__).parent


def output_type(entry: Entry) -> str | None:
    """The output type `ls tasks` shows for a task entry (its config's, includes merged)."""
    if entry.kind not in (Kind.TASK, Kind.PY_TASK) or not isinstance(entry.cfg, dict):
        return None
    return entry.cfg.get("output_type")


def to_rows(index: dict[str, Entry], root: Path) -> list[list]:
    return [
        [
            name,
            entry.kind.name,
            None if entry.yaml_path is None else str(Path(entry.yaml_path).relative_to(root)),
            sorted(entry.tags),
            output_type(entry),
        ]
        for name, entry in index.items()
    ]


def from_rows(rows: list[list], root: Path) -> tuple[dict[str, Entry], dict[str, str | None]]:
    """The index, and the output type of each task's YAML file (None: it declares none)."""
    index = {}
    for name, kind, rel, tags, _ in rows:
        path = None if rel is None else root / rel
        index[name] = CachedEntry(name=name, kind=Kind[kind], yaml_path=path, tags=set(tags))
    return index, output_types(rows, root)


def output_types(rows: list[list], root: Path) -> dict[str, str | None]:
    tasks = (Kind.TASK.name, Kind.PY_TASK.name)
    return {str(root / rel): out for _, kind, rel, _, out in rows if kind in tasks and rel}


def built_rows(root: Path) -> tuple[list[list], dict[str, Entry]]:
    """lm-eval's index of the folder `root` (an absolute path), built, and its rows, written
    to the cache (for a caller that found no usable rows there)."""
    index = TaskIndex.build([root])
    rows = to_rows(index, root)
    index_file.write(root, rows)
    return rows, index


def cached_index(root: Path) -> tuple[dict[str, Entry], dict[str, str | None]]:
    """lm-eval's index of the tasks in folder `root` (a fresh mapping each call; the caller may
    add names to it, as lm-eval does while building groups) and the output type per YAML
    file: from the cache while its key holds, else built by lm-eval and written there. The
    folder is taken as an absolute path, built or cached alike (a relative one names another
    folder in another working directory)."""
    root = root.resolve()
    rows = index_file.stored_rows(root, set(Kind.__members__))
    if rows is not None:
        return from_rows(rows, root)
    rows, index = built_rows(root)
    return index, output_types(rows, root)


def builtin_index() -> tuple[dict[str, Entry], dict[str, str | None]]:
    """lm-eval's index of its built-in tasks, and the output type per YAML file."""
    return cached_index(builtin_root())


def task_index(include_path: str) -> dict[str, Entry]:
    """The task index of the folder `include_path` (lm-eval's entries), from its disk cache
    while the folder's YAML files are unchanged."""
    return cached_index(Path(include_path))[0]
