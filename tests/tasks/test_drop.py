"""drop_llama3 (OLMES `drop::llama3`) on fixture rows: prompt, shots, golds, metrics, end to end.

`tests/fixtures/olmes_reference.json` holds what OLMES's own code (commit 5a51f502) builds and
scores for these rows (see its `source`); the hand-written cases below say the same in words.
"""

import json
import random

import pytest

from evalpack.core import data
from evalpack.hooks import drop
from evalpack.models.replay import render_messages
from evalpack.scoring import drop_f1
from tests.conftest import FIXTURES, replay_eval, task_manager

REFERENCE = json.loads((FIXTURES / "olmes_reference.json").read_text(encoding="utf-8"))
OLMES = {doc["query_id"]: doc for doc in REFERENCE["drop::llama3"]}
TRAIN = FIXTURES / "data" / "EleutherAI__drop" / "default" / "train.jsonl"
VALIDATION = FIXTURES / "data" / "EleutherAI__drop" / "default" / "validation.jsonl"


def build(fewshot_as_multiturn=True):
    task = task_manager().load(["drop_llama3"])["tasks"]["drop_llama3"]
    task.build_all_requests(
        rank=0,
        world_size=1,
        apply_chat_template=True,
        fewshot_as_multiturn=fewshot_as_multiturn,
        chat_template=lambda msgs, add_generation_prompt=True: render_messages(msgs),
    )
    return task.instances


def test_messages_and_generation_settings_are_olmes(fixture_mirror):
    instances = build()
    assert [inst.doc["query_id"] for inst in instances] == ["v0", "v1", "v2", "v3"]
    for inst in instances:
        reference = OLMES[inst.doc["query_id"]]
        context, gen_kwargs = inst.args
        assert json.loads(context) == reference["messages"]
        assert reference["assistant_prefix"] == ""
        assert gen_kwargs["until"] == reference["stop_sequences"] == drop.STOP_STRINGS
        assert gen_kwargs["max_gen_toks"] == reference["generation_kwargs"]["max_gen_toks"] == 50
        assert gen_kwargs["do_sample"] is False and gen_kwargs["temperature"] == 0.0


def test_one_user_turn_whatever_fewshot_as_multiturn(fixture_mirror):
    multi = [json.loads(inst.args[0]) for inst in build(fewshot_as_multiturn=True)]
    single = [json.loads(inst.args[0]) for inst in build(fewshot_as_multiturn=False)]
    assert multi == single
    assert all(len(messages) == 1 and messages[0]["role"] == "user" for messages in multi)


def test_the_message_of_one_row_in_full(fixture_mirror):
    # Train rows 6, 3 and 0 in that order (Random(1234).sample of 7 rows), then the doc.
    p_census = (
        "In 1871 the town had 2,310 inhabitants; by 1900 the population had grown to "
        "4,875, of whom 38% were farmers."
    )
    p_treaty = (
        "The treaty was signed on 5 May 1992 in Lisbon. Three countries ratified it within "
        "a year, and two more joined in March 1994."
    )
    p_bears = (
        "The Bears opened the season at home against the Packers. Chicago scored first on a "
        "47-yard field goal, and Green Bay answered with two touchdowns by Aaron Rodgers."
    )
    expected = (
        f"Passage: {p_census}\nQuestion: By how many did the population grow from 1871 to 1900?"
        "\nAnswer: 2565\n\n"
        f"Passage: {p_treaty}\nQuestion: When did two more countries join?\nAnswer: March 1994\n\n"
        f"Passage: {p_bears}\nQuestion: Which teams played?\nAnswer: Bears, Packers\n\n"
        f"Passage: {p_treaty}\nQuestion: When was the treaty signed?\nAnswer:"
    )
    messages = json.loads(build()[3].args[0])
    assert messages == [{"role": "user", "content": expected}]


def test_shots_are_olmes_random_sample_of_the_whole_train_split():
    train = data.read_jsonl(TRAIN)
    olmes_pick = random.Random(1234).sample(train, 3)  # OLMES: rnd.sample(training_docs, k)
    assert drop.llama3_shots(train) == olmes_pick
    assert [row["query_id"] for row in olmes_pick] == ["t6", "t3", "t0"]
    # the positions depend on the split's size only: same docs as sampling the list itself
    for size in (8, 1000, 77_409):
        rows = [{"row": i} for i in range(size)]
        assert drop.llama3_shots(rows) == random.Random(1234).sample(rows, 3)


def test_golds_as_olmes_builds_them():
    for row in data.read_jsonl(VALIDATION):
        assert drop.gold_answers(row) == OLMES[row["query_id"]]["answers"]
    by_id = {row["query_id"]: drop.gold_answers(row) for row in data.read_jsonl(VALIDATION)}
    assert by_id["v0"] == [["Peyton Manning"], ["Manning"]]  # duplicate dropped, first kept
    assert by_id["v1"] == [["3"]]
    assert by_id["v2"] == [["Chicago Bears", "Green Bay Packers"], [""]]  # empty validated entry
    assert by_id["v3"] == [["5  1992"], ["May 1992"]]  # "day month year" stripped, blanks inside


