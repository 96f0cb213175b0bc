"""Helpers of the task tests: the fixture rows as the data directory, replay files, hashes."""

import hashlib
import json

import pytest

from evalpack.core import data
from tests.conftest import FIXTURES


@pytest.fixture
def fixture_mirror(monkeypatch):
    """Point the loader at tests/fixtures/data (PopQA, DROP, AlpacaEval rows; no mirror)."""
    monkeypatch.setenv(data.DATA_DIR_ENV, str(FIXTURES / "data"))


def replay_file(tmp_path, rows, name="replay.jsonl"):
    """A `replay` completions file of `rows` in `tmp_path`; its path as a string."""
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def sha(value) -> str:
    """sha256 of `value`'s compact JSON, as OLMES's request files hash messages."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
