"""codex_humaneval_tulu: OLMES-identical prompt, extraction, stop strings, pass@k end to end."""

import json

import pytest

from evalpack.hooks import humaneval as tasks_code
from evalpack.hooks.humaneval import STOP_STRINGS, extract_program
from tests.conftest import (
    OUTPUTS,
    chat_requests,
    olmes_requests,
    read_jsonl,
    replay_eval,
    requires_shared,
    task_manager,
)

PROMPT_WITH_IMPORTS = (
    "from typing import List\n\n\ndef helper(x):\n    return x\n\n\n"
    'def add(a: int, b: int) -> int:\n    """Add two numbers."""\n'
)
PROMPT_PLAIN = 'def add(a: int, b: int) -> int:\n    """Add two numbers."""\n'
PREAMBLE = "from typing import List\n\n\ndef helper(x):\n    return x\n\n\n"
FULL_DEF = "def add(a: int, b: int) -> int:\n    return a + b\n"


@pytest.mark.parametrize("prompt, preamble", [(PROMPT_WITH_IMPORTS, PREAMBLE), (PROMPT_PLAIN, "")])
def test_fenced_block_with_the_whole_function(prompt, preamble):
    completion = "Sure! Here it is:\n```python\n" + FULL_DEF + "```\nIt adds."
    assert extract_program(prompt, completion, "add") == preamble + FULL_DEF


@pytest.mark.parametrize("prompt, preamble", [(PROMPT_WITH_IMPORTS, PREAMBLE), (PROMPT_PLAIN, "")])
def test_rewritten_function_gets_only_the_preamble(prompt, preamble):
    assert extract_program(prompt, FULL_DEF, "add") == preamble + FULL_DEF


@pytest.mark.parametrize("prompt, preamble", [(PROMPT_WITH_IMPORTS, PREAMBLE), (PROMPT_PLAIN, "")])
def test_explanation_then_code(prompt, preamble):
    completion = "We return the sum of both.\n\nimport math\n" + FULL_DEF
    assert extract_program(prompt, completion, "add") == preamble + "import math\n" + FULL_DEF


def test_a_body_continues_the_prompt():
    body = "    return a + b\n"
    assert extract_program(PROMPT_WITH_IMPORTS, body, "add") == PROMPT_WITH_IMPORTS + body
    fenced_body = "```python\n    return a + b\n```"
    assert extract_program(PROMPT_PLAIN, fenced_body, "add") == PROMPT_PLAIN + "    return a + b\n"


def test_a_helper_with_a_similar_name_is_not_the_target():
    code = "def add_all(xs):\n    return sum(xs)\n"
    assert extract_program(PROMPT_PLAIN, code, "add") == PROMPT_PLAIN + code


def test_stop_strings_are_cut_at_the_earliest():
    from evalpack.core.text import cut_at_stops

    text = "    return a + b\n\nif __name__ == '__main__':\n    print(add(1, 2))\n# done"
    assert cut_at_stops(text, STOP_STRINGS) == "    return a + b\n"
    assert cut_at_stops("    x = 1\n```\nmore", STOP_STRINGS) == "    x = 1"


@requires_shared
def test_messages_and_prefix_identical_to_olmes(mirror):
    reference = olmes_requests("codex_humaneval::tulu")
    built = {inst.doc["doc_key"]: inst for inst in chat_requests("codex_humaneval_tulu")}
    assert len(reference) == 40
    for ref in reference:
        inst = built[ref["key"]]
        context, gen_kwargs = inst.args
        messages = json.loads(context)
        # lm-eval passes the assistant prefix as a final assistant message to continue
        assert messages[:-1] == ref["messages"]
        assert messages[-1] == {"role": "assistant", "content": ref["assistant_prefix"]}
        assert gen_kwargs["until"] == ref["stop_sequences"]
        assert gen_kwargs["temperature"] == 0.8 and gen_kwargs["top_p"] == 0.95
        assert gen_kwargs["do_sample"] is True
        assert inst.repeats == ref["repeats"] == 20


def test_process_results_pass_at_k_and_missing_k():
    def sample(passed):
        return {"olmes": {"passed": passed}, "extracted": {"passed": True}}

    samples = [sample(i < 3) for i in range(20)]  # 3 of 20 pass
    scores = tasks_code.process_results({}, [samples])
    assert scores["pass_at_1"] == pytest.approx(3 / 20)
    assert scores["pass_at_10"] == pytest.approx(1 - 19448 / 184756)  # 1 - C(17,10)/C(20,10)
    assert scores["pass_at_1_extracted"] == 1.0
    few = tasks_code.process_results({}, [[sample(True)] * 5])
    assert few["pass_at_1"] == 1.0 and "pass_at_10" not in few


