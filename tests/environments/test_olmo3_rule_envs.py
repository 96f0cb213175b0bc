"""The rule-scored `olmo3:adapt` tasks as `verifiers` environments: a rollout's reward and sample
metrics are OLMES's verdicts, with the thinking switch off (as OLMES scored them) and on (the
verdict of what follows the reasoning), through the environment's own rows and scorers.

OLMES's verdicts: every row of `scores_dev_olmo3.jsonl` (MMLU, BBH, AGIEval, MATH, GSM8K); for
IFEval, OLMES's `ifeval::tulu` verdicts on real outputs (`ifeval::olmo3:adapt` has the same
metric settings at 5a51f50; only sampling differs); for IFBench, the authors' verdicts (OLMES
runs their checkers); for GPQA (gated: only letters and numbers are ever compared or printed),
the MMLU rows without GPQA's exact phrase, which OLMES reads with the same templates and answer
regexes. AIME has no OLMES verdicts here (its data differs): the reading is checked on the real
problems' answers. Skipped without verifiers (the extra `evalpack[verifiers]`)."""

import re

import pytest

from evalpack.scoring.thinking import split_r1_style
from tests.conftest import OLMES_REF, OUTPUTS, SHARED, read_jsonl, requires_shared
from tests.environments.conftest import requires_verifiers
from tests.tasks.test_gpqa import gpqa_dir  # noqa: F401 (GPQA unpacked to scratch)
from tests.tasks.test_olmo3_rules import our_task

pytestmark = [requires_verifiers, requires_shared]

ON = {"process_output": "r1_style"}
GROUPS = {  # OLMES spec prefix -> (the pack's group, OLMES's primary metric)
    "mmlu_": ("mmlu_cot_olmo3", "exact_match"),
    "bbh_": ("bbh_cot_olmo3", "exact_match"),
    "agi_eval_": ("agi_eval_english_olmo3", "exact_match"),
    "minerva_math_": ("minerva_math_olmo3", "exact_match_flex"),
    "gsm8k": ("gsm8k_olmo3", "exact_match_flex"),
}
COMPARED = ("exact_match", "exact_match_simple", "exact_match_flex", "answer_format_correct")


def group_of(spec: str) -> tuple[str, str]:
    return next(group for prefix, group in GROUPS.items() if spec.startswith(prefix))


def env_data(task, metadata, limit, subtasks=None) -> dict:
    """(subtask, doc key) -> the environment's task data, as `load_environment` builds them."""
    from evalpack.environments.taskset import load_environment

    env = load_environment(task, subtasks=subtasks, limit=limit, metadata=metadata)
    return {(t.data.task, t.data.doc_key): t.data for t in env.taskset}


def scored(datas, texts, metadata) -> list[tuple[float, dict]]:
    """(reward, scores) per rollout, as the environment's reward computes them."""
    from evalpack.environments import scoring

    rows = [data.row() for data in datas]
    scores = scoring.score_samples(rows, texts, metadata)
    return [(scoring.reward(row, s, metadata), s) for row, s in zip(rows, scores)]


def metric(scores: dict, name: str):
    """A metric of a sample's scores, whichever filter the task names (one per task here)."""
    (value,) = [v for k, v in scores.items() if k.split(",")[0] == name]
    return value


@pytest.fixture(scope="module")
def score_rows():
    rows = read_jsonl(OLMES_REF / "scores_dev_olmo3.jsonl")
    assert len(rows) == 148 and all(our_task(r["task"]) for r in rows)
    return rows


@pytest.fixture(scope="module")
def rule_envs(env_mirror, score_rows):
    """switch -> (subtask, doc key) -> task data, for the docs of every score row."""
    envs = {}
    for switch, metadata in (("off", None), ("on", ON)):
        envs[switch] = {}
        for group, _ in GROUPS.values():
            mine = [r for r in score_rows if group_of(r["task"])[0] == group]
            subtasks = sorted({our_task(r["task"]) for r in mine})
            limit = 1 + max(int(r["key"].rsplit("#", 1)[1]) for r in mine)
            envs[switch].update(env_data(group, metadata, limit, subtasks))
    return envs


def rollouts(envs, rows, texts, switch):
    datas = [envs[switch][(our_task(r["task"]), r["key"])] for r in rows]
    return scored(datas, texts, ON if switch == "on" else None)


