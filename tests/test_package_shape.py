"""The package's shape: imports point down (the rules below), no import cycle, no module over
400 lines, in utils/ and in tests/ (what ../shared/tools/package_check.py reports)."""

import ast
import graphlib
from pathlib import Path

import pytest

from tests.conftest import REPO

MAX_LINES = 400
# The one task hook allowed a models/ import: AlpacaEval's judge is a model the task drives
# itself (its HTTP client is a model client, `evalpack.models.judge`).
HOOK_EXCEPTIONS = {("evalpack.tasks.alpaca_eval", "evalpack.models.judge")}


def module_name(root: Path, path: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def imported(path: Path, me: str) -> set[str]:
    """Every module named by an import in `path` (module level or inside a function), relative
    imports resolved against `me`."""
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return out


def graph(folder: str, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same tree it imports."""
    root = REPO / folder
    files = {
        module_name(root, p, package): p for p in root.rglob("*.py") if "__pycache__" not in p.parts
    }
    edges = {}
    for me, path in files.items():
        targets = set()
        for name in imported(path, me):
            while name and name not in files:
                name = name.rpartition(".")[0]
            if name and name not in (me, package):  # `from .. import x` names the root too
                targets.add(name)
        edges[me] = targets
    return edges


PACKAGE = graph("utils", "evalpack")


def under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_sandbox_and_scoring_import_no_models_or_commands():
    bad = [
        (m, t)
        for m, targets in PACKAGE.items()
        for t in targets
        if under(m, "evalpack.sandbox", "evalpack.scoring")
        and under(t, "evalpack.models", "evalpack.commands")
    ]
    assert bad == []


def test_task_hooks_import_scoring_core_and_the_execution_api_only():
    allowed = ("evalpack.scoring", "evalpack.core", "evalpack.execution", "evalpack.tasks")
    bad = [
        (m, t)
        for m, targets in PACKAGE.items()
        if under(m, "evalpack.tasks")
        for t in targets
        if not under(t, *allowed) and (m, t) not in HOOK_EXCEPTIONS
    ]
    assert bad == []
    assert all(t in PACKAGE[m] for m, t in HOOK_EXCEPTIONS)  # no stale exception


@pytest.mark.parametrize(("folder", "package"), [("utils", "evalpack"), ("tests", "tests")])
def test_no_import_cycle_and_no_module_over_400_lines(folder, package):
    edges = graph(folder, package)
    graphlib.TopologicalSorter(edges).prepare()  # raises CycleError naming the cycle
    files = [p for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts]
    long = {
        str(p.relative_to(REPO)): n
        for p in files
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_tests_are_laid_out_like_the_package():
    """A test folder per subpackage, and one tests/tasks/test_<benchmark>.py per task folder."""
    tests = REPO / "tests"
    packages = {p.name for p in (REPO / "utils").iterdir() if (p / "__init__.py").is_file()}
    assert packages <= {p.name for p in tests.iterdir() if p.is_dir()}
    benchmarks = {
        p.name for p in (REPO / "tasks").iterdir() if p.is_dir() and p.name != "__pycache__"
    }
    assert sorted(b for b in benchmarks if not (tests / "tasks" / f"test_{b}.py").is_file()) == []
