"""The pack's catalog: its tasks, the benchmark facts their YAML declares, and its suites.

Benchmark facts live once, in each task's or group's YAML `metadata` (see the README's "Adding
a benchmark"): `label`, `primary: {metric, filter}`, `breakdown`, `references`, `chat`,
`scoring_cost`. Suites,
reports and the CLI read them from here; no module keeps a per-benchmark table.
"""

from __future__ import annotations

import copy
import logging
from functools import cache, lru_cache
from pathlib import Path

import yaml

from ..lmeval import index_file
from .resources import suites_file, tasks_dir
from .yaml_files import read_yaml

log = logging.getLogger("evalpack.catalog")


class _PlainLoader(yaml.SafeLoader):
    """Reads task YAML without importing hooks: `!function x.y` stays the string `x.y`."""


_PlainLoader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


@cache
def task_index(include_path: str | None = None) -> dict[str, index_file.TaskFile]:
    """Each name lm-eval's index of the tasks under `include_path` (default: the pack's own) has,
    as its `TaskManager(include_path, include_defaults=False)` builds it, with its kind and YAML
    file; read once per process, from its disk cache while the folder's YAML files are unchanged
    (`index_file`), else built by lm-eval (`index_cache`, which brings lm-eval's task machinery:
    imported only then)."""
    root = Path(include_path or tasks_dir()).resolve()
    rows = index_file.stored_rows(root)
    if rows is None:
        from ..lmeval import index_cache

        rows, _ = index_cache.built_rows(root)
    return index_file.task_files(rows, root)