def test_rewards_are_olmes_verdicts_with_the_switch_off(rule_envs, score_rows):
    results = rollouts(rule_envs, score_rows, [r["completion"] for r in score_rows], "off")
    mismatches, compared = [], 0
    for row, (reward, scores) in zip(score_rows, results):
        expected = {m: row[m] for m in COMPARED if m in row}
        got = {m: metric(scores, m) for m in expected}
        compared += len(got)
        if got != expected or reward != row[group_of(row["task"])[1]]:
            mismatches.append((row["id"], reward, got, expected))
        assert not any(k.startswith("thinking_unfinished") for k in scores)
    assert mismatches == []
    assert compared == 72 * 3 + 36 * 2 + 27 * 2 + 13 * 3  # every OLMES metric of every row


def test_rewards_with_the_switch_on_are_olmes_verdicts_of_the_answer(rule_envs, score_rows):
    """On: each rollout is rewarded as OLMES's verdict (switch off, checked above) on the text
    after the reasoning; an output without `</think>` counts as unfinished thinking."""
    texts = [r["completion"] for r in score_rows]
    on = rollouts(rule_envs, score_rows, texts, "on")
    answers = [split_r1_style(t).answer for t in texts]
    off_on_answers = rollouts(rule_envs, score_rows, answers, "off")
    changed = 0
    for row, text, (reward, scores), (answer_reward, answer_scores) in zip(
        score_rows, texts, on, off_on_answers
    ):
        assert reward == answer_reward, row["id"]
        assert all(metric(scores, m) == metric(answer_scores, m) for m in COMPARED if m in row)
        assert metric(scores, "thinking_unfinished") == int("</think>" not in text), row["id"]
        if answers[score_rows.index(row)] == text:
            assert reward == row[group_of(row["task"])[1]], row["id"]
        changed += reward != row[group_of(row["task"])[1]]
    assert changed == 7  # the think_* rows whose reasoning held another answer


IFEVAL_PROMPT_METRICS = ("prompt_level_strict_acc", "prompt_level_loose_acc")
THOUGHT = "Let me plan, Carefully, WITH COMMAS, in capitals, no title: done. P.S. none"


@pytest.fixture(scope="module")
def ifeval_cases(env_mirror):
    """OLMES's verdicts on real IFEval outputs, the output, and the doc's data per switch."""
    verdicts = read_jsonl(OLMES_REF / "scores_dev_ifeval.jsonl")
    outputs = {r["id"]: r["completion"] for r in read_jsonl(OUTPUTS / "ifeval.jsonl")}
    datas = {
        switch: env_data("ifeval_olmo3", metadata, None)
        for switch, metadata in (("off", None), ("on", ON))
    }
    return [
        (v, outputs[v["id"]], {s: d[("ifeval_olmo3", v["key"])] for s, d in datas.items()})
        for v in verdicts
    ]


def test_ifeval_rewards_are_olmes_verdicts_with_the_switch_off_and_on(ifeval_cases):
    assert len(ifeval_cases) == 122
    off = scored([c[2]["off"] for c in ifeval_cases], [c[1] for c in ifeval_cases], None)
    # on: the same output after a reasoning that breaks most instructions if it were scored
    thought = [f"<think>{THOUGHT}</think>{c[1]}" for c in ifeval_cases]
    on = scored([c[2]["on"] for c in ifeval_cases], thought, ON)
    plain_thought = scored([c[2]["off"] for c in ifeval_cases], thought, None)
    for (verdict, _, _), (reward, scores), (reward_on, scores_on) in zip(ifeval_cases, off, on):
        expected = [float(verdict["prompt_level_strict"]), float(verdict["prompt_level_loose"])]
        assert [metric(scores, m) for m in IFEVAL_PROMPT_METRICS] == expected, verdict["id"]
        assert metric(scores, "inst_level_loose_acc") == verdict["inst_level_loose"]
        assert reward == reward_on == float(verdict["prompt_level_loose"]), verdict["id"]
        assert metric(scores_on, "thinking_unfinished") == 0
    # off, the reasoning is judged with the answer: some verdicts fall
    assert sum(r for r, _ in plain_thought) < sum(r for r, _ in off)


IFBENCH = SHARED / "reference" / "ifbench"


