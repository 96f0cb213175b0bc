"""Every task file of the pack builds, and every benchmark declares its facts.

lm-eval skips a YAML that fails to parse without a word, and a task config with an unknown key
only fails when the task is built: these tests build every config (hooks imported, includes
merged, `TaskConfig` constructed) without downloading any dataset.
"""

import importlib
import inspect
import logging
import re

import pytest
from lm_eval.api.task import TaskConfig
from lm_eval.tasks._index import TaskIndex
from lm_eval.tasks._yaml_loader import load_yaml

from evalpack.core import catalog
from evalpack.core.resources import suites_file
from tests.conftest import REPO, TASKS_DIR

INDEX = catalog.task_index()
SUITES = TASKS_DIR / "suites.yaml"
YAML_FILES = sorted(
    p for p in TASKS_DIR.rglob("*.yaml") if not p.name.startswith("_") and p != SUITES
)
HOOKS = "evalpack.hooks."
PACK_NAMES = sorted(name for name, e in INDEX.items() if e.yaml_path is not None)


def test_every_task_file_is_indexed():
    indexed = {e.yaml_path.resolve() for e in INDEX.values() if e.yaml_path is not None}
    assert [p for p in YAML_FILES if p.resolve() not in indexed] == []


@pytest.mark.parametrize("name", [n for n in PACK_NAMES if INDEX[n].kind == "TASK"])
def test_every_task_config_builds(name):
    config = load_yaml(INDEX[name].yaml_path, resolve_func=True)
    built = TaskConfig(**config)
    assert built.task == name
    assert "version" in built.metadata


def top_level(names):
    """Tasks and groups that are no pack group's member."""
    inner = {m for n in names for m in catalog.members(catalog.task_config(n))}
    return [n for n in names if n not in inner]


@pytest.mark.parametrize("name", top_level(PACK_NAMES))
def test_every_benchmark_declares_label_and_primary_metric(name):
    facts = catalog.facts(name)
    primary = facts.get("primary", {})
    assert facts.get("label") and {"metric", "filter"} <= set(primary) <= {
        "metric",
        "filter",
        "percent",
    }
    for ref in facts.get("references", []):
        assert set(ref) == {"model", "value", "source"} and 0 <= ref["value"] <= 100


def test_every_benchmark_folder_has_a_readme():
    folders = {p.parent for p in YAML_FILES}
    benchmarks = {f if f.parent == TASKS_DIR else f.parent for f in folders}
    assert sorted(str(f) for f in benchmarks if not (f / "README.md").is_file()) == []


def test_suite_members_come_from_the_catalog():
    suites = catalog.load_suites()
    assert len(suites["tulu_3_dev"]["tasks"]) == 11
    for suite in suites.values():
        for entry in suite["tasks"]:
            assert entry["task"] in INDEX or entry["task"] in catalog.missing_tasks([entry])


def test_the_suites_file_beside_the_tasks_is_no_task_to_lm_eval(caplog):
    """lm-eval parses every YAML under the include path: the suites file gives no task, group
    or tag, and no warning."""
    assert suites_file().resolve() == SUITES.resolve()
    with caplog.at_level(logging.INFO):
        index = TaskIndex.build([TASKS_DIR])
    assert not [e for e in index.values() if e.yaml_path and e.yaml_path.name == SUITES.name]
    assert not [r for r in caplog.records if r.levelno >= logging.INFO and "suites" in r.message]
    assert not {"task", "group", "class"} & set(catalog.load_suites())


def hook_modules(config) -> set:
    """The pack's hook modules a resolved task config calls, and the family modules they
    reuse (HumanEval+'s `humaneval`)."""
    called = {
        importlib.import_module(v.__module__)
        for v in _values(config)
        if callable(v) and getattr(v, "__module__", "").startswith(HOOKS)
    }
    reused = {
        m
        for module in called
        for m in vars(module).values()
        if inspect.ismodule(m) and m.__name__.startswith(HOOKS)
    }
    return called | reused


def _values(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _values(v)
    elif isinstance(value, list):
        for v in value:
            yield from _values(v)
    else:
        yield value


def test_every_hook_cuts_at_its_tasks_stop_strings():
    """A hook that cuts a completion at stop strings again (`STOP_STRINGS`, as OLMES re-cuts)
    cuts at exactly those its tasks' YAML declares, for every task that uses it."""
    checked = set()
    for name in PACK_NAMES:
        if INDEX[name].kind not in ("TASK", "PY_TASK"):
            continue
        config = load_yaml(INDEX[name].yaml_path, resolve_func=True)
        for module in hook_modules(config):
            if hasattr(module, "STOP_STRINGS"):
                assert module.STOP_STRINGS == config["generation_kwargs"]["until"], (name, module)
                checked.add(module.__name__)
    hooks = {
        HOOKS + ".".join(p.relative_to(REPO / "utils" / "hooks").with_suffix("").parts)
        for p in (REPO / "utils" / "hooks").rglob("*.py")
        if p.stem != "__init__"
    }
    cutting = {m for m in hooks if hasattr(importlib.import_module(m), "STOP_STRINGS")}
    assert checked == cutting and len(cutting) >= 4


def test_every_task_declares_its_dataset_revision():
    """`doc_key` is a row number: each task names the hub commit its rows come from (null
    where it could not be known offline; the task's README says which data the references
    were made on)."""
    undeclared = []
    for name in PACK_NAMES:
        if INDEX[name].kind in ("TASK", "PY_TASK"):
            kwargs = load_yaml(INDEX[name].yaml_path, resolve_func=False)["dataset_kwargs"]
            revision = kwargs.get("revision", "missing")
            if not (revision is None or re.fullmatch(r"[0-9a-f]{40}|v[\w.]+", str(revision))):
                undeclared.append(name)
    assert undeclared == []
