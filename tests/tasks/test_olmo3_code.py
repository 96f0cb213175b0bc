"""codex_humanevalplus_olmo3 and mbppplus_olmo3 (OLMES `olmo3:adapt`): OLMES-identical requests,
OLMES's program built from the code OLMES reads, the thinking switch on and off, pass@k."""

import hashlib
import json

import pytest

from evalpack.hooks import olmo3_code
from tests.conftest import (
    DATA_DIR,
    OLMES_REF,
    chat_requests,
    read_jsonl,
    requires_shared,
    task_manager,
)

TASKS = {
    "codex_humanevalplus_olmo3": "codex_humanevalplus::olmo3:adapt",
    "mbppplus_olmo3": "mbppplus::olmo3:adapt",
}
MBPP = "evalplus__mbppplus/default/test"


def mbpp_docs():
    return read_jsonl(DATA_DIR / f"{MBPP}.jsonl")


def fenced(code: str, thinking: str | None = None) -> str:
    """An answer ending as the prompt asks, after a reasoning block when `thinking` is given."""
    answer = f"Reasoning.\n\nHere is the completed function:\n\n```python\n{code}\n```"
    return answer if thinking is None else f"<think>{thinking}</think>\n{answer}"


@requires_shared
@pytest.mark.parametrize("task", TASKS)
def test_requests_identical_to_olmes(mirror, task):
    reference = [
        r for r in read_jsonl(OLMES_REF / "requests_dev_olmo3.jsonl") if r["task"] == TASKS[task]
    ]
    built = {inst.doc["doc_key"]: inst for inst in chat_requests(task)}
    assert len(reference) == 3 and len(built) == {"mbppplus_olmo3": 378}.get(task, 164)
    for ref in reference:
        context, gen_kwargs = built[ref["key"]].args
        messages = json.loads(context)
        assert messages == ref["messages"] and ref["assistant_prefix"] == ""
        canonical = json.dumps(messages, ensure_ascii=False, separators=(",", ":"))
        assert hashlib.sha256(canonical.encode()).hexdigest() == ref["sha256_messages"]
        olmes = ref["generation_kwargs"]
        assert gen_kwargs["until"] == ref["stop_sequences"] == []
        for key in ("max_gen_toks", "do_sample", "temperature", "top_p"):
            assert gen_kwargs[key] == olmes[key], key
        assert built[ref["key"]].repeats == ref["repeats"] == 10


@requires_shared
def test_metadata_sets_repeats_time_limit_and_the_thinking_switch(mirror):
    metadata = {"repeats": 3, "timeout": 5, "process_output": "r1_style"}
    tasks = task_manager(metadata).load(list(TASKS))["tasks"]
    for task in tasks.values():
        assert task.config.repeats == 3
        assert task.dataset["test"][0]["timeout"] == 5.0
        assert task.dataset["test"][0]["process_output"] == "r1_style"
    with pytest.raises(ValueError, match="process_output: 'r2' is not a thinking mode"):
        task_manager({"process_output": "r2"}).load(["mbppplus_olmo3"])


def humanevalplus_doc(row: int, process_output: str = "") -> dict:
    task = task_manager().load(["codex_humanevalplus_olmo3"])["tasks"]
    doc = dict(task["codex_humanevalplus_olmo3"].dataset["test"][row])
    return {**doc, "process_output": process_output}


@requires_shared
def test_the_thinking_switch_reads_the_code_after_the_reasoning(mirror):
    doc = humanevalplus_doc(0)
    good = doc["prompt"] + doc["canonical_solution"]
    wrong = "def has_close_elements(numbers, threshold):\n    return False"
    # the reasoning drafts a wrong function in the template's fence; the answer has the right one
    text = fenced(good, thinking="Draft:\n" + fenced(wrong) + "\nNo, that is wrong.")
    unfinished = "<think>" + fenced(good) + "\nand I keep thinking"
    resps = [[text, unfinished, fenced(good)]]
    off = olmo3_code.execute_humanevalplus(resps, [doc])[0]
    on = olmo3_code.execute_humanevalplus(resps, [{**doc, "process_output": "r1_style"}])[0]
    # off: OLMES reads the last template fence of the whole output, the correct one, all pass
    assert [s["passed"] for s in off] == [True, True, True]
    assert all("reasoning" not in s for s in off)
    # on: the reasoning is set aside (logged), the answer's code runs; an unfinished thinking
    # is all answer (OLMES scores it whole) and is counted
    assert [s["passed"] for s in on] == [True, True, True]
    assert on[0]["reasoning"].startswith("Draft:") and on[0]["thinking_finished"] is True
    assert on[1]["reasoning"] is None and on[1]["thinking_finished"] is False
    # with the switch on, an output without `</think>` never ended its thinking: two of three
    assert [s["thinking_finished"] for s in on] == [True, False, False]
    assert olmo3_code.process_humanevalplus(doc, [on])["thinking_unfinished"] == 2
    assert "thinking_unfinished" not in olmo3_code.process_humanevalplus(doc, [off])


@requires_shared
def test_only_the_answer_counts_with_the_switch_on(mirror):
    doc = humanevalplus_doc(0)
    good = doc["prompt"] + doc["canonical_solution"]
    wrong = "def has_close_elements(numbers, threshold):\n    return False"
    text = fenced(wrong, thinking="Draft:\n" + fenced(good))  # the right code only in thought
    off = olmo3_code.execute_humanevalplus([[text]], [doc])[0][0]
    on = olmo3_code.execute_humanevalplus([[text]], [{**doc, "process_output": "r1_style"}])[0]
    assert off["passed"] is False and off["code"].startswith("def has_close_elements(numbers, ")
    assert on[0]["passed"] is False and on[0]["code"] == wrong
    assert on[0]["reasoning"].startswith("Draft:")


def test_pass_at_k_format_and_unfinished_thinking_per_doc():
    samples = [
        {"passed": p, "answer_format_correct": f, "thinking_finished": t}
        for p, f, t in [(True, 1.0, True), (False, 0.2, False), (True, 0.0, True)] * 2
    ]
    scores = olmo3_code.process_mbppplus({}, [samples])
    assert scores["pass_at_1"] == pytest.approx(4 / 6)
    assert scores["pass_at_5"] == 1.0 and "pass_at_10" not in scores  # 6 samples: no pass@10
    assert scores["answer_format_correct"] == pytest.approx(1.2 / 3)
    assert scores["thinking_unfinished"] == 2
