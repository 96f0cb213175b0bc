"""Where the pack's data files are: task YAML, few-shot exemplars and suites.

They ship inside the installed package (a wheel, `pip install .`, or an editable install all
map them there, see `pyproject.toml`), so they are found through `importlib.resources`, never
relative to a source checkout: `evalpack.task_configs` is the repository's `tasks/` folder and
`evalpack.fewshot_data` its `fewshot/` folder.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

TASKS_PACKAGE = "evalpack.task_configs"
FEWSHOT_PACKAGE = "evalpack.fewshot_data"


def _folder(package: str) -> Path:
    # Installs are plain directories (the wheel is not zip-safe), so the traversable is a path.
    return Path(str(files(package)))


def tasks_dir() -> Path:
    """The lm-eval `--include_path` root of the pack's tasks."""
    return _folder(TASKS_PACKAGE)


def fewshot_dir() -> Path:
    """The folder of few-shot exemplar files (`<name>.json`)."""
    return _folder(FEWSHOT_PACKAGE)


def suites_file() -> Path:
    """The built-in suites (`evalpack suite list`): benchmark data, beside the task configs."""
    return tasks_dir() / "suites.yaml"
