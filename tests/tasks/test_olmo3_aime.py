"""aime24_olmo3 and aime25_olmo3: OLMES's AIME prompt and settings over the mirrored problems,
its per-sample reading (Final Answer line, boxed answer, `$...$`, sympy or string equality
against the answer without leading zeros), pass@k, and the thinking switch."""

import json

import pytest

from evalpack.hooks import olmo3_aime
from tests.conftest import chat_requests, replay_eval, requires_shared
from tests.tasks.conftest import replay_file

SUFFIX = "\n\nPresent the answer in LaTex format: \\boxed{Your answer}"


@requires_shared
@pytest.mark.parametrize("task, docs", [("aime24_olmo3", 30), ("aime25_olmo3", 30)])
def test_requests_are_olmes_aime_prompt_and_settings(module_mirror, task, docs):
    instances = chat_requests(task)
    assert len(instances) == docs  # lm-eval keeps one instance per doc, with its repeats
    for inst in instances:
        (message,) = json.loads(inst.args[0])
        assert message == {"role": "user", "content": inst.doc["problem"] + SUFFIX}
        kwargs = inst.args[1]
        assert kwargs["until"] == [] and kwargs["do_sample"] is True
        assert (kwargs["temperature"], kwargs["top_p"], kwargs["max_gen_toks"]) == (
            0.6,
            0.95,
            16384,
        )
        assert inst.repeats == 32


@pytest.mark.parametrize(
    "text, answer, exact, passed",
    [
        ("So \\boxed{25}.", "25", False, True),
        ("Final Answer: The final answer is $25$. I hope it is correct.", "25", True, True),
        # every candidate counts: the Final Answer line's (first) and the last box
        (
            "Final Answer: The final answer is 24. I hope it is correct. \\boxed{25}",
            "24",
            False,
            True,
        ),
        ("Final Answer: The final answer is 24. \\boxed{25}", "25", False, True),  # no such line
        ("it is $x$ and then $25$", "25", False, True),  # no box: between the last two $
        ("\\boxed{\\frac{50}{2}}", "\\frac{50}{2}", False, True),  # sympy: 50/2 = 25
        ("\\boxed{26}", "26", False, False),
        ("no answer at all", "noansweratall", False, False),  # the whole output, normalised
        ("", "", False, False),
    ],
)
def test_sample_verdict_is_olmes_aime_reading(text, answer, exact, passed):
    verdict = olmo3_aime.sample_verdict(text, "25")
    assert (verdict["answer"], verdict["exact"], verdict["passed"]) == (answer, exact, passed)


def test_gold_drops_leading_zeros():
    assert olmo3_aime.gold({"answer": "025"}) == "25" and olmo3_aime.gold({"answer": 204}) == "204"


def test_pass_at_k_over_the_samples():
    samples = ["\\boxed{25}"] * 2 + ["\\boxed{7}"] * 6
    (record,) = olmo3_aime.score_samples([samples], [{"answer": "25", "process_output": ""}])
    scores = olmo3_aime.process_results({}, [record])
    assert scores["pass_at_1"] == pytest.approx(2 / 8)
    assert scores["pass_at_4"] == pytest.approx(1 - (6 * 5 * 4 * 3) / (8 * 7 * 6 * 5))
    assert "pass_at_16" not in scores  # never reported above the number of samples
    assert (scores["exact_match"], scores["exact_match_flex"]) == (0.0, 1.0)
    assert "thinking_unfinished" not in scores


def test_the_switch_reads_after_the_reasoning_and_counts_unfinished_thinking():
    samples = ["<think>\\boxed{25}</think>so $7$", "<think>\\boxed{25}", "\\boxed{25}"]
    off, on = (
        olmo3_aime.score_samples([samples], [{"answer": "25", "process_output": switch}])[0]
        for switch in ("", "r1_style")
    )
    assert off["passed"] == [True, True, True]
    assert on["passed"] == [False, True, True]  # an unfinished thought is scored whole, as OLMES
    assert on["reasoning"] == ["\\boxed{25}", None, None]
    assert olmo3_aime.process_results({}, [on])["thinking_unfinished"] == 2


@requires_shared
def test_end_to_end_with_replay_and_fewer_samples(mirror, tmp_path):
    docs = [inst.doc for inst in chat_requests("aime24_olmo3", samples=[0, 1])]
    rows = [
        {"key": doc["doc_key"], "completion": text}
        for doc in docs
        for text in (f"\\boxed{{{olmo3_aime.gold(doc)}}}", "\\boxed{1000}")
    ]
    out = replay_eval(
        ["aime24_olmo3"],
        {"completions": replay_file(tmp_path, rows)},
        limit=2,
        metadata={"repeats": 2},
    )
    result = out["results"]["aime24_olmo3"]
    assert result["pass_at_1,samples"] == pytest.approx(0.5)
    assert result["exact_match_flex,samples"] == 1.0
    assert "pass_at_4,samples" not in result
