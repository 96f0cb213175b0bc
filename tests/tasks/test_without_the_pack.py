"""Plain `lm_eval --include_path tasks` in a Python where the pack is not installed: the first
hook lm-eval resolves is a `hooks.py` beside the YAML, loaded by its path, which ends the run
in one line saying how to install the pack (it was a 95-line import traceback).

The interpreter is a venv whose only packages are the project environment's, seen through a
path line in a `.pth` file: that line does not run the environment's own `.pth` files, so its
editable install of the pack is invisible (as in test_install.py)."""

import json
import re
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, TASKS_DIR

HINT = "these tasks need the evalpack package, which {python} cannot import: pip install -e {repo}"
# lm-eval's own loader over every task file, as `lm_eval run` calls it
LOAD_EVERY_YAML = """
import json, sys
from pathlib import Path
from lm_eval.tasks._yaml_loader import load_yaml
outcome = {}
for path in sorted(Path(sys.argv[1]).rglob("*.yaml")):
    try:
        load_yaml(path, resolve_func=True)
        outcome[str(path)] = "loaded"
    except SystemExit as exc:
        outcome[str(path)] = f"exit: {exc.code}"
    except Exception as exc:
        outcome[str(path)] = f"{type(exc).__name__}: {exc}"
print(json.dumps(outcome))
"""


@pytest.fixture(scope="module")
def python(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("nopack") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (target,) = venv.glob("lib/python*/site-packages")
    (target / "project_deps.pth").write_text(site.getsitepackages()[0] + "\n")
    interpreter = venv / "bin" / "python"
    probe = "import importlib.util as u, lm_eval; print(u.find_spec('evalpack') is None)"
    found = subprocess.run([interpreter, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "True"  # lm-eval is there, the pack is not
    return interpreter


def hooks_folder(path: Path) -> Path | None:
    """The folder whose `hooks.py` loading `path` reaches first: its own where it names a
    hook, else that of the first file it includes that does; None when none does."""
    text = path.read_text(encoding="utf-8")
    if "!function" in text:
        return path.parent
    includes = re.findall(r"^include: (\S+)", text, re.MULTILINE)
    return next(filter(None, (hooks_folder(path.parent / inc) for inc in includes)), None)


def test_every_hook_is_named_through_the_hooks_file_beside_it():
    for path in TASKS_DIR.rglob("*.yaml"):
        for ref in re.findall(r"!function ([\w.]+)", path.read_text(encoding="utf-8")):
            assert re.fullmatch(r"hooks\.\w+", ref), (path, ref)
            assert (path.parent / "hooks.py").is_file(), path


def load_every_task_file(python, cwd) -> dict:
    """{path: what lm-eval's loader did with it}, Python started in `cwd`."""
    done = subprocess.run(
        [python, "-c", LOAD_EVERY_YAML, str(TASKS_DIR)],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    )
    return json.loads(done.stdout)


def assert_each_hook_file_stops(outcome: dict, line: str) -> None:
    named = 0
    for path, result in outcome.items():
        if Path(path).name == "suites.yaml":
            continue
        folder = hooks_folder(Path(path))
        if folder:
            assert result == f"exit: {folder.resolve()}: {line}", path
            named += 1
        else:  # a group: nothing of the pack is needed to read it
            assert result == "loaded", path
    assert named > 250


def test_every_task_file_stops_with_the_install_line(python, tmp_path):
    outcome = load_every_task_file(python, tmp_path)
    assert_each_hook_file_stops(outcome, HINT.format(python=python, repo=REPO))


def test_a_checkout_named_evalpack_where_python_starts(python, tmp_path):
    # git's default folder name: from the folder holding the clone, `import evalpack` finds the
    # clone as a namespace package, whose submodules are missing (`evalpack.hooks`) or the
    # wrong thing (`evalpack.tasks.<folder>`, a YAML folder: an ImportError, not a
    # ModuleNotFoundError). An editable install is found first where `make` set it up
    # (tests/core/test_editable_first.py); here there is none.
    (tmp_path / "evalpack").symlink_to(REPO, target_is_directory=True)
    outcome = load_every_task_file(python, tmp_path)
    line = (
        f"these tasks need the evalpack package, which {python} finds as the folder "
        f"{tmp_path / 'evalpack'} (a checkout named evalpack where Python started): "
        "run from another folder"
    )
    assert_each_hook_file_stops(outcome, line)


def test_lm_eval_run_ends_in_one_line(python, tmp_path):
    done = subprocess.run(
        [python, "-m", "lm_eval", "run", "--include_path", str(TASKS_DIR)]
        + ["--tasks", "gsm8k_tulu", "--model", "dummy", "--limit", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    hint = HINT.format(python=python, repo=REPO)
    assert done.stderr.strip().splitlines()[-1] == f"{TASKS_DIR / 'gsm8k'}: {hint}"
    assert "Traceback" not in done.stdout + done.stderr
