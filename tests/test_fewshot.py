import json

import pytest

from conftest import OLMES_REF, read_jsonl, requires_shared
from evalpack import fewshot


def test_minerva_shots_match_their_recorded_hash():
    record = fewshot.load("minerva_math")
    assert fewshot.payload_sha256(record["samples"]) == record["sha256"]
    assert len(record["samples"]) == 4
    assert "lm-eval==0.4.3" in record["source"]


def test_quirks_are_kept():
    shots = fewshot.load("minerva_math")["samples"]
    assert shots[0]["problem"].endswith("{\\sqrt{5-x}}$.}")
    assert "30n&=480\\\n" in shots[2]["solution"]  # one backslash before the newline
    assert "6x-4y&=a,\\\n" in shots[3]["problem"]


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


@requires_shared
def test_minerva_shots_equal_olmes_turns():
    ref = read_jsonl(OLMES_REF / "requests_dev.jsonl")[0]["messages"]
    shots = fewshot.load("minerva_math")["samples"]
    turns = []
    for shot in shots:
        turns += [{"role": "user", "content": f"Problem:\n{shot['problem']}\n\nSolution:"},
                  {"role": "assistant", "content": shot["solution"].strip()}]
    assert ref[:8] == turns
