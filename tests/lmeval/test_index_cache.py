"""lm-eval's built-in task index from its disk cache: the same index and the same built task as
lm-eval's own `TaskManager`; rebuilt, with one line, when stale or unreadable; silent when fresh."""

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from lm_eval.tasks._index import TaskIndex
from lm_eval.tasks.manager import TaskManager as LmEvalTaskManager

from evalpack.lmeval import fixed_costs, index_cache, index_file
from tests.conftest import DATA_DIR, TASKS_DIR, read_jsonl, requires_shared

IFEVAL = DATA_DIR / "google__IFEval" / "default" / "train.jsonl"


def ours(caplog) -> list[str]:
    """The lines the pack logged (lm-eval's own warnings, e.g. "aime24_reasoning overrides", aside)."""
    return [r.getMessage() for r in caplog.records if r.name.startswith("evalpack")]


def entries(index: dict) -> list[tuple]:
    return [(n, e.kind, e.yaml_path and str(e.yaml_path), sorted(e.tags)) for n, e in index.items()]


def built(manager, name: str) -> tuple[dict, list]:
    """Task `name` as `manager` builds it: its config and its first three docs' requests."""
    task = manager.load([name])["tasks"][name]
    task.build_all_requests(limit=3, rank=0, world_size=1)
    return task.dump_config(), [(i.doc_id, i.request_type, i.arguments) for i in task.instances]


@pytest.fixture
def ifeval_offline(monkeypatch):
    """lm-eval's own `ifeval` reads google/IFEval from the hub: here, its first rows from the
    mirror."""
    if not IFEVAL.is_file():
        pytest.skip(f"real benchmark data not found at {IFEVAL}")
    rows = read_jsonl(IFEVAL)[:5]

    def load_dataset(path, name=None, **kwargs):
        assert path == "google/IFEval", path
        return datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)})

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)


@requires_shared
def test_a_builtin_task_is_the_same_with_the_cache(ifeval_offline, caplog):
    own = LmEvalTaskManager(include_path=str(TASKS_DIR))  # lm-eval's, no cache
    fixed_costs.IncludePathTaskManager(include_path=str(TASKS_DIR))  # the cache exists after
    with caplog.at_level(logging.INFO, logger="evalpack"):
        cached = fixed_costs.IncludePathTaskManager(include_path=str(TASKS_DIR))
    assert not ours(caplog)  # a fresh cache is read silently
    assert index_file.cache_file(index_cache.builtin_root()).is_file()
    assert entries(cached.task_index) == entries(own.task_index)
    assert (cached.all_subtasks, cached.all_groups, cached.all_tags) == (
        own.all_subtasks,
        own.all_groups,
        own.all_tags,
    )
    for name in (
        "ifeval",
        "gsm8k",
        "mmlu_pro",
        "aime24_reasoning",
    ):  # aime24_reasoning: the pack's overrides it
        assert cached.task_index[name].cfg == own.task_index[name].cfg
    assert type(cached.task_index["ifeval"]) is index_cache.CachedEntry
    assert built(cached, "ifeval") == built(own, "ifeval")


@pytest.fixture
def small_lm_eval(tmp_path, monkeypatch):
    """A copy of two of lm-eval's task folders standing in for its built-in tasks, and an
    empty cache folder."""
    root = tmp_path / "lm_eval_tasks"
    for folder in ("gsm8k", "arc"):
        shutil.copytree(index_cache.builtin_root() / folder, root / folder)
    monkeypatch.setattr(index_cache, "builtin_root", lambda: root)
    monkeypatch.setenv(index_file.CACHE_ENV, str(tmp_path / "cache"))
    return root


def test_the_cache_is_written_once_and_read_after(small_lm_eval, caplog):
    with caplog.at_level(logging.INFO, logger="evalpack"):
        first, first_types = index_cache.builtin_index()
        again, again_types = index_cache.builtin_index()
    assert not ours(caplog)  # no file yet is not worth a line
    assert "gsm8k" in first and "arc_easy" in first and "ai2_arc" in first  # task, tag
    assert entries(again) == entries(first)
    assert first_types == again_types and set(first_types.values()) >= {"generate_until"}
    assert {type(e) for e in again.values()} == {index_cache.CachedEntry}
    (file,) = index_file.cache_dir().iterdir()  # no temporary file left beside it
    assert json.loads(file.read_text())["lm_eval"] == index_file.lm_eval.__version__


def test_a_stale_cache_is_rebuilt(small_lm_eval, caplog):
    index_cache.builtin_index()
    yaml = small_lm_eval / "gsm8k" / "gsm8k.yaml"
    yaml.write_text(yaml.read_text().replace("task: gsm8k\n", "task: gsm8k_renamed\n"))
    with caplog.at_level(logging.INFO, logger="evalpack"):
        index, _ = index_cache.builtin_index()
    assert "gsm8k_renamed" in index and "gsm8k" not in index
    (line,) = ours(caplog)
    assert line.startswith(f"the tasks in {small_lm_eval} changed since")
    assert line.endswith("indexing them again")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="evalpack"):
        assert "gsm8k_renamed" in index_cache.builtin_index()[0]  # rewritten: read silently
    assert not ours(caplog)


