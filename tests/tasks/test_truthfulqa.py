"""truthfulqa_tulu through lm-eval: OLMES-identical requests, OLMES's mc1/mc2 on its own verdict
file, and a run end to end with log-likelihood replay."""

import json
import logging
import math

import pytest

from evalpack.core import fewshot
from evalpack.core.data import DataError
from evalpack.hooks import truthfulqa
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    by_doc,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
)
from tests.tasks.conftest import replay_file, sha

TASK = "truthfulqa_tulu"


def olmes_records(prefix):
    return [
        r for r in read_jsonl(OLMES_REF / "requests_dev_next.jsonl") if r["task"].startswith(prefix)
    ]


@pytest.fixture(scope="module")
def built(module_mirror):
    return by_doc(chat_requests(TASK))


def test_the_primer_is_olmes_six_shots():
    samples = fewshot.load("truthfulqa")["samples"]
    assert len(samples) == 6
    assert truthfulqa.primer().startswith(
        "Q: What is human life expectancy in the United States?"
        "\nA: Human life expectancy in the United States is 78"
        " years.\n\nQ: Who was president"
    )
    assert truthfulqa.primer().endswith("\nA: The 1992 Olympics were held in Barcelona, Spain.\n\n")


@requires_shared
def test_requests_identical_to_olmes_on_every_dev_record(built):
    records = olmes_records("truthfulqa::tulu")
    assert len(records) == 100
    for ref in records:
        insts = built[ref["key"]]
        contexts = {inst.args[0] for inst in insts}
        assert len(contexts) == 1, ref["key"]  # one shared context per doc
        messages = json.loads(contexts.pop())
        continuations = [inst.args[1] for inst in insts]
        assert messages == ref["messages"] and sha(messages) == ref["sha256_messages"]
        assert continuations == ref["continuations_chat"], ref["key"]
        assert sha(continuations) == ref["sha256_continuations_chat"]
        assert ref["context_suffix_chat"] == ref["assistant_prefix"] == ""
        doc = insts[0].doc
        assert doc["labels"] == ref["mc_labels"]
        assert doc["mc1_indices"] == ref["mc1_indices"]
        assert doc["mc2_indices"] == ref["mc2_indices"]


@requires_shared
def test_every_doc_renders(built):
    rows = read_jsonl(DATA_DIR / "truthfulqa__truthful_qa/multiple_choice/validation.jsonl")
    assert len(built) == len(rows) == 817
    total = 0
    for i, row in enumerate(rows):
        insts = built[f"truthfulqa__truthful_qa/multiple_choice/validation#{i}"]
        (message,) = json.loads(insts[0].args[0])
        assert message == {
            "role": "user",
            "content": f"{truthfulqa.primer()}Q: {row['question']}\nA:",
        }
        continuations = [inst.args[1] for inst in insts]
        mc1 = row["mc1_targets"]["choices"]
        assert continuations[: len(mc1)] == mc1  # gold first, no leading space in chat mode
        assert set(continuations) == set(mc1) | set(row["mc2_targets"]["choices"])
        total += len(insts)
    assert total == 5882


def test_choices_follow_olmes_and_a_label_conflict_is_an_error():
    doc = {
        "doc_key": "k#3",
        "question": "q",
        "mc1_targets": {"choices": ["a", "b", "c"], "labels": [1, 0, 0]},
        "mc2_targets": {"choices": ["d", "a", "c", "e"], "labels": [1, 1, 0, 0]},
    }
    assert truthfulqa.olmes_choices(doc) == {
        "choices": ["a", "b", "c", "d", "e"],
        "labels": [1, 0, 0, 1, 0],
        "mc1_indices": [0, 1, 2],
        "mc2_indices": [3, 0, 2, 4],
    }
    doc["mc2_targets"]["labels"][1] = 0
    with pytest.raises(DataError, match=r"k#3: mc2_targets labels 'a' 0, mc1_targets 1"):
        truthfulqa.olmes_choices(doc)


@pytest.fixture(scope="module")
def olmes_scores():
    if not OLMES_REF.is_dir():
        pytest.skip(f"OLMES reference files not found at {OLMES_REF}")
    return [
        r for r in read_jsonl(OLMES_REF / "scores_dev_mc.jsonl") if r["task"] == "truthfulqa::tulu"
    ]


@requires_shared
def test_olmes_mc1_mc2_on_every_verdict_row(built, olmes_scores):
    assert len(olmes_scores) == 155
    for row in olmes_scores:
        doc = built[row["key"]][0].doc
        results = [(value, False) for value in row["inputs"]["sum_logits"]]
        got = truthfulqa.process_results(doc, results)
        assert (got["mc1"], got["mc2"]) == (row["mc1"], row["mc2"]), row["id"]
        assert got["mc2_underflow"] == 0
    scenarios = {row["scenario"] for row in olmes_scores}
    assert {"denormal_-740", "tie_gold_and_wrong", "tie_two_wrong_above_gold"} <= scenarios


def test_all_mc2_terms_underflowing_is_reported_not_a_crash(caplog):
    doc = {"doc_key": "tq#7", "labels": [1, 0, 1], "mc1_indices": [0, 1], "mc2_indices": [0, 1, 2]}
    with caplog.at_level(logging.WARNING):
        got = truthfulqa.process_results(doc, [(-800.0, False), (-801.0, False), (-802.0, False)])
    assert got["mc2_underflow"] == 1.0 and got["mc1"] == 1.0
    # the same ratio with every term scaled by exp(800): (1 + e^-2) / (1 + e^-1 + e^-2)
    expected = (1 + math.exp(-2)) / (1 + math.exp(-1) + math.exp(-2))
    assert got["mc2"] == pytest.approx(expected, rel=1e-15)
    assert "tq#7" in caplog.text


@requires_shared
def test_end_to_end_replay_reproduces_olmes_aggregate(mirror, built, olmes_scores, tmp_path):
    rows, doc_ids = [], []
    for row in olmes_scores:
        insts = built[row["key"]]
        doc_ids.append(insts[0].doc_id)
        rows += [
            {"key": row["key"], "continuation": inst.args[1], "loglikelihood": value}
            for inst, value in zip(insts, row["inputs"]["sum_logits"], strict=True)
        ]
    out = replay_eval(
        [TASK],
        {"completions": replay_file(tmp_path, rows, "ll.jsonl")},
        samples={TASK: sorted(doc_ids)},
    )
    result = out["results"][TASK]
    by_id = sorted(olmes_scores, key=lambda r: built[r["key"]][0].doc_id)
    for metric in ("mc1", "mc2"):
        expected = sum(r[metric] for r in by_id) / len(by_id)
        assert result[f"{metric},none"] == pytest.approx(expected, rel=1e-12, abs=0)
    assert result["mc2_underflow,none"] == 0
