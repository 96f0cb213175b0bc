"""The rows of a `verifiers` environment: one per doc of a pack task, carrying exactly the chat
messages and generation settings the lm-eval path sends for that doc.

The messages come from lm-eval's own request building (`build_all_requests` in chat mode, few-shot
as multi-turn, the description as a system message, a `gen_prefix` as a trailing assistant
message), rendered with the `replay` model's JSON chat template (`render_messages`) and read
back, so no prompt logic is rewritten here. A group (BBH, MATH) expands to its subtasks; each row
names its subtask. Plain data out; nothing here imports `verifiers`.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field

from ..core.data import DATA_DIR_ENV
from ..core.resources import tasks_dir
from ..models.requests import render_messages, stop_strings


class NotAChatTask(ValueError):
    """A task a chat rollout cannot reproduce (log-likelihood scoring, or a base-model prompt)."""


@dataclass(frozen=True)
class Row:
    """One doc of one (sub)task as the lm-eval path requests it."""

    task: str  # the subtask (lm-eval task name) the doc belongs to
    group: str  # the task or group the environment was built for
    doc_id: int
    doc_key: str
    doc: dict
    messages: list[dict]
    gen_kwargs: dict  # lm-eval's generation_kwargs for the request (until, max_gen_toks, ...)
    repeats: int  # samples per doc the lm-eval path draws (pass@k over them)
    stops: list[str] = field(default_factory=list)


def _metadata_key(metadata: dict | None) -> str:
    return json.dumps(metadata or {}, sort_keys=True)


@functools.cache
def _loaded(name: str, metadata_key: str, data_dir: str | None) -> dict:
    """lm-eval's task objects for `name` (a task or a group), built once per process and data
    folder (`data_dir`: `EVALPACK_DATA_DIR`, which the docs are read from)."""
    from lm_eval.tasks import TaskManager

    metadata = json.loads(metadata_key) or None
    manager = TaskManager(include_path=str(tasks_dir()), include_defaults=False, metadata=metadata)
    if name not in manager.all_tasks:
        raise ValueError(
            f"evalpack has no task or group named {name!r} (`evalpack ls tasks` lists them)"
        )
    return manager.load([name])


def loaded(name: str, metadata: dict | None = None) -> dict:
    """lm-eval's `TaskManager.load` result for a task or group: `tasks`, `groups`."""
    return _loaded(name, _metadata_key(metadata), os.environ.get(DATA_DIR_ENV))


def lm_tasks(name: str, metadata: dict | None = None) -> dict:
    """{subtask name: lm-eval task object} for a task or group (each built once per process)."""
    return loaded(name, metadata)["tasks"]


def check_chat_generation(task) -> None:
    """A chat rollout reproduces a task only if it generates and is a chat task."""
    name = task.config.task
    if task.OUTPUT_TYPE != "generate_until":
        raise NotAChatTask(
            f"{name} is scored from token log-probabilities ({task.OUTPUT_TYPE}), "
            "which chat rollouts do not return: it has no verifiers environment"
        )
    if not (task.config.metadata or {}).get("chat"):
        raise NotAChatTask(
            f"{name} is a base-model task (a plain-text prompt, no chat "
            "template): a chat environment cannot send what lm-eval sends"
        )


def _rows_of(task, group: str, limit: int | None) -> list[Row]:
    task.build_all_requests(
        rank=0,
        world_size=1,
        limit=limit,
        apply_chat_template=True,
        fewshot_as_multiturn=True,
        chat_template=lambda msgs, add_generation_prompt=True: render_messages(msgs),
    )
    rows = []
    for instance in sorted(task.instances, key=lambda i: i.doc_id):
        context, gen_kwargs = instance.args
        rows.append(
            Row(
                task=task.config.task,
                group=group,
                doc_id=instance.doc_id,
                doc_key=instance.doc.get("doc_key", f"{task.config.task}#{instance.doc_id}"),
                doc=dict(instance.doc),
                messages=json.loads(context),
                gen_kwargs=dict(gen_kwargs),
                repeats=instance.repeats,
                stops=stop_strings(gen_kwargs),
            )
        )
    return rows


def build_rows(
    name: str,
    metadata: dict | None = None,
    limit: int | None = None,
    subtasks: list[str] | None = None,
) -> list[Row]:
    """Every doc of task or group `name` (the first `limit` of each subtask; only `subtasks`
    where given) as the lm-eval path requests it in chat mode."""
    tasks = lm_tasks(name, metadata)
    chosen = sorted(tasks) if subtasks is None else list(subtasks)
    unknown = [s for s in chosen if s not in tasks]
    if unknown:
        raise ValueError(
            f"{name} has no subtask {', '.join(unknown)} (it has: {', '.join(sorted(tasks))})"
        )
    for subtask in chosen:
        check_chat_generation(tasks[subtask])
    return [row for subtask in chosen for row in _rows_of(tasks[subtask], name, limit)]
