"""Reward speed of the `verifiers` environments (`evalpack.environments`) per task family, beside
the lm-eval path's scoring of the same completions: real outputs from
../shared/reference/outputs, scored

* as rewards: one completion at a time, as a rollout's reward is computed
  (`scoring.score_samples([row], [completion])` + `scoring.reward`: the task's filters and
  `process_results` on that one response; code through the sandbox, one job per call);
* as concurrent rollouts' rewards are computed: all at once through the environment's
  `batching.RewardBatcher` (samples arriving together are scored together);
* as lm-eval scores them: every completion of a subtask through its filters in one batch, then
  `process_results` per doc (`scoring.score_samples(rows, completions)`, what lm-eval's
  evaluator runs after a `replay` model answered).

Both give the same numbers (checked here); no model, no HTTP (the rollouts' own cost is the
server's). It times the scoring the environment calls and does not import verifiers.

    EVALPACK_DATA_DIR=../shared/data .venv/bin/python benchmarks/score_environments.py [N]
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from evalpack.core import data
from evalpack.environments import batching, scoring
from evalpack.environments.rows import build_rows

SHARED = Path(__file__).resolve().parents[2] / "shared"
# family: (task or group, reference outputs file)
FAMILIES = {
    "gsm8k": ("gsm8k_tulu", "gsm8k"),
    "minerva_math": ("minerva_math_tulu", "math"),
    "bbh": ("bbh_cot_v1_tulu", "bbh"),
    "ifeval": ("ifeval_tulu", "ifeval"),
    "humaneval": ("codex_humaneval_tulu", "humaneval"),
}


def samples(name: str, outputs: str, limit: int) -> list[tuple]:
    """(row, completion) for the first `limit` real outputs whose doc the task has."""
    rows = {row.doc_key: row for row in build_rows(name, {"repeats": 1})}
    found = []
    for output in data.read_jsonl(SHARED / "reference" / "outputs" / f"{outputs}.jsonl"):
        if output["key"] in rows:
            found.append((rows[output["key"]], output["completion"]))
        if len(found) == limit:
            break
    return found


async def together(pairs: list[tuple], metadata: dict) -> list[dict]:
    """Every sample's scores as concurrent rollouts get them (one batcher, all at once)."""
    batcher = batching.RewardBatcher()
    return await asyncio.gather(*(batcher.score(row, text, metadata) for row, text in pairs))


def time_family(name: str, outputs: str, limit: int) -> str:
    pairs = samples(name, outputs, limit)
    metadata = {"repeats": 1}
    start = time.perf_counter()
    rewards = [
        scoring.reward(row, scoring.score_samples([row], [text], metadata)[0], metadata)
        for row, text in pairs
    ]
    one_by_one = time.perf_counter() - start
    start = time.perf_counter()
    concurrent = asyncio.run(together(pairs, metadata))
    together_s = time.perf_counter() - start
    start = time.perf_counter()
    batch = scoring.score_samples([row for row, _ in pairs], [text for _, text in pairs], metadata)
    batched = time.perf_counter() - start
    same = (
        rewards
        == [scoring.reward(row, s, metadata) for (row, _), s in zip(pairs, batch)]
        == [scoring.reward(row, s, metadata) for (row, _), s in zip(pairs, concurrent)]
    )
    return (
        f"{name}: {len(pairs)} completions, mean reward {sum(rewards) / len(pairs):.3f}; "
        f"rewards one at a time {len(pairs) / one_by_one:,.0f}/s ({one_by_one:.2f} s), "
        f"of concurrent rollouts {len(pairs) / together_s:,.0f}/s ({together_s:.2f} s) vs "
        f"lm-eval's batch scoring {len(pairs) / batched:,.0f}/s ({batched:.2f} s); "
        f"same values: {same}"
    )


def main() -> None:
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    for name, outputs in FAMILIES.values():
        print(time_family(name, outputs, limit), flush=True)


if __name__ == "__main__":
    main()
