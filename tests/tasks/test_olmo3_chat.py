"""ifeval_olmo3 and alpaca_eval_v3_olmo3 (OLMES `olmo3:adapt`): OLMES-identical requests, the
Tulu 3 scorers on the answer after the reasoning with the thinking switch on (on the whole output
with it off), the reasoning logged beside the verdict, unfinished thinking counted; AlpacaEval 3's
judge model."""

import hashlib
import json

import pytest

from evalpack.scoring.ifeval import checkers
from evalpack.scoring.thinking import split_r1_style
from tests.conftest import (
    OLMES_REF,
    OUTPUTS,
    chat_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
)
from tests.models.judge_stub import JudgeStub
from tests.tasks.conftest import replay_file
from tests.tasks.test_alpaca_eval import DOCS, P_MODEL, by_hand
from tests.tasks.test_alpaca_eval import OUTPUTS as ALPACA_OUTPUTS

TASKS = {
    "ifeval_olmo3": "ifeval::olmo3:adapt",
    "alpaca_eval_v3_olmo3": "alpaca_eval_v3::olmo3:adapt",
}
ALPACA_KEY = "tatsu-lab__alpaca_eval/alpaca_eval_gpt4_baseline/eval#{}"
# reasoning that breaks IFEval's instructions (commas, upper case, many words) if it were scored
THINKING = "<think>\nHmm, LET me think, step by step, about THIS, carefully.\n</think>\n\n"


@requires_shared
@pytest.mark.parametrize("task", TASKS)
def test_requests_identical_to_olmes(mirror, task):
    reference = [
        r for r in read_jsonl(OLMES_REF / "requests_dev_olmo3.jsonl") if r["task"] == TASKS[task]
    ]
    built = {inst.doc["doc_key"]: inst for inst in chat_requests(task)}
    assert len(reference) == 3 and len(built) == {"ifeval_olmo3": 541}.get(task, 805)
    for ref in reference:
        context, gen_kwargs = built[ref["key"]].args
        messages = json.loads(context)
        assert messages == ref["messages"] and ref["assistant_prefix"] == ""
        canonical = json.dumps(messages, ensure_ascii=False, separators=(",", ":"))
        assert hashlib.sha256(canonical.encode()).hexdigest() == ref["sha256_messages"]
        assert gen_kwargs["until"] == ref["stop_sequences"] == []
        for key in ("max_gen_toks", "do_sample", "temperature", "top_p"):
            assert gen_kwargs[key] == ref["generation_kwargs"][key], key
        assert built[ref["key"]].repeats == ref["repeats"] == 1


def ifeval_run(tmp_path, rows, switch: bool):
    metadata = {"process_output": "r1_style"} if switch else None
    return replay_eval(
        ["ifeval_olmo3"],
        f"completions={replay_file(tmp_path, rows)}",
        limit=len(rows),
        metadata=metadata,
        log_samples=True,
    )


@requires_shared
def test_ifeval_scores_the_answer_after_the_thinking_when_switched_on(mirror, tmp_path):
    gpt4 = {r["key"]: r["completion"] for r in read_jsonl(OUTPUTS / "ifeval.jsonl")}
    keys = [f"google__IFEval/default/train#{i}" for i in range(12)]
    # docs 0-9 think first; docs 10 and 11 never close their thinking
    texts = [THINKING + gpt4[k] for k in keys[:10]] + ["<think>" + gpt4[k] for k in keys[10:]]
    rows = [{"key": k, "completion": t} for k, t in zip(keys, texts)]
    on, off = ifeval_run(tmp_path, rows, True), ifeval_run(tmp_path, rows, False)
    for out, switch in ((on, True), (off, False)):
        for sample in out["samples"]["ifeval_olmo3"]:
            text = sample["resps"][0][0]
            scored = split_r1_style(text).answer if switch else text
            expected = checkers.score_response(sample["doc"], scored)
            record = sample["filtered_resps"][0]
            assert (record["strict"], record["loose"]) == (expected["strict"], expected["loose"])
            if switch:
                assert record["reasoning"] == split_r1_style(text).reasoning
            else:
                assert "reasoning" not in record
    assert on["results"]["ifeval_olmo3"]["thinking_unfinished,olmes"] == 2
    assert "thinking_unfinished,olmes" not in off["results"]["ifeval_olmo3"]
    # the reasoning's commas and capitals cost the whole output instructions it follows
    level = "prompt_level_strict_acc,olmes"
    assert on["results"]["ifeval_olmo3"][level] > off["results"]["ifeval_olmo3"][level]


def test_alpaca_eval_v3_judges_the_answer_with_gpt_4_1(tmp_path, fixture_mirror):
    stub = JudgeStub(dict(zip(ALPACA_OUTPUTS, P_MODEL, strict=True))).start()
    try:
        rows = [
            {"key": ALPACA_KEY.format(i), "completion": f"<think>plan {i}</think>{output}"}
            for i, output in enumerate(ALPACA_OUTPUTS)
        ]
        out = replay_eval(
            ["alpaca_eval_v3_olmo3"],
            f"completions={replay_file(tmp_path, rows)}",
            metadata={
                "process_output": "r1_style",
                "judge_base_url": stub.base_url,
                "judge_cache": "",
            },
            log_samples=True,
        )
        payloads = stub.payloads()
    finally:
        stub.stop()
    assert len(payloads) == len(DOCS)
    assert {p["model"] for p in payloads} == {"gpt-4.1-2025-04-14"}
    scores = out["results"]["alpaca_eval_v3_olmo3"]
    for name, value in by_hand(P_MODEL).items():  # the stub prefers the answers, not the thoughts
        assert scores[f"{name},judge"] == pytest.approx(value), name
    assert scores["thinking_unfinished,judge"] == 0
    for sample in out["samples"]["alpaca_eval_v3_olmo3"]:
        record = sample["filtered_resps"][0]
        assert record["reasoning"] == f"plan {sample['doc_id']}"
        assert record["output_length"] == len(ALPACA_OUTPUTS[sample["doc_id"]])
