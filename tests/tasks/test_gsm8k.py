"""gsm8k_tulu: OLMES-identical requests, OLMES's verdicts with their quirks, the numeric metric,
and the 11,900 real outputs end to end through lm-eval."""

import hashlib
import json
from collections import Counter, defaultdict
from decimal import Decimal

import pytest

from evalpack.core import fewshot
from evalpack.core.bounded import time_limit
from evalpack.hooks import gsm8k as tasks_gsm8k
from evalpack.scoring import gsm8k_answers as answers
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    OUTPUTS,
    chat_requests,
    olmes_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)

TASK = "gsm8k_tulu"


def _score(completion, gold):
    return answers.score_gsm8k(completion, f"Some reasoning.\n#### {gold}")


def _sha256_messages(messages):
    text = json.dumps(messages, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def gsm8k_docs():
    file = DATA_DIR / "openai__gsm8k" / "main" / "test.jsonl"
    if not file.is_file():
        pytest.skip(f"GSM8K mirror not found at {file}")
    return read_jsonl(file)


def _row(key):
    return int(key.rsplit("#", 1)[1])


# --- requests -------------------------------------------------------------------------------


def test_task_builds_and_every_doc_renders(mirror):
    instances = chat_requests(TASK)
    assert len(instances) == 1319
    for inst in instances:
        messages = json.loads(inst.args[0])
        assert [m["role"] for m in messages] == ["user", "assistant"] * 9
        assert messages[-2] == {"role": "user", "content": "Question: " + inst.doc["question"]}
        assert messages[-1] == {"role": "assistant", "content": "Answer:"}


@requires_shared
def test_requests_identical_to_olmes(mirror):
    reference = olmes_requests("gsm8k::tulu")
    built = {inst.doc["doc_key"]: inst for inst in chat_requests(TASK)}
    assert len(reference) == 200
    for ref in reference:
        inst = built[ref["key"]]
        context, gen_kwargs = inst.args
        messages = json.loads(context)
        # lm-eval sends the assistant prefix as a final assistant message to continue
        assert messages[:-1] == ref["messages"], ref["key"]
        assert _sha256_messages(messages[:-1]) == ref["sha256_messages"]
        assert messages[-1] == {"role": "assistant", "content": ref["assistant_prefix"]}
        assert gen_kwargs["until"] == ref["stop_sequences"]
        assert {k: gen_kwargs[k] for k in ref["generation_kwargs"]} == ref["generation_kwargs"]
        assert inst.repeats == ref["repeats"] == 1
        assert tasks_gsm8k.doc_to_target(inst.doc) == ref["label"]


@requires_shared
def test_shots_are_olmes_std_gsm8k_in_order():
    shots = fewshot.load("gsm8k")["samples"]
    turns = olmes_requests("gsm8k::tulu")[0]["messages"][:-1]
    assert len(shots) == 8
    assert turns == [
        turn
        for shot in shots
        for turn in (
            {"role": "user", "content": "Question: " + shot["question"]},
            {"role": "assistant", "content": "Answer: " + shot["answer"]},
        )
    ]
    assert all(
        shot["answer"].endswith(f"So the answer is {shot['short_answer']}.") for shot in shots
    )


def test_task_declares_its_metadata(mirror):
    config = task_manager().load([TASK])["tasks"][TASK].config
    meta = config.metadata
    assert meta["chat"] is True and meta["fewshot_as_multiturn"] is True
    assert meta["primary"] == {"metric": "exact_match", "filter": "olmes"}
    assert {r["model"]: r["value"] for r in meta["references"]} == {
        "Tulu-3-8B-SFT": 76.2,
        "Tulu-3-8B-DPO": 84.3,
        "Tulu-3-8B": 87.6,
        "Llama-3.1-8B-Instruct": 83.4,
    }


# --- OLMES's verdict ------------------------------------------------------------------------


@requires_shared
def test_all_olmes_dev_verdicts_reproduced(gsm8k_docs):
    outputs = {row["id"]: row for row in read_jsonl(OUTPUTS / "gsm8k.jsonl")}
    verdicts = read_jsonl(OLMES_REF / "scores_dev_gsm8k.jsonl")
    assert len(verdicts) == 1204
    wrong = []
    for verdict in verdicts:
        output = outputs[verdict["id"]]
        assert hashlib.sha256(output["completion"].encode()).hexdigest() == verdict["sha256"]
        record = answers.score_gsm8k(
            output["completion"], gsm8k_docs[_row(verdict["key"])]["answer"]
        )
        if (record["exact_match"], record["model_answer"]) != (
            verdict["exact_match"],
            verdict["model_answer"],
        ):
            wrong.append(verdict["id"])
    assert wrong == []
    assert Counter(v["exact_match"] for v in verdicts) == {1.0: 728, 0.0: 476}


@pytest.mark.parametrize(
    "completion, gold, model_answer, verdict",
    [
        # the last number anywhere; "The answer is" is never read
        ("The answer is 18. Check: 9 * 2 = 18, over 2 days.", "18", "2", 0),
        # integer signs are dropped on both sides...
        ("So the answer is 10.", "-10", "10", 1),
        ("The difference is -3.", "-3", "3", 1),
        ("He ends up with -40 dollars.", "40", "40", 1),
        # ...but a decimal keeps its sign
        ("It changed by -0.5 degrees.", "0.5", "-0.5", 0),
        # thousands commas merge pairwise, so "1,2,3" becomes "12,3"
        ("Sum: 1,2,3", "3", "3", 1),
        ("Sum: 1,2,3", "123", "3", 0),
        ("He paid $1,600.", "1,600", "1600", 1),
        # string comparison: "160.0" is not "160"
        ("The total is 160.0", "160", "160.0", 0),
        ("She pays $28.00 in all.", "28", "28.00", 0),
        # times and the like
        ("from 1:00 PM to 5:00 PM", "8", "00", 0),
        # no number: the whole output is the answer
        ("I cannot tell.", "4", "I cannot tell.", 0),
    ],
)
def test_olmes_quirks(completion, gold, model_answer, verdict):
    record = _score(completion, gold)
    assert record["model_answer"] == model_answer
    assert record["exact_match"] == verdict


def test_olmes_normalize_matches_its_regexes():
    # ExactMatch removes ",", "$", everything through the last "#### ", a final "." and lowers
    assert answers.olmes_normalize("a #### b #### $1,000.") == "1000"
    assert answers.olmes_normalize("ABC.\n") == "abc\n"
    assert answers.olmes_exact_match("#### 72", "72")


# --- the numeric metric ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "completion, gold, declared, last, verdict",
    [
        ("The total is 160.0", "160", None, "160", 1),
        ("She pays $28.00 in all.", "28", None, "28", 1),
        ("He paid 1,000 dollars.", "1000", None, "1000", 1),
        ("So the answer is 1000.", "1,000", "1000", "1000", 1),
        ("That is 25% of the class.", "25", None, "25", 1),
        # the sign is kept: the full gold must match
        ("So the answer is 10.", "-10", "10", "10", 0),
        ("The loss is -$10,000.", "-10000", None, "-10000", 1),
        ("x = \u221210", "-10", None, "-10", 1),
        ("He is 16-3 = 13 years old.", "13", None, "13", 1),
        # declared answers: \boxed{} (its last number), "the answer is", "####"
        ("\\boxed{2 \\times (16 - 3 - 4) = 18}", "18", "18", "18", 1),
        ("Terry spends $\\boxed{7,425.00}$ in 1 week.", "7425", "7425", "1", 1),
        ("The answer is 18 dollars for 2 days.", "18", "18", "2", 1),
        ("#### 72\nthat took 3 steps", "72", "72", "3", 1),
        ("Final Answer: 12 tomatoes for 32 ounces", "12", "12", "32", 1),
        # the last statement decides, even when it holds no number
        ("The answer is 5. Then \\boxed{\\text{No solution}}", "5", None, "5", 1),
        # wrong everywhere
        ("The answer is 17.", "18", "17", "17", 0),
        ("no number at all", "3", None, None, 0),
    ],
)
def test_numeric_metric(completion, gold, declared, last, verdict):
    record = _score(completion, gold)
    assert (record["declared_answer"], record["last_number"]) == (declared, last)
    assert record["exact_match_numeric"] == verdict


