"""popqa_tulu (OLMES `popqa::tulu`) on fixture rows: exemplars, messages, metrics, end to end.

`tests/fixtures/olmes_reference.json` holds what OLMES's own code (commit 5a51f502) builds and
scores for these rows (see its `source`); the hand-written cases below say the same in words.
"""

import json
import os
import subprocess
import sys

import pytest

from evalpack.core import data, fewshot
from evalpack.hooks import popqa
from evalpack.scoring.popqa_match import matching_alias, olmes_match
from tests.conftest import FIXTURES, chat_requests, replay_eval, task_manager

REFERENCE = json.loads((FIXTURES / "olmes_reference.json").read_text(encoding="utf-8"))
OLMES = REFERENCE["popqa::tulu"]
TEST = FIXTURES / "data" / "akariasai__PopQA" / "default" / "test.jsonl"


def test_the_exemplars_are_olmes_first_15():
    record = fewshot.load("popqa")
    shots = record["samples"]
    assert len(shots) == 15
    assert "5a51f502d463b8cdc4a2dcad7d7096c41ff1197e" in record["source"]
    assert shots[0]["question"] == "What is Thomas Widdrington's occupation?"
    assert shots[-1]["question"] == "Who is the mother of Terry Fox?"
    # one exemplar per OLMES relation template but "What is the capital of {}?" (422)
    assert len({shot["prop_id"] for shot in shots}) == 15
    assert 422 not in {shot["prop_id"] for shot in shots}


def test_messages_and_generation_settings_are_olmes(fixture_mirror):
    instances = chat_requests("popqa_tulu")
    assert [inst.doc["id"] for inst in instances] == [doc["id"] for doc in OLMES]
    for inst, reference in zip(instances, OLMES):
        context, gen_kwargs = inst.args
        assert json.loads(context) == reference["messages"]
        assert reference["assistant_prefix"] == ""
        assert gen_kwargs["until"] == reference["stop_sequences"] == popqa.STOP_STRINGS
        assert gen_kwargs["max_gen_toks"] == reference["generation_kwargs"]["max_gen_toks"] == 15
        assert gen_kwargs["do_sample"] is False and gen_kwargs["temperature"] == 0.0


def test_the_messages_of_one_row(fixture_mirror):
    messages = json.loads(chat_requests("popqa_tulu")[0].args[0])
    assert len(messages) == 31  # 15 exemplar pairs, then the question
    assert messages[:4] == [
        {"role": "user", "content": "Q: What is Thomas Widdrington's occupation? A:"},
        {"role": "assistant", "content": "politician"},
        {"role": "user", "content": "Q: In what city was Glover Morrill Allen born? A:"},
        {"role": "assistant", "content": "Walpole"},
    ]
    assert messages[-3:] == [
        {"role": "user", "content": "Q: Who is the mother of Terry Fox? A:"},
        {"role": "assistant", "content": "Betty Fox"},
        {"role": "user", "content": "Q: What is George Rankin's occupation? A:"},
    ]


def test_an_exemplar_answer_is_stripped_as_a_chat_turn():
    # OLMES: target " " + obj, then concat_with_space("", target) strips both ends
    assert popqa.doc_to_target({"obj": " Peru \n"}) == "Peru"


def test_metrics_equal_olmes_verdicts_on_hand_written_completions():
    checked = 0
    for reference in OLMES:
        for case in reference["scores"]:
            assert olmes_match(case["completion"], reference["alias"]) == bool(
                case["exact_match"]
            ), (reference["id"], case)
            checked += 1
    assert checked == 5 * 24


@pytest.mark.parametrize(
    "prediction, aliases, olmes, whole_word",
    [
        ("He was a politician.", ["politician"], True, True),
        ("Politician", ["politician"], True, True),  # alias.capitalize()
        ("POLITICIAN", ["politician"], False, True),  # the prediction is not lower-cased
        ("a polite man", ["pol"], True, False),  # substring inside a word
        ("Brown", ["B"], True, False),  # a one-letter alias
        ("snow", ["W"], True, False),  # "W".lower() is in "snow"
        ("Russia", ["US"], True, False),  # "us" is in "Russia"
        ("anything at all", [""], True, False),  # an empty alias matches everything
        ("", ["Peru"], False, False),
        ("the US", ["United States", "US"], True, True),
    ],
)
def test_match_rules(prediction, aliases, olmes, whole_word):
    assert olmes_match(prediction, aliases) is olmes
    assert (matching_alias(prediction, aliases) is not None) is whole_word


