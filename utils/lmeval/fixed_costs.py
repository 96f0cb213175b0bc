"""What a run pays before its first request, paid only where it is needed.

* lm-eval's `run` builds a `TaskManager` that indexes every built-in task of lm-eval (about
  27,000 YAML loads, most of a one-document run's time) on top of `--include_path`. When every
  task a run names is under its include path, the built-in ones are never looked at: the run's
  task manager then indexes the include path alone (`pack_only`). A run naming any other task
  (one of lm-eval's own, a YAML file, a folder) gets lm-eval's task manager unchanged.
* A run naming one of lm-eval's own tasks (and `ls`, and "did you mean") takes lm-eval's index
  of its built-in tasks from a disk cache (`index_cache`), the include path's tasks on top.
* lm-eval compiles a Jinja template anew for every doc and field it renders (`doc_to_text`,
  `doc_to_target` of every few-shot example...); here each template is compiled once.
* lm-eval imports torch in every run, to seed it and for the environment report it saves with
  every result; a run that does not use torch otherwise (a served model, a replay) does not
  load it (`lazy_torch`: the seed is given when torch is imported, the report comes from the
  cache folder).

`pack_only` is a per-thread setting, so runs in concurrent threads of one worker decide each
for itself.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading

import lm_eval.tasks
import lm_eval.tasks.manager
import lm_eval.utils
from lm_eval.tasks import TaskManager
from lm_eval.tasks._index import Kind

from . import index_cache, lazy_torch

_local = threading.local()


class IncludePathTaskManager(TaskManager):
    """lm-eval's task manager; inside `pack_only`, with the include path's index alone, taken
    from `index_cache.task_index` (built once per process; each manager gets its own copy of the mapping,
    to which lm-eval adds namespaced names while building groups). Otherwise lm-eval's built-in
    tasks come from their disk cache (`index_cache`), the include path's on top."""

    def __init__(
        self, verbosity=None, include_path=None, include_defaults: bool = True, metadata=None
    ) -> None:
        pack_only = getattr(_local, "pack_only", False) and include_path
        if not (pack_only or include_defaults):
            super().__init__(verbosity, include_path, include_defaults, metadata)
            return
        super().__init__(verbosity, None, False, metadata)  # indexes nothing
        self.include_path = include_path
        self._output_types: dict[str, str | None] = {}
        if pack_only:
            self._index = dict(index_cache.task_index(include_path))
        else:
            self._index, self._output_types = index_cache.builtin_index()
            with_include_path(include_path, self._index)
        kinds = {name: entry.kind for name, entry in self._index.items()}
        self._all_tasks = sorted(kinds)
        self._all_subtasks = sorted(n for n, k in kinds.items() if k in (Kind.TASK, Kind.PY_TASK))
        self._all_groups = sorted(n for n, k in kinds.items() if k is Kind.GROUP)
        self._all_tags = sorted(n for n, k in kinds.items() if k is Kind.TAG)

    def list_all_tasks(self, *args, **kwargs) -> str:
        """lm-eval's table of tasks; it reads every task's YAML again for its output type
        alone, which for the built-in tasks comes from the cache here."""
        types = getattr(self, "_output_types", None)
        if not types:
            return super().list_all_tasks(*args, **kwargs)
        read = lm_eval.tasks.manager.load_yaml

        def output_type_only(path, *more, **options):
            if str(path) not in types:
                return read(path, *more, **options)
            known = types[str(path)]
            return {} if known is None else {"output_type": known}

        lm_eval.tasks.manager.load_yaml = output_type_only
        try:
            return super().list_all_tasks(*args, **kwargs)
        finally:
            lm_eval.tasks.manager.load_yaml = read


def with_include_path(include_path, index: dict) -> dict:
    """`index` (the built-in tasks) with the tasks of `include_path` (a folder or a list of
    them) on top, path by path, as lm-eval's `TaskManager` merges them: a later path's task
    overrides an earlier one of the same name, with lm-eval's warning."""
    paths = include_path if isinstance(include_path, (list, tuple)) else [include_path]
    index_log = logging.getLogger("lm_eval.tasks._index")
    for path in filter(None, paths):
        for name, entry in index_cache.task_index(str(path)).items():
            if name in index:
                index_log.warning(
                    "Task '%s' from %s overrides existing task from %s",
                    name,
                    entry.yaml_path,
                    index[name].yaml_path,
                )
            index[name] = entry
    return index


@functools.lru_cache(maxsize=4096)
def compiled(template: str):
    """lm-eval's Jinja environment's template for `template`, compiled once."""
    return lm_eval.utils.env.from_string(template)


def apply_template(template: str, doc: dict) -> str:
    """lm-eval's `apply_template` (same environment, same output), without compiling the
    template again for every doc and field: that compile was most of building a task's
    requests (BBH: 58,653 compiles for 6,511 docs)."""
    return compiled(template).render(**doc)


def install() -> None:
    """Make lm-eval's run path build `IncludePathTaskManager` (it looks `TaskManager` up in
    `lm_eval.tasks` when a run starts), render templates with `apply_template` and leave torch
    to the runs that use it (`lazy_torch`); idempotent."""
    lm_eval.tasks.TaskManager = IncludePathTaskManager
    lm_eval.utils.apply_template = apply_template
    lazy_torch.install()


def needs_builtin_tasks(names: list[str], include_path: str | None) -> bool:
    """Whether any of `names` is not a task, group or tag under `include_path` (a built-in
    lm-eval task, a YAML path, a folder, or a typo lm-eval should report)."""
    if not include_path:
        return True
    index = index_cache.task_index(include_path)
    return not names or any(name not in index for name in names)


@contextlib.contextmanager
def pack_only(names: list[str], include_path: str | None):
    """Within: this thread's runs index only `include_path`, when every name is found there."""
    install()
    before = getattr(_local, "pack_only", False)
    _local.pack_only = not needs_builtin_tasks(names, include_path)
    try:
        yield _local.pack_only
    finally:
        _local.pack_only = before
