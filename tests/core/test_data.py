import json

import datasets
import pytest

from evalpack.core import data
from tests.conftest import DATA_DIR, requires_shared


def test_mirror_file_follows_hub_layout(tmp_path):
    assert data.mirror_file(tmp_path, "openai/openai_humaneval", None, "test") == (
        tmp_path / "openai__openai_humaneval" / "default" / "test.jsonl"
    )


def test_missing_mirror_file_names_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(data.DataError) as err:
        data.load("EleutherAI/hendrycks_math", "algebra")
    assert str(tmp_path / "EleutherAI__hendrycks_math" / "algebra" / "test.jsonl") in str(err.value)


def test_bad_row_names_file_and_line(tmp_path, monkeypatch):
    folder = tmp_path / "me__set" / "default"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text('{"a": 1}\n{"a": 2\n')
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(data.DataError, match=r"test\.jsonl, line 2: not valid JSON"):
        data.load("me/set")


@requires_shared
def test_mirror_rows_and_keys(monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(DATA_DIR))
    split = data.load("EleutherAI/hendrycks_math", "algebra")["test"]
    first = json.loads(
        (DATA_DIR / "EleutherAI__hendrycks_math/algebra/test.jsonl").open().readline()
    )
    assert len(split) == 1187
    assert split[0] == {**first, "doc_key": "EleutherAI__hendrycks_math/algebra/test#0"}
    assert split[1186]["doc_key"] == "EleutherAI__hendrycks_math/algebra/test#1186"


def test_metadata_does_not_reach_the_loader_as_options(tmp_path, monkeypatch):
    folder = tmp_path / "me__set" / "default"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text('{"a": 1}\n')
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    loaded = data.load(path="me/set", version=1.0, chat=True)
    assert list(loaded["test"]) == [{"a": 1, "doc_key": "me__set/default/test#0"}]


def test_the_revision_reaches_the_hub(monkeypatch):
    """A task's `dataset_kwargs.revision` is the commit the hub is asked for."""
    asked = []
    monkeypatch.delenv(data.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(data, "hub_reachable", lambda: True)
    monkeypatch.setattr(
        datasets, "load_dataset", lambda *args, **kwargs: asked.append((args, kwargs)) or [{"x": 1}]
    )
    loaded = data.load("owner/name", "config", splits=("test",), revision="0123abc", repeats=2)
    assert asked == [(("owner/name", "config"), {"split": "test", "revision": "0123abc"})]
    assert loaded["test"][0] == {"x": 1, "doc_key": "owner__name/config/test#0"}
