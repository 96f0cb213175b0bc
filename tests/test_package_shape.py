"""The package's shape: imports point down (the rules below), no import cycle, no module over
400 lines, in utils/ and in tests/ (what ../shared/tools/package_check.py reports)."""

import ast
import graphlib
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

MAX_LINES = 400


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
FILES = {
    module_name(REPO / "utils", p, "evalpack"): p
    for p in (REPO / "utils").rglob("*.py")
    if "__pycache__" not in p.parts
}


# The floors of the package, each with the packages it may import (the README's Layout says the
# same in words). Every module of the package belongs to one floor; no exception stands.
MAY_IMPORT = {
    "evalpack.lmeval": set(),
    "evalpack.core": {"evalpack.lmeval"},
    "evalpack.sandbox": {"evalpack.core"},
    "evalpack.execution": {"evalpack.sandbox", "evalpack.core"},
    "evalpack.scoring": {"evalpack.core"},
    "evalpack.models": {"evalpack.core"},
    "evalpack.judges": {"evalpack.models", "evalpack.core"},
    "evalpack.hooks": {
        "evalpack.scoring",
        "evalpack.execution",
        "evalpack.judges",
        "evalpack.core",
        "evalpack.lmeval",
    },
    "evalpack.environments": {
        "evalpack.scoring",
        "evalpack.models",
        "evalpack.core",
        "evalpack.lmeval",
    },
    "evalpack.leaderboard": {
        "evalpack.models",
        "evalpack.judges",
        "evalpack.core",
        "evalpack.lmeval",
    },
    "evalpack.report": {"evalpack.leaderboard", "evalpack.scoring", "evalpack.core"},
    "evalpack.cli": {
        "evalpack.report",
        "evalpack.leaderboard",
        "evalpack.models",
        "evalpack.core",
        "evalpack.lmeval",
    },
}
# The package's own `__init__` (the `verifiers` plugin) and `python -m evalpack`
TOP = {"evalpack": {"evalpack.environments"}, "evalpack.__main__": {"evalpack.cli"}}
# Shipped as source into a sandbox job's processes: the standard library and these only
SHIPPED = "evalpack.hooks.bigcodebench"
# BigCodeBench's own libraries, which shipped modules import where the job's values need them
# (inside functions: a job that has them loaded; the job's installation has them all)
JOB_LIBRARIES = {"numpy", "pandas", "matplotlib", "pytz"}
SHIPPED_MAY_IMPORT = {
    f"{SHIPPED}.job": {f"{SHIPPED}.job"},
    f"{SHIPPED}.replay": {f"{SHIPPED}.job", f"{SHIPPED}.replay"},
    f"{SHIPPED}.trusted": set(),
}


def under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def floor(module: str, floors) -> str | None:
    return next((f for f in floors if under(module, f)), None)


def test_every_module_is_on_a_floor():
    assert [m for m in PACKAGE if m not in TOP and floor(m, MAY_IMPORT) is None] == []


def test_imports_point_down_the_floors():
    bad = []
    for module, targets in PACKAGE.items():
        mine = floor(module, MAY_IMPORT)
        allowed = TOP[module] if module in TOP else MAY_IMPORT[mine] | {mine}
        bad += [(module, t) for t in targets if floor(t, MAY_IMPORT) not in allowed]
    assert bad == []


def test_what_is_shipped_into_a_job_imports_the_standard_library_and_its_siblings_only():
    """Every module shipped into a job (as source: the candidate's, the replay's, the trusted
    check's) imports only the standard library and the shipped modules its folder may import,
    by any import statement, at any depth."""
    shipped = {m: p for m, p in FILES.items() if floor(m, SHIPPED_MAY_IMPORT)}
    assert len(shipped) >= 12  # job/, replay/, trusted/ (so that this cannot pass on nothing)
    bad = []
    for module, path in shipped.items():
        allowed = SHIPPED_MAY_IMPORT[floor(module, SHIPPED_MAY_IMPORT)]
        for name in imported(path, module):
            top = name.split(".")[0]
            if top == "evalpack":
                if not (floor(name, SHIPPED_MAY_IMPORT) in allowed or name in allowed):
                    bad.append((module, name))
            elif top not in sys.stdlib_module_names and top not in JOB_LIBRARIES:
                bad.append((module, name))
    assert bad == []


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
    """A test folder per subpackage (the hooks' is tests/tasks/, one test_<benchmark>.py per task
    folder), and no test module named after a round or an issue."""
    tests = REPO / "tests"
    folders = {"hooks": "tasks"}
    packages = {p.name for p in (REPO / "utils").iterdir() if (p / "__init__.py").is_file()}
    assert {folders.get(p, p) for p in packages} <= {p.name for p in tests.iterdir() if p.is_dir()}
    benchmarks = {
        p.name for p in (REPO / "tasks").iterdir() if p.is_dir() and p.name != "__pycache__"
    }
    assert sorted(b for b in benchmarks if not (tests / "tasks" / f"test_{b}.py").is_file()) == []
    assert [p.name for p in tests.rglob("test_*.py") if re.search(r"round|issue", p.stem)] == []
