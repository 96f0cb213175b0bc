"""Rewards of the pack's `verifiers` environments against lm-eval, offline: real model outputs
scored as rewards equal the per-sample metrics lm-eval logs for the same completions replayed
through the `replay` model, pass@k over rollouts equals the pack's estimator; tasks without a
chat reward are left out with one line. Skipped when verifiers (the extra `evalpack[verifiers]`)
is missing. The rollouts against a real server: test_verifiers_env.py."""

import json

import pytest

from tests.conftest import OUTPUTS, read_jsonl, replay_eval, requires_shared
from tests.environments.conftest import requires_verifiers

pytestmark = [requires_verifiers, requires_shared]

# (task or group, subtask, reference outputs, docs, samples per doc): real model outputs
REFERENCE = {
    "gsm8k_tulu": ("gsm8k_tulu", "gsm8k", 4, 1),
    "minerva_math_tulu": ("minerva_math_tulu_prealgebra", "math", 4, 1),
    "bbh_cot_v1_tulu": ("bbh_cot_v1_tulu_date_understanding", "bbh", 4, 1),
    "ifeval_tulu": ("ifeval_tulu", "ifeval", 4, 1),
    "codex_humaneval_tulu": ("codex_humaneval_tulu", "humaneval", 3, 8),
    "math500": ("math500", "math500", 4, 1),  # a reasoning task: its reward is pass@1
}
# HumanEval problems whose 8 real samples pass and fail (pass@k then depends on k)
MIXED = {f"openai__openai_humaneval/default/test#{i}" for i in (54, 65, 70)}


def reference_samples(name, env_mirror):
    """Rows of docs that have `samples` real outputs each, and those outputs per doc."""
    from evalpack.environments.rows import build_rows

    subtask, outputs, docs, samples = REFERENCE[name]
    by_key = {}
    for row in read_jsonl(OUTPUTS / f"{outputs}.jsonl"):
        by_key.setdefault(row["key"], []).append(row["completion"])
    metadata = {"repeats": samples}
    rows = [
        row
        for row in build_rows(name, metadata, subtasks=[subtask])
        if len(by_key.get(row.doc_key, ())) >= samples and (samples == 1 or row.doc_key in MIXED)
    ][:docs]
    assert len(rows) == docs
    return rows, {row.doc_key: by_key[row.doc_key][:samples] for row in rows}, metadata


@pytest.mark.parametrize("name", list(REFERENCE))
def test_rewards_equal_the_per_sample_metrics_lm_eval_logs(name, env_mirror, tmp_path):
    """Real outputs scored as rewards, and the same outputs replayed through lm-eval: each
    reward is the sample's primary metric in lm-eval's log; pass@k over the rollouts is the
    pack's estimator over lm-eval's verdicts."""
    from evalpack.environments import scoring
    from evalpack.scoring.sampling_metrics import pass_at_k

    rows, outputs, metadata = reference_samples(name, env_mirror)
    pairs = [(row, text) for row in rows for text in outputs[row.doc_key]]
    scores = [scoring.score_samples([row], [text], metadata)[0] for row, text in pairs]
    rewards = [scoring.reward(row, s, metadata) for (row, _), s in zip(pairs, scores)]
    assert 0 < sum(rewards) < len(rewards)  # real outputs: some right, some wrong

    completions = tmp_path / "completions.jsonl"
    completions.write_text(
        "".join(json.dumps({"key": row.doc_key, "completion": text}) + "\n" for row, text in pairs)
    )
    task = rows[0].task
    logged = replay_eval(
        [task],
        {"completions": str(completions)},
        log_samples=True,
        samples={task: [row.doc_id for row in rows]},
        confirm_run_unsafe_code=True,
        metadata=metadata,
    )["samples"][task]
    chosen = scoring.primary(rows[0], metadata)
    logged = {s["doc_id"]: s for s in logged if s["filter"] == chosen.filter}
    samples = REFERENCE[name][3]
    if samples == 1:
        for (row, _), reward in zip(pairs, rewards):
            assert reward == float(logged[row.doc_id][chosen.metric])
        return
    rollouts = [
        scoring.Rollout(row.task, row.doc_key, reward, {})
        for (row, _), reward in zip(pairs, rewards)
    ]
    summary = scoring.summarize(rollouts, scoring.declared_ks(rows[0], metadata))[task]
    verdicts = {
        row.doc_id: [v["olmes"]["passed"] for v in logged[row.doc_id]["filtered_resps"][0]]
        for row in rows
    }
    for row, (first, last) in zip(
        rows, zip(range(0, len(pairs), samples), range(samples, len(pairs) + 1, samples))
    ):
        assert [r > 0 for r in rewards[first:last]] == verdicts[row.doc_id]
    for k in (1, 2, 4, 8):
        expected = sum(pass_at_k(samples, sum(v), k) for v in verdicts.values()) / len(rows)
        assert summary[f"pass@{k}"] == pytest.approx(expected, abs=1e-12)
    assert summary["pass@1"] == pytest.approx(
        sum(float(s["pass_at_1"]) for s in logged.values()) / len(rows), abs=1e-12
    )
    assert "pass@10" not in summary  # 8 rollouts per doc: pass@10 is undefined, not 1.0


@pytest.mark.parametrize(
    "name, reason",
    [
        ("truthfulqa_tulu", "token log-probabilities"),
        ("math500_minerva_base", "base-model task"),
        ("alpaca_eval_v2_tulu", "not a mean of per-sample scores"),
    ],
)
def test_tasks_without_a_chat_reward_are_left_out_with_one_line(
    name, reason, env_mirror, monkeypatch
):
    from evalpack.environments.rows import NotAChatTask
    from evalpack.environments.taskset import load_environment
    from tests.conftest import REPO

    if name.startswith("alpaca"):  # its rows are fixtures (the mirror has none)
        monkeypatch.setenv("EVALPACK_DATA_DIR", str(REPO / "tests" / "fixtures" / "data"))

    with pytest.raises(NotAChatTask, match=reason):
        list(load_environment(name, limit=1).taskset)