def test_metrics_equal_olmes_verdicts_on_hand_written_completions():
    checked = 0
    for reference in OLMES.values():
        for case in reference["scores"]:
            ours = drop_f1.olmes_drop_scores(case["completion"], reference["answers"])
            assert ours == {"exact_match": case["exact_match"], "f1": case["f1"]}, case
            checked += 1
    assert checked == 24


@pytest.mark.parametrize(
    "prediction, golds, exact_match, f1",
    [
        ("peyton manning.", [["Peyton Manning"]], 1.0, 1.0),  # case, punctuation
        ("the Colts", [["Colts"]], 1.0, 1.0),  # articles dropped
        ("3.0", [["3"]], 1.0, 1.0),  # numbers as floats
        ("30", [["3"]], 0.0, 0.0),  # no shared number: 0
        ("3 touchdown passes", [["3"]], 0.0, 0.5),
        ("1992", [["May 1992"]], 0.0, 0.67),  # rounded to 2 decimals
        ("New-York", [["new york"]], 1.0, 1.0),  # hyphen splits tokens
        ("Chicago Bears", [["Chicago Bears", "Green Bay Packers"]], 0.0, 0.5),  # one span of two
        ("Chicago Bears, Green Bay Packers", [["Chicago Bears", "Green Bay Packers"]], 0.0, 0.37),
        ("", [["Lisbon"], [""]], 0.0, 0.0),  # blank gold skipped
        ("anything", [[""]], 0.0, 0.0),  # no usable gold at all
    ],
)
def test_metric_rules(prediction, golds, exact_match, f1):
    scores = drop_f1.olmes_drop_scores(prediction, golds)
    assert scores == {"exact_match": exact_match, "f1": f1}


def test_multi_span_predictions_align_one_to_one():
    gold = ("Chicago Bears", "Green Bay Packers")
    assert drop_f1.score_against(["Green Bay Packers", "Chicago Bears"], gold) == (1.0, 1.0)
    assert drop_f1.score_against(["Chicago Bears", "Chicago Bears"], gold) == (0.0, 0.5)


def test_the_scorer_cuts_at_the_stop_strings_whatever_the_backend_did():
    doc = {"answers": [["3"]]}
    record = drop.score_record(" 3\nQuestion: How many more?<|eot_id|>", doc)
    assert record["answer"] == " 3\n" and record["f1"] == 1.0
    assert drop.score_record("Passage: 3", doc)["answer"] == ""


def test_bad_rows_name_the_doc_and_field():
    row = data.read_jsonl(VALIDATION)[0] | {"doc_key": "EleutherAI__drop/default/validation#0"}
    bad = row | {"validated_answers": {**row["validated_answers"], "spans": []}}
    with pytest.raises(data.DataError, match=r"validation#0: field 'validated_answers'"):
        drop.gold_answers(bad)
    with pytest.raises(data.DataError, match=r"validation#0: field 'answer'"):
        drop.gold_answers(row | {"answer": {"spans": ["x"]}})


def test_yaml_settings_and_answer_types(fixture_mirror):
    task = task_manager().load(["drop_llama3"])["tasks"]["drop_llama3"]
    assert task.config.generation_kwargs["until"] == drop.STOP_STRINGS
    assert task.config.metadata["primary"] == {"metric": "f1", "filter": "olmes"}
    assert [doc["answer_type"] for doc in task.eval_docs] == ["span", "number", "spans", "date"]


def test_end_to_end_with_replay(fixture_mirror, tmp_path):
    completions = [
        "Peyton Manning\n\nPassage: (the model goes on)",  # cut at "Passage:"
        " 3 Question: and more",  # cut at "Question:"
        "Chicago Bears",
        "May 1992<|eot_id|>",
    ]
    rows = [
        {"key": f"EleutherAI__drop/default/validation#{i}", "completion": text}
        for i, text in enumerate(completions)
    ]
    file = tmp_path / "completions.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = replay_eval(["drop_llama3"], f"completions={file}", log_samples=True)
    results = out["results"]["drop_llama3"]
    assert results["f1,olmes"] == pytest.approx((1 + 1 + 0.5 + 1) / 4)
    assert results["exact_match,olmes"] == pytest.approx(3 / 4)
    records = [s["filtered_resps"][0] for s in out["samples"]["drop_llama3"]]
    assert records[0]["answer"] == "Peyton Manning\n\n"
    assert records[2] == {
        "answer": "Chicago Bears",
        "golds": [["Chicago Bears", "Green Bay Packers"], [""]],
        "exact_match": 0.0,
        "f1": 0.5,
    }
    assert [s["f1"] for s in out["samples"]["drop_llama3"]] == [1.0, 1.0, 0.5, 1.0]