def test_ifbench_rewards_are_the_authors_verdicts_with_the_switch_off_and_on(env_mirror):
    rows = {
        r["key"]: r for r in read_jsonl(SHARED / "data/allenai__IFBench_test/default/train.jsonl")
    }
    completions = {r["id"]: r["completion"] for r in read_jsonl(IFBENCH / "completions_dev.jsonl")}
    verdicts = read_jsonl(IFBENCH / "verdicts_dev.jsonl")[:80]
    datas = {
        switch: {d.doc["key"]: d for d in env_data("ifbench_olmo3", metadata, None).values()}
        for switch, metadata in (("off", None), ("on", ON))
    }
    texts = [completions[v["id"]] for v in verdicts]
    off = scored([datas["off"][v["key"]] for v in verdicts], texts, None)
    thought = [f"<think>{THOUGHT}</think>{t}" for t in texts]
    on = scored([datas["on"][v["key"]] for v in verdicts], thought, ON)
    assert {v["key"] for v in verdicts} <= set(rows)
    for verdict, (reward, scores), (reward_on, scores_on) in zip(verdicts, off, on):
        assert metric(scores, "inst_level_strict_acc") == verdict["strict"], verdict["id"]
        assert metric(scores, "inst_level_loose_acc") == verdict["loose"], verdict["id"]
        assert reward == reward_on == float(all(verdict["loose"])), verdict["id"]
        assert metric(scores_on, "thinking_unfinished") == 0
    assert 0 < sum(r for r, _ in off) < len(off)


@pytest.mark.parametrize("task", ["aime24_olmo3", "aime25_olmo3"])
def test_aime_rewards_read_the_answer_after_the_reasoning(env_mirror, task):
    """OLMES's AIME reading (any candidate: the Final Answer line, the last box, ...) on each
    real problem's answer, off and on: shapes whose reasoning and answer disagree."""
    datas = {s: list(env_data(task, m, 3).values()) for s, m in (("off", None), ("on", ON))}
    shapes = {  # text -> (reward off, reward on)
        "So \\boxed{{{gold}}}.": (1.0, 1.0),
        "<think>It is \\boxed{{{gold}}}.</think>The answer is \\boxed{{{wrong}}}.": (0.0, 0.0),
        "<think>Maybe \\boxed{{{wrong}}}.</think>The answer is \\boxed{{{gold}}}.": (1.0, 1.0),
        "<think>It is \\boxed{{{gold}}}.</think>I am not sure.": (1.0, 0.0),
        "<think>Still working: \\boxed{{{gold}}}": (1.0, 1.0),  # unfinished: scored whole
    }
    for off_data, on_data in zip(datas["off"], datas["on"]):
        gold = str(int(off_data.doc["answer"]))
        texts = [s.format(gold=gold, wrong=int(gold) + 1) for s in shapes]
        off = scored([off_data] * len(texts), texts, None)
        on = scored([on_data] * len(texts), texts, ON)
        assert [(a, b) for (a, _), (b, _) in zip(off, on)] == list(shapes.values())
        assert [metric(s, "thinking_unfinished") for _, s in on] == [1, 0, 0, 0, 1]


GPQA_PHRASE = re.compile(r"Therefore, the answer is \(([A-D])\)")  # GPQA's answer_format_regex


def gpqa_verdicts(gold_letters, texts, switch) -> list[tuple[float, float]]:
    """(reward, answer_format_correct) of each text scored against a GPQA doc whose gold is the
    given letter. Only numbers leave: a failure is reported without its traceback, whose frames
    would show the docs."""
    metadata = ON if switch == "on" else None
    try:
        by_label = {}
        for data in env_data("gpqa_cot_olmo3", metadata, 12).values():
            by_label.setdefault(data.doc["label"], data)
        results = scored([by_label[g] for g in gold_letters], texts, metadata)
        return [(reward, metric(s, "answer_format_correct")) for reward, s in results]
    except Exception as exc:  # noqa: BLE001 (re-raised without the frames that hold GPQA text)
        raise AssertionError(f"scoring GPQA failed ({type(exc).__name__})") from None


def test_gpqa_rewards_are_olmes_verdicts_of_its_cascade(gpqa_dir, score_rows):  # noqa: F811
    """GPQA olmo3 reads the last exact phrase, else OLMES's olmo3 templates and letter regex,
    as MMLU olmo3 does: MMLU's rows without the phrase get OLMES's MMLU verdicts when scored
    against a GPQA doc with the same gold letter."""
    rows = [
        r
        for r in score_rows
        if r["task"].startswith("mmlu_") and not GPQA_PHRASE.search(r["completion"])
    ]
    assert len(rows) == 34
    golds, texts = [r["gold"] for r in rows], [r["completion"] for r in rows]
    off = gpqa_verdicts(golds, texts, "off")
    assert off == [(r["exact_match"], r["answer_format_correct"]) for r in rows]
    # on: OLMES's verdict (as off) on the text after the reasoning
    on = gpqa_verdicts(golds, texts, "on")
    assert on == gpqa_verdicts(golds, [split_r1_style(t).answer for t in texts], "off")
    assert on != off  # a reasoning held another answer
