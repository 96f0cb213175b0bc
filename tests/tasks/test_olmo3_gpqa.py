"""gpqa_cot_olmo3 (OLMES `gpqa::olmo3:adapt`), gated: like tests/tasks/test_gpqa.py these tests
only ever hold hashes and letters of what the task builds, never a question or prompt.

OLMES's olmo3 spec asks with the same description and final reminder as `gpqa:0shot_cot::tulu3`
(oe_eval/configs/tasks.py at 5a51f50), so its messages hash as OLMES's tulu3 requests do; the
generation settings are olmo3's."""

import json

import pytest

from evalpack.hooks import olmo3_rules
from tests.conftest import OLMES_REF, by_doc, chat_requests, read_jsonl, replay_eval
from tests.tasks.conftest import replay_file, sha
from tests.tasks.test_gpqa import gpqa_dir  # noqa: F401 (the fixture: GPQA unpacked to scratch)


@pytest.fixture(scope="module")
def built(gpqa_dir):  # noqa: F811
    """doc key -> (sha256 of the messages, label, generation settings) of every doc."""
    out = {}
    for key, (inst,) in by_doc(chat_requests("gpqa_cot_olmo3")).items():
        kwargs = {k: inst.args[1][k] for k in ("until", "do_sample", "temperature", "top_p")}
        out[key] = (sha(json.loads(inst.args[0])), inst.doc["label"], kwargs)
    return out


def test_every_doc_builds_with_olmo3_sampling(built):
    assert set(built) == {f"Idavidrein__gpqa/gpqa_main/train#{i}" for i in range(448)}
    settings = {(json.dumps(kwargs, sort_keys=True)) for _, _, kwargs in built.values()}
    assert settings == {
        json.dumps(
            {"until": [], "do_sample": True, "temperature": 0.6, "top_p": 0.95}, sort_keys=True
        )
    }


def test_messages_hash_as_olmes_builds_them(built):
    records = [
        r
        for r in read_jsonl(OLMES_REF / "requests_dev_unseen_gpqa_hashes.jsonl")
        if r["task"] == "gpqa:0shot_cot::tulu3"
    ]
    assert len(records) == 5
    for ref in records:
        digest, label, _ = built[ref["key"]]
        assert (digest, label) == (ref["sha256_messages"], ref["label"]), ref["key"]


def test_end_to_end_with_replay_and_the_switch(gpqa_dir, tmp_path):  # noqa: F811
    docs = [inst.doc for inst in chat_requests("gpqa_cot_olmo3", samples=[0, 1])]
    rows = [
        {"key": docs[0]["doc_key"], "completion": f"Therefore, the answer is ({docs[0]['label']})"},
        {"key": docs[1]["doc_key"], "completion": "<think>\nhmm"},
    ]
    out = replay_eval(
        ["gpqa_cot_olmo3"],
        {"completions": replay_file(tmp_path, rows)},
        limit=2,
        metadata={"process_output": "r1_style"},
    )
    result = out["results"]["gpqa_cot_olmo3"]
    assert result["answer_format_correct,olmes"] == 0.5  # 1.0, then 0.0: no letter at all
    assert result["thinking_unfinished,olmes"] == 2  # neither wrote `</think>`
    assert result["exact_match,olmes"] == 0.5
    assert olmo3_rules.score_gpqa("Therefore, the answer is (C)", {"label": "C"})["exact_match"]
