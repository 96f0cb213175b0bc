"""The `olmo3:adapt` tasks as `verifiers` environments: HumanEval+, MBPP+ and IFEval build, each
rollout sends OLMES's messages and sampling settings (a "do not cut off" budget as 32,768
tokens), the pass@k the tasks declare is summarized, rewards follow the thinking switch;
AlpacaEval 3 is left out (a judged win rate, not a per-sample score). Skipped without
verifiers (the extra `evalpack[verifiers]`)."""

import pytest

from tests.conftest import DATA_DIR, OLMES_REF, REPO, read_jsonl, requires_shared
from tests.environments.conftest import requires_verifiers

pytestmark = [requires_verifiers, requires_shared]

OLMES = {
    "codex_humanevalplus_olmo3": "codex_humanevalplus::olmo3:adapt",
    "mbppplus_olmo3": "mbppplus::olmo3:adapt",
    "ifeval_olmo3": "ifeval::olmo3:adapt",
}
KS = {"codex_humanevalplus_olmo3": [1, 10], "mbppplus_olmo3": [1, 5, 10], "ifeval_olmo3": []}


@pytest.mark.parametrize("task", OLMES)
def test_rollouts_send_olmes_requests(task, env_mirror):
    from evalpack.environments.taskset import chat_request, load_environment

    reference = {
        r["key"]: r
        for r in read_jsonl(OLMES_REF / "requests_dev_olmo3.jsonl")
        if r["task"] == OLMES[task]
    }
    rows = [t.data for t in load_environment(task, limit=3).taskset]
    assert [row.doc_key for row in rows] == list(reference)
    for row in rows:
        body = chat_request(row, "m", "vllm")
        assert body["messages"] == reference[row.doc_key]["messages"]
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.6, 0.95, 32768)
        assert "stop" not in body and "continue_final_message" not in body
        assert row.repeats == reference[row.doc_key]["repeats"] and row.ks == KS[task]


def mbpp_row(metadata):
    from evalpack.environments.rows import build_rows

    (row,) = build_rows("mbppplus_olmo3", metadata, limit=1)
    return row


def fenced(code: str) -> str:
    return f"Here is the completed function:\n\n```python\n{code}\n```"


def test_rewards_follow_the_thinking_switch(env_mirror):
    from evalpack.environments import scoring

    solution = read_jsonl(DATA_DIR / "evalplus__mbppplus/default/test.jsonl")[0]["code"].strip()
    wrong = "def similar_elements(a, b):\n    return ()"
    thought_right = f"<think>{fenced(solution)}</think>{fenced(wrong)}"
    texts = [fenced(solution), fenced(wrong), thought_right]
    rewards = {}
    for switch, metadata in (("off", {}), ("on", {"process_output": "r1_style"})):
        row = mbpp_row(metadata)
        scores = scoring.score_samples([row] * 3, texts, metadata)
        rewards[switch] = [scoring.reward(row, s, metadata) for s in scores]
    # off: the last template fence of the whole output is run (the wrong one in the answer);
    # on: the same, read after the reasoning
    assert rewards["off"] == [1.0, 0.0, 0.0] and rewards["on"] == [1.0, 0.0, 0.0]
    reasoning_only = f"<think>{fenced(solution)}</think>no code"
    off = scoring.score_samples([mbpp_row({})], [reasoning_only], {})[0]
    on_meta = {"process_output": "r1_style"}
    on = scoring.score_samples([mbpp_row(on_meta)], [reasoning_only], on_meta)[0]
    assert scoring.reward(mbpp_row({}), off, {}) == 1.0  # OLMES reads the thought's fence
    assert scoring.reward(mbpp_row(on_meta), on, on_meta) == 0.0  # only the answer counts


def test_alpaca_eval_v3_has_no_environment(env_mirror, monkeypatch):
    from evalpack.environments.rows import NotAChatTask
    from evalpack.environments.taskset import load_environment

    monkeypatch.setenv("EVALPACK_DATA_DIR", str(REPO / "tests" / "fixtures" / "data"))
    with pytest.raises(NotAChatTask, match="not a mean of per-sample scores"):
        list(load_environment("alpaca_eval_v3_olmo3", limit=1).taskset)
