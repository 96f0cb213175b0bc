"""The README agrees with the tree: its Layout map states the import floors, its Benchmarks table
states each benchmark's YAML facts, and "Adding a benchmark" lists files that exist."""

import re

from evalpack.core import catalog
from tests.conftest import REPO, TASKS_DIR

README = (REPO / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"## {title}")
    return README[start : README.index("\n## ", start + 1)]


def test_the_readme_layout_map_states_the_import_floors():
    """The README's Layout map names every subpackage with the floors it may import, in the
    words the package-shape test checks; every package says what it holds in its docstring."""
    from tests.test_package_shape import MAY_IMPORT

    lines = dict(
        re.findall(r"^    ([a-z]+)\s{2,}.*?: ([a-z, ]+)$", section("Layout"), re.MULTILINE)
    )
    stated = {
        f"evalpack.{name}": {f"evalpack.{f.strip()}" for f in floors.split(",") if f.strip()}
        for name, floors in lines.items()
    }
    stated["evalpack.lmeval"] = set()  # "nothing"
    assert stated == MAY_IMPORT
    undocumented = [
        str(p.relative_to(REPO))
        for p in (REPO / "utils").rglob("__init__.py")
        if not p.read_text(encoding="utf-8").lstrip().startswith('"""')
    ]
    assert undocumented == []


def table_rows() -> list[list[str]]:
    lines = [line for line in section("Benchmarks").splitlines() if line.startswith("| `")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def names(cell: str) -> list[str]:
    """The task names of a table cell; "`x_tulu`, `_greedy`" names x_tulu and x_tulu_greedy."""
    found = []
    for token in re.findall(r"`([^`]+)`", cell):
        found.append(found[-1] + token if token.startswith("_") else token)
    return found


def test_the_benchmark_table_states_the_yaml_facts():
    """Each row's first task has the row's primary metric in its YAML, every name in a row is
    a task or group of the pack, the README link is its folder's, and every benchmark is in a
    row."""
    index = catalog.task_index()
    listed = set()
    for tasks, _, primary, link in table_rows():
        row = names(tasks)
        assert row and set(row) <= set(index), tasks
        assert catalog.facts(row[0])["primary"]["metric"] == names(primary)[0], tasks
        folder = re.fullmatch(r"\[tasks/(\w+)\]\(tasks/(\w+)/README\.md\)", link)
        assert folder and folder[1] == folder[2], link
        assert index[row[0]].yaml_path.resolve().is_relative_to((TASKS_DIR / folder[1]).resolve())
        listed |= set(row)
    inner = {
        m
        for n in index
        for m in catalog.members(catalog.task_config(n))
        if index[n].yaml_path is not None
    }
    benchmarks = {n for n, e in index.items() if e.yaml_path is not None and n not in inner}
    assert sorted(benchmarks - listed) == []


def test_adding_a_benchmark_lists_files_that_exist():
    block = section("Adding a benchmark")
    paths = re.findall(r"^    (\S+)", block, re.MULTILINE)
    assert len(paths) >= 8 and "README.md" in paths
    assert [p for p in paths if not (REPO / p).is_file()] == []
    example = re.search(r"The most recent one, (\S+)\s+\(`(\w+)`\)", block)
    assert example and any(example[2] in names(row[0]) for row in table_rows())
    assert f"tasks/{example[1].lower().replace('+', 'plus')}/README.md" in paths