def test_popularity_buckets_and_row_checks(fixture_mirror):
    task = task_manager().load(["popqa_tulu"])["tasks"]["popqa_tulu"]
    assert [doc["popularity"] for doc in task.eval_docs] == [
        "2 (100-999)",
        "1 (<100)",
        "5 (>=100k)",
        "3 (1k-9.9k)",
        "3 (1k-9.9k)",
    ]
    assert task.config.metadata["breakdown"] == [{"by": "doc_field", "field": "popularity"}]
    bad = data.read_jsonl(TEST)[0] | {
        "doc_key": "akariasai__PopQA/default/test#0",
        "possible_answers": "politician",
    }
    with pytest.raises(data.DataError, match=r"test#0: field 'possible_answers'"):
        popqa.aliases(bad)


def test_the_scorer_cuts_at_the_stop_string():
    doc = {"possible_answers": '["Peru"]', "popularity": "1 (<100)"}
    record = popqa.score_record(" Lima\n\nQ: What is Peru? A: Peru", doc)
    assert record["answer"] == " Lima" and record["exact_match"] == 0.0


def test_end_to_end_with_replay(fixture_mirror, tmp_path):
    completions = [" politician", " Brown", " USSR", " Ciudad Darío", " Anoop\n\nAnoop Menon"]
    rows = [
        {"key": f"akariasai__PopQA/default/test#{i}", "completion": text}
        for i, text in enumerate(completions)
    ]
    file = tmp_path / "completions.jsonl"
    file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = replay_eval(["popqa_tulu"], f"completions={file}", log_samples=True)
    results = out["results"]["popqa_tulu"]
    assert results["exact_match,olmes"] == pytest.approx(4 / 5)  # "Brown" has a "w" (alias "W")
    assert results["alias_match,olmes"] == pytest.approx(2 / 5)
    samples = out["samples"]["popqa_tulu"]
    assert samples[1]["filtered_resps"][0] == {
        "answer": " Brown",
        "exact_match": 1.0,
        "alias_match": 0.0,
        "matched_alias": None,
        "popularity": "1 (<100)",
    }
    assert samples[4]["filtered_resps"][0]["answer"] == " Anoop"
    assert [s["exact_match"] for s in samples] == [1.0, 1.0, 1.0, 1.0, 0.0]
    # the run records the dataset revision its doc keys come from (results `configs`)
    assert out["configs"]["popqa_tulu"]["dataset_kwargs"] == {
        "path": "akariasai/PopQA",
        "splits": ["test"],
        "revision": None,
    }


def test_unreachable_hub_fails_at_once_with_one_line(monkeypatch):
    monkeypatch.delenv(data.DATA_DIR_ENV, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(data, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(data.DataError) as failure:
        task_manager().load(["popqa_tulu"])
    message = str(failure.value)
    assert "\n" not in message
    assert "'akariasai/PopQA'" in message and "hub cannot be reached" in message
    assert "EVALPACK_DATA_DIR=<mirror dir> holding akariasai__PopQA/default/test.jsonl" in message


def test_offline_without_the_data_fails_with_one_line(tmp_path):
    # a fresh process: the hub client reads HF_HUB_OFFLINE when it is imported
    env = {k: v for k, v in os.environ.items() if k != data.DATA_DIR_ENV}
    env |= {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path)}  # an empty HF cache
    run = subprocess.run(
        [sys.executable, "-c", "from evalpack.core import data; data.load('akariasai/PopQA')"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1] == (
        "evalpack.core.data.DataError: dataset 'akariasai/PopQA' split 'test': offline and not in "
        "the Hugging Face cache; set EVALPACK_DATA_DIR=<mirror dir> holding "
        "akariasai__PopQA/default/test.jsonl (runs and `evalpack rescore` both read the datasets)"
    )