def test_an_unreadable_cache_is_one_line_and_rebuilt(small_lm_eval, caplog):
    index_cache.builtin_index()
    (file,) = index_file.cache_dir().iterdir()
    file.write_text('{"format": 1, "rows": [')
    with caplog.at_level(logging.INFO, logger="evalpack"):
        index, _ = index_cache.builtin_index()
    assert "gsm8k" in index
    (line,) = ours(caplog)
    assert line.startswith(f"cannot read {file} (") and not caplog.records[-1].exc_info
    assert json.loads(file.read_text())["rows"]  # rewritten whole


def test_a_cache_folder_that_cannot_be_written_is_one_line(small_lm_eval, tmp_path, caplog):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    with pytest.MonkeyPatch.context() as patch, caplog.at_level(logging.INFO, logger="evalpack"):
        patch.setenv(index_file.CACHE_ENV, str(blocker / "cache"))
        index, _ = index_cache.builtin_index()
    assert "gsm8k" in index
    (line,) = ours(caplog)
    assert line.startswith("cannot write the task index to")


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(index_file.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert index_file.cache_dir() == tmp_path / "xdg" / "evalpack"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert index_file.cache_dir() == tmp_path / "home" / ".cache" / "evalpack"


def test_the_include_paths_index_is_cached_and_follows_edits(tmp_path, monkeypatch, caplog):
    """The pack's own index, as every process reads it: the same entries and configs as lm-eval
    builds from the folder; a task renamed in the folder is seen at the next read."""
    monkeypatch.setenv(index_file.CACHE_ENV, str(tmp_path / "cache"))
    folder = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    own = TaskIndex.build([folder])
    with caplog.at_level(logging.INFO, logger="evalpack"):
        index_cache.cached_index(folder)
        cached, _ = index_cache.cached_index(folder)
        monkeypatch.chdir(tmp_path)  # the same folder named relatively: the same file
        relative, _ = index_cache.cached_index(Path("tasks"))
    assert not ours(caplog)
    assert entries(relative) == entries(cached) == entries(own) and len(cached) > 250
    assert {type(e) for e in cached.values()} == {index_cache.CachedEntry}
    for name in ("minerva_math_tulu", "bbh_cot_v1_tulu_navigate", "gsm8k_tulu"):
        assert cached[name].cfg == own[name].cfg
    yaml = folder / "gsm8k" / "gsm8k_tulu.yaml"
    yaml.write_text(yaml.read_text().replace("task: gsm8k_tulu\n", "task: gsm8k_tulu_renamed\n"))
    with caplog.at_level(logging.INFO, logger="evalpack"):
        again, _ = index_cache.cached_index(folder)
    assert "gsm8k_tulu_renamed" in again and "gsm8k_tulu" not in again
    (line,) = ours(caplog)
    assert line.startswith(f"the tasks in {folder} changed since")


CATALOG_READ = """
import json, sys
from evalpack.core import catalog
index = catalog.task_index(sys.argv[1])
loaded = sorted(m for m in ("lm_eval.tasks", "datasets", "pandas") if m in sys.modules)
print(json.dumps([sorted([n, e.kind, str(e.yaml_path)] for n, e in index.items()), loaded]))
"""


def catalog_read(folder: Path, cache: Path) -> tuple[list, list, str]:
    """In a fresh process: the catalog's index of `folder` (name, kind, YAML file), which of
    lm-eval's task machinery it imported, and what it logged."""
    done = subprocess.run(
        [sys.executable, "-c", CATALOG_READ, str(folder)],
        env={**os.environ, index_file.CACHE_ENV: str(cache)},
        capture_output=True,
        text=True,
        check=True,
    )
    return *json.loads(done.stdout), done.stderr


def test_the_catalog_reads_a_cached_index_without_lm_evals_task_machinery(tmp_path):
    """What a board, a report or `suite show` needs of the include path's index (each name's
    kind and YAML file) is read from the cache file alone; lm-eval's task machinery (with
    `datasets` and pandas) is imported to build a missing or stale index, not to read one. Every
    read gives lm-eval's own entries; a stale index is said once."""
    folder = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    built_now, loaded_building, _ = catalog_read(folder, tmp_path / "cache")
    from_file, loaded_reading, _ = catalog_read(folder, tmp_path / "cache")
    assert loaded_building == ["datasets", "lm_eval.tasks", "pandas"]
    assert loaded_reading == []
    own = TaskIndex.build([folder])
    assert len(own) > 250
    assert (
        built_now == from_file == sorted([n, e.kind.name, str(e.yaml_path)] for n, e in own.items())
    )
    yaml = folder / "gsm8k" / "gsm8k_tulu.yaml"
    yaml.write_text(yaml.read_text().replace("task: gsm8k_tulu\n", "task: gsm8k_tulu_renamed\n"))
    rebuilt, loaded_rebuilding, said = catalog_read(folder, tmp_path / "cache")
    assert loaded_rebuilding == loaded_building
    assert said.count("changed since") == 1
    assert ["gsm8k_tulu_renamed", "TASK", str(yaml)] in rebuilt