def test_numbers_read_signs_and_thousands():
    assert answers.numbers("-5, 3-2, (-7), 1,234.5 and 1,23") == [
        Decimal(-5),
        Decimal(3),
        Decimal(2),
        Decimal(-7),
        Decimal("1234.5"),
        Decimal(1),
        Decimal(23),
    ]


def test_a_non_numeric_gold_is_a_clear_error():
    for gold in ("abc", "nan", "Infinity"):
        with pytest.raises(ValueError, match=f"'{gold}' is not a number"):
            answers.numeric_gold(f"#### {gold}")
    with pytest.raises(ValueError, match=r"doc openai__gsm8k/main/test#7, field 'answer'"):
        tasks_gsm8k.score_docs([["42"]], [{"doc_key": "openai__gsm8k/main/test#7"}])


def test_pathological_outputs_score_fast():
    nasty = [
        "x" * 1_000_000,  # OLMES's `(?s).*#### ` regex needs minutes on this
        "\\boxed{" * 50_000 + "1" + "}" * 50_000,
        "The answer is " * 50_000,
        "1," * 300_000,  # OLMES merges pairs: "11,11,...": its last number is 11
        "-" * 500_000 + "9" * 200_000,
    ]
    with time_limit(20):
        records = [_score(text, "1") for text in nasty]
    assert [(r["exact_match"], r["exact_match_numeric"]) for r in records] == [
        (0, 0),
        (1, 1),
        (0, 0),
        (0, 1),
        (0, 0),
    ]


