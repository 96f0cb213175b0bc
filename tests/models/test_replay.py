import json
from types import SimpleNamespace

import pytest

from evalpack.models.replay import ReplayLM, index_completions


def _request(doc, doc_id=0, task="t", until=None):
    return SimpleNamespace(
        doc=doc, doc_id=doc_id, task_name=task, args=("ctx", {"until": until or []})
    )


def test_rows_of_one_doc_are_its_repeats_in_file_order():
    rows = [
        {"key": "a#0", "completion": "first"},
        {"key": "a#0", "completion": "second"},
        {"task": "t", "doc_id": 3, "repeat": 5, "completion": "explicit"},
    ]
    index = index_completions(rows, "f.jsonl")
    assert index == {("a#0", 0): "first", ("a#0", 1): "second", ("t#3", 5): "explicit"}


def test_bad_rows_name_file_and_line():
    with pytest.raises(ValueError, match=r"f\.jsonl, line 2: missing string field 'completion'"):
        index_completions([{"key": "a", "completion": "x"}, {"key": "b"}], "f.jsonl")
    with pytest.raises(ValueError, match=r"line 1: needs 'key' or both 'task' and 'doc_id'"):
        index_completions([{"completion": "x"}], "f.jsonl")


def test_repeats_of_one_request_get_successive_completions(tmp_path):
    file = tmp_path / "c.jsonl"
    file.write_text(
        "\n".join(json.dumps({"key": "k#0", "completion": c}) for c in ["A\nstop", "B"]) + "\n"
    )
    lm = ReplayLM(completions=str(file), request_log=str(tmp_path / "log.jsonl"))
    request = _request({"doc_key": "k#0"}, until=["\nstop"])
    assert lm.generate_until([request, request]) == ["A", "B"]
    logged = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert logged == [
        {"task": "t", "doc_id": 0, "repeat": 0},
        {"task": "t", "doc_id": 0, "repeat": 1},
    ]


def test_missing_completion_is_an_error_unless_asked_for_empty(tmp_path):
    file = tmp_path / "c.jsonl"
    file.write_text(json.dumps({"key": "k#0", "completion": "x"}) + "\n")
    request = _request({"doc_key": "k#1"}, doc_id=1)
    with pytest.raises(KeyError, match="no completion for task t doc 1 .key k#1. repeat 0"):
        ReplayLM(completions=str(file)).generate_until([request])
    assert ReplayLM(completions=str(file), missing="empty").generate_until([request]) == [""]


def test_from_doc_template_and_chat_rendering():
    lm = ReplayLM(from_doc="So the answer is {target}.")
    assert lm.generate_until([_request({"target": "(B)"})]) == ["So the answer is (B)."]
    assert ReplayLM(from_doc="target").generate_until([_request({"target": "(B)"})]) == ["(B)"]
    messages = [{"role": "user", "content": "é\n"}]
    assert json.loads(lm.apply_chat_template(messages)) == messages


def test_from_doc_per_task_prefix():
    lm = ReplayLM(
        from_doc={
            "bbh": "So the answer is {target}.",
            "bbh_cot_v1": "target",
            "minerva": "solution",
        }
    )
    doc = {"target": "(B)", "solution": "S"}
    answers = lm.generate_until(
        [
            _request(doc, task="bbh_cot_tulu_snarks"),
            _request(doc, task="bbh_cot_v1_tulu_snarks"),
            _request(doc, task="minerva_math_tulu_algebra"),
        ]
    )
    assert answers == ["So the answer is (B).", "(B)", "S"]  # the longest prefix wins
    with pytest.raises(KeyError, match="no field or template for task aime24_reasoning"):
        lm.generate_until([_request(doc, task="aime24_reasoning")])


def test_several_completion_files_answer_their_own_docs(tmp_path):
    files = [tmp_path / "math.jsonl", tmp_path / "bbh.jsonl"]
    files[0].write_text(json.dumps({"key": "m#0", "completion": "M"}) + "\n")
    files[1].write_text(json.dumps({"key": "b#0", "completion": "B"}) + "\n")
    lm = ReplayLM(completions=[str(f) for f in files])
    assert lm.generate_until([_request({"doc_key": "b#0"}), _request({"doc_key": "m#0"})]) == [
        "B",
        "M",
    ]


def test_needs_exactly_one_source():
    with pytest.raises(ValueError, match="exactly one"):
        ReplayLM()