@lru_cache(maxsize=4096)
def _parsed(path: Path, mtime_ns: int, size: int) -> dict:
    """One YAML file as parsed (cached: a report reads each task's config for every row and
    column); a file changed since is parsed again."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_PlainLoader) or {}


def _read_with_includes(path: Path) -> dict:
    stat = path.stat()
    config = copy.deepcopy(_parsed(path, stat.st_mtime_ns, stat.st_size))
    base = config.pop("include", None)
    if base:
        return {**_read_with_includes(path.parent / base), **config}
    return config


def requested_tasks(args) -> list[str]:
    """Task names of lm-eval's parsed `run --tasks` (space- or comma-separated, as lm-eval
    takes them)."""
    values = args.tasks if isinstance(args.tasks, list) else [args.tasks or ""]
    return [name for value in values for name in value.split(",") if name]


def task_config(name: str, index: dict | None = None) -> dict:
    """A task's or group's YAML config with `include`s merged (the including file wins); {} for
    a name the index does not know or that has no YAML of its own."""
    entry = (task_index() if index is None else index).get(name)
    if entry is None or entry.yaml_path is None:
        return {}
    return _read_with_includes(Path(entry.yaml_path))


def members(config: dict) -> list[str]:
    """The member task names of a group config (none for a task)."""
    if "group" not in config or "task" not in config:
        return []
    return [t for t in config["task"] if isinstance(t, str)]


def leaves(task: str) -> list[str]:
    """The tasks whose sample logs make up `task` (itself, or its members recursively)."""
    parts = members(task_config(task))
    return [leaf for part in parts for leaf in leaves(part)] if parts else [task]


def facts(name: str, index: dict | None = None) -> dict:
    """The benchmark facts a task or group declares in its `metadata` (empty when it declares
    none, or is not one of the pack's)."""
    return task_config(name, index).get("metadata", {}) or {}


def group_of(task: str, index: dict | None = None) -> str | None:
    """The pack group that lists `task` as a member, if any."""
    index = task_index() if index is None else index
    for name, entry in index.items():
        if entry.kind == "GROUP" and task in members(task_config(name, index)):
            return name
    return None


def declaring(names: list[str], key: str, value: bool, index: dict | None = None) -> list[str]:
    """The tasks among `names` (groups expanded) whose YAML metadata sets `key` to `value`
    (a task that does not mention `key` is never listed)."""
    found = []
    for name in names:
        config = task_config(name, index)
        if members(config):
            found += declaring(members(config), key, value, index)
        elif config.get("metadata", {}).get(key, not value) is value:
            found.append(name)
    return found


def heavy_scoring(name: str, index: dict | None = None) -> bool:
    """Whether scoring task or group `name` takes minutes of CPU on a full run: its YAML
    metadata says `scoring_cost: heavy` (sympy on thousands of answers, sandboxed programs by
    the thousand), or, for a group, one of its members' does."""
    config = task_config(name, index)
    if (config.get("metadata") or {}).get("scoring_cost") == "heavy":
        return True
    return any(heavy_scoring(member, index) for member in members(config))


def chat_tasks(names: list[str], index: dict | None = None, chat: bool = True) -> list[str]:
    """The tasks among `names` whose YAML asks for a chat template (`metadata: {chat: true}`),
    or with `chat=False` those that declare they take none."""
    return declaring(names, "chat", chat, index)


# --- suites -------------------------------------------------------------------------------------


def load_suites(user_file: str | None = None) -> dict[str, dict]:
    """Built-in suites, then the user's file on top (same name: the user's suite wins)."""
    suites = yaml.safe_load(suites_file().read_text(encoding="utf-8"))
    if user_file:
        suites.update(read_yaml(user_file) or {})
    for name, suite in suites.items():
        if not isinstance(suite, dict) or not isinstance(suite.get("tasks"), list):
            raise TypeError(f"suite {name!r}: needs a `tasks` list")
        for entry in suite["tasks"]:
            if not isinstance(entry, dict) or "task" not in entry:
                raise TypeError(f"suite {name!r}: every task entry needs a `task` field")
    return suites


def suite_entries(suites: dict, name: str, only: list[str] | None = None) -> list[dict]:
    """The task entries of suite `name` (optionally only those named in `only`)."""
    if name not in suites:
        raise ValueError(f"unknown suite {name!r}; known: {', '.join(sorted(suites))}")
    entries = suites[name]["tasks"]
    if only:
        unknown = set(only) - {e["task"] for e in entries}
        if unknown:
            raise ValueError(f"suite {name!r} has no task {', '.join(sorted(unknown))}")
        entries = [e for e in entries if e["task"] in only]
    return entries


NO_TASK = "no such task in this version of the pack"


def unbuilt(entries: list[dict], index: dict | None = None) -> dict[str, str]:
    """{member: why it does not run}: members a suite marks `not_buildable: <reason>` (listed so
    that the suite is whole, never run), then those no task YAML defines (yet)."""
    index = task_index() if index is None else index
    return {
        e["task"]: e.get("not_buildable") or NO_TASK
        for e in entries
        if e.get("not_buildable") or e["task"] not in index
    }


def missing_tasks(entries: list[dict], index: dict | None = None) -> list[str]:
    """Suite members that do not run: not buildable, or no task YAML defines them (yet)."""
    return list(unbuilt(entries, index))


def suite_tasks(suites: dict, name: str, only: list[str] | None = None) -> list[dict]:
    """The runnable task entries of suite `name`, each with `chat` forced on when the task's
    own YAML asks for a chat template; members that do not run are left out with a warning
    naming each and why."""
    entries = suite_entries(suites, name, only)
    missing = unbuilt(entries)
    for task, reason in missing.items():
        log.warning("suite %s: skipping %s (%s)", name, task, reason)
    resolved = []
    for entry in entries:
        if entry["task"] in missing:
            continue
        needs_chat = bool(chat_tasks([entry["task"]]))
        if needs_chat and not entry.get("chat"):
            log.warning("%s needs a chat template: turning `chat` on", entry["task"])
        resolved.append({**entry, "chat": bool(entry.get("chat")) or needs_chat})
    return resolved


def task_flags(entry: dict) -> list[str]:
    """lm-eval flags for one suite task entry."""
    flags = ["--tasks", entry["task"]]
    if entry["chat"]:
        flags += ["--apply_chat_template", "--fewshot_as_multiturn", "true"]
    return flags + [str(arg) for arg in entry.get("args", [])]