# --- all real outputs -----------------------------------------------------------------------


def _by_source(rows):
    groups = defaultdict(list)
    for row in rows:
        groups[row["source"]].append(row)
    return groups


@requires_shared
def test_numeric_never_lower_on_a_correctly_signed_answer(gsm8k_docs):
    rows = read_jsonl(OUTPUTS / "gsm8k.jsonl")
    pairs = Counter()
    for row in rows:
        answer = gsm8k_docs[_row(row["key"])]["answer"]
        record = answers.score_gsm8k(row["completion"], answer)
        pairs[record["exact_match"], record["exact_match_numeric"]] += 1
        if record["exact_match"] and not record["exact_match_numeric"]:
            # only where OLMES dropped a sign: the output's final number is the gold negated
            assert Decimal(record["last_number"]) == -answers.numeric_gold(answer), row["id"]
    assert sum(pairs.values()) == 11900
    assert pairs[1, 0] == 15 and pairs[0, 1] == 511


@requires_shared
def test_real_outputs_end_to_end_through_lm_eval(mirror, gsm8k_docs, tmp_path):
    """Each of the 14 systems answers rows 0-849 once; one replay run in which row i gets the
    answer of system i mod 14 (60 or 61 rows each; the scorer sees all 11,900 outputs in
    test_numeric_never_lower_on_a_correctly_signed_answer)."""
    groups = _by_source(read_jsonl(OUTPUTS / "gsm8k.jsonl"))
    assert len(groups) == 14
    for source, rows in groups.items():
        assert sorted(_row(r["key"]) for r in rows) == list(range(850)), source
    systems = sorted(groups)
    rows = [
        row
        for n, source in enumerate(systems)
        for row in groups[source]
        if _row(row["key"]) % len(systems) == n
    ]
    assert len(rows) == 850
    file = tmp_path / "mixed.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = replay_eval([TASK], f"completions={file}", limit=850, log_samples=True)
    by_key = {r["key"]: r for r in rows}
    samples = out["samples"][TASK]
    assert len(samples) == 850
    for sample in samples:
        doc, row = sample["doc"], by_key[sample["doc"]["doc_key"]]
        expected = answers.score_gsm8k(row["completion"], doc["answer"])
        assert sample["filtered_resps"][0] == expected, (row["source"], doc["doc_key"])
        assert sample["exact_match"] == expected["exact_match"]
    results = out["results"][TASK]
    mean = sum(s["exact_match"] for s in samples) / 850
    assert results["exact_match,olmes"] == pytest.approx(mean)
    assert "exact_match_numeric,olmes" in results


@requires_shared
def test_output_is_cut_at_the_stop_strings(mirror, tmp_path):
    rows = [
        {
            "key": "openai__gsm8k/main/test#0",
            "completion": " 9 * 2 = 18. So the answer is 18.\n\nQuestion: what is 2 + 3?",
        },
        {"key": "openai__gsm8k/main/test#1", "completion": " It takes 3 bolts.</s>5"},
    ]
    file = tmp_path / "c.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = replay_eval([TASK], f"completions={file}", limit=2, log_samples=True)
    assert out["results"][TASK]["exact_match,olmes"] == 1.0
    # the filter cuts too, whatever a backend did
    records = tasks_gsm8k.score_docs([[rows[0]["completion"]]], [{"answer": "#### 18"}])
    assert records[0]["model_answer"] == "18"
