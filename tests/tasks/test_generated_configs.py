"""The committed YAMLs of every folder with a `_generate_configs.py` are exactly what its script
writes, with no stale member left beside them; and rewriting removes a member taken out."""

import importlib.util

import pytest

from evalpack.hooks import config_files
from tests.conftest import REPO

GENERATORS = sorted(REPO.glob("tasks/*/_generate_configs.py"))


def load(script):
    spec = importlib.util.spec_from_file_location(f"gen_{script.parent.name}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", GENERATORS, ids=lambda p: p.parent.name)
def test_committed_files_are_what_the_generator_writes(script):
    files = load(script).files()
    for path, text in files.items():
        assert path.read_text(encoding="utf-8") == text, path
    groups = [path for path in files if f"group: {path.stem}\n" in files[path]]
    assert groups, script
    owned = {path for group in groups for path in config_files.generated_paths(group)}
    assert owned == set(files), owned ^ set(files)  # nothing stale, nothing missing


def test_rewriting_removes_a_member_taken_out(tmp_path):
    group = tmp_path / "g.yaml"
    text = config_files.group_yaml("# h\n", "g", ["a"], [("acc", True)], "  version: 1.0\n")
    (tmp_path / "g_b.yaml").write_text("old member", encoding="utf-8")
    config_files.rewrite({group: text, tmp_path / "g_a.yaml": "task: g_a\n"}, [group])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "g_a.yaml"]
    assert group.read_text(encoding="utf-8") == (
        "# h\ngroup: g\ntask:\n  - g_a\naggregate_metric_list:\n"
        "  - {metric: acc, aggregation: mean, weight_by_size: true}\nmetadata:\n  version: 1.0\n"
    )
