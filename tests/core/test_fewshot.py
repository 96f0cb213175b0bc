"""The exemplar loader (`evalpack.core.fewshot`): recorded hashes are checked on every load.
The exemplar texts themselves: test_fewshot_minerva.py and test_fewshot_bbh.py."""

import json

import pytest

from evalpack.core import fewshot


def test_the_shipped_files_load_whole():
    assert len(fewshot.load("minerva_math")["samples"]) == 4
    subtasks = fewshot.load("bbh_cot")["subtasks"]
    assert len(subtasks) == 27
    assert {len(entry["samples"]) for entry in subtasks.values()} == {3}


def test_a_tampered_file_is_refused(tmp_path, monkeypatch):
    record = json.loads((fewshot.FEWSHOT_DIR / "minerva_math.json").read_text())
    record["samples"][0]["problem"] += " "
    (tmp_path / "minerva_math.json").write_text(json.dumps(record))
    monkeypatch.setattr(fewshot, "FEWSHOT_DIR", tmp_path)
    fewshot.load.cache_clear()
    try:
        with pytest.raises(ValueError, match="hash"):
            fewshot.load("minerva_math")
    finally:
        fewshot.load.cache_clear()