def _completions_file(tmp_path, rows):
    file = tmp_path / "completions.jsonl"
    file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return file


@requires_shared
def test_reference_solutions_pass_at_one_and_ten(mirror):
    out = replay_eval(
        ["codex_humaneval_tulu"], "from_doc={canonical_solution}", confirm_run_unsafe_code=True
    )
    results = out["results"]["codex_humaneval_tulu"]
    assert results["pass_at_1,execution"] == 1.0
    assert results["pass_at_10,execution"] == 1.0


@requires_shared
def test_known_passing_and_failing_samples_give_hand_computed_pass_at_k(mirror, tmp_path):
    docs = read_jsonl(mirror / "openai__openai_humaneval/default/test.jsonl")[:2]
    rows = []
    for row, doc in enumerate(docs):
        key = f"openai__openai_humaneval/default/test#{row}"
        good, bad = doc["canonical_solution"], "    return None\n"
        # doc 0: 3 of 12 pass; doc 1: 0 of 12 pass (one loops forever, one exits 0)
        samples = (
            [good] * 3 + [bad] * 9
            if row == 0
            else (
                ["    while True:\n        pass\n", "    import os\n    os._exit(0)\n"] + [bad] * 10
            )
        )
        rows += [{"key": key, "completion": s} for s in samples]
    out = replay_eval(
        ["codex_humaneval_tulu"],
        f"completions={_completions_file(tmp_path, rows)}",
        confirm_run_unsafe_code=True,
        limit=2,
        log_samples=True,
        metadata={"repeats": 12, "timeout": 1.0},
    )
    results = out["results"]["codex_humaneval_tulu"]
    assert results["pass_at_1,execution"] == pytest.approx((3 / 12 + 0) / 2)
    # pass@10 for doc 0: 1 - C(9,10)/C(12,10) = 1 (fewer than 10 failures)
    assert results["pass_at_10,execution"] == pytest.approx((1.0 + 0) / 2)
    outcomes = [
        s["outcome"]
        for s in (
            x["olmes"] for x in out["samples"]["codex_humaneval_tulu"][1]["filtered_resps"][0]
        )
    ]
    assert outcomes[0] == "timeout" and outcomes[1] != "passed"
    assert all(o == "failed" for o in outcomes[2:])


@requires_shared
def test_real_completions_run_end_to_end(mirror, tmp_path):
    rows = read_jsonl(OUTPUTS / "humaneval.jsonl")
    out = replay_eval(
        ["codex_humaneval_tulu"],
        f"completions={OUTPUTS / 'humaneval.jsonl'},missing=empty",
        confirm_run_unsafe_code=True,
        log_samples=True,
        metadata={"repeats": 3},
    )
    results = out["results"]["codex_humaneval_tulu"]
    assert len(rows) == 1242
    assert results["pass_at_1,execution"] > 0.3
    records = [r for s in out["samples"]["codex_humaneval_tulu"] for r in s["filtered_resps"][0]]
    assert len(records) == 164 * 3
    # OLMES's program (prompt + completion) mishandles full-function answers less often than
    # it helps them; extraction can only add passes on this set. Compared over the samples
    # whose runs are far from the time limit (one near it may flip under load).
    steady = [
        r
        for r in records
        if not any(
            run["outcome"] in ("timeout", "killed") or (run["cpu_seconds"] or 0) > 1.0
            for run in (r["olmes"], r["extracted"])
        )
    ]
    assert len(steady) > 0.9 * len(records)
    assert sum(r["extracted"]["passed"] for r in steady) >= sum(
        r["olmes"]["passed"] for r in steady
    )
    assert {r["olmes"]["outcome"] for r in records} <= {
        "passed",
        "failed",
        "timeout",
        "error",
        "killed",
    }


def test_metadata_repeats_reach_the_sampled_task_only(mirror):
    tasks = task_manager({"repeats": 7}).load(
        ["codex_humaneval_tulu", "codex_humaneval_tulu_greedy"]
    )["tasks"]
    assert tasks["codex_humaneval_tulu"].config.repeats == 7
    assert tasks["codex_humaneval_tulu_greedy"].config.repeats == 1
