"""Per-subtask results of a `vf-eval` run of an evalpack environment, from its `traces.jsonl`:
the mean reward and metrics and the pack's pass@k over each doc's rollouts.

    python -m evalpack.environments.summary outputs/<run>     # prints JSON, one entry per subtask

A rollout that failed (server error, timeout) is not a score: it is counted under `errored`
and left out of the means, never scored as a wrong answer. Reads JSON only (no verifiers).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from ..core.data import read_jsonl
from .scoring import Rollout, summarize

REWARD = "primary_metric"  # the reward the evalpack taskset records


def traces_file(path: Path) -> Path:
    return path / "traces.jsonl" if path.is_dir() else path


def rollouts(episodes: list[dict]) -> tuple[list[Rollout], Counter, set[int]]:
    """The scored rollouts, the failed ones per subtask, and the ks the tasks declare."""
    scored, errored, ks = [], Counter(), set()
    for episode in episodes:
        data = episode["task"]["data"]
        ks.update(data.get("ks") or ())
        for trace in episode["traces"]:
            if not (episode["ok"] and trace["ok"]) or REWARD not in trace["rewards"]:
                errored[data["task"]] += 1
                continue
            scored.append(
                Rollout(
                    data["task"],
                    data["doc_key"],
                    float(trace["rewards"][REWARD]["score"]),
                    {k: float(v) for k, v in trace["metrics"].items()},
                )
            )
    return scored, errored, ks


def summarize_run(path: str | Path) -> dict[str, dict[str, float]]:
    file = traces_file(Path(path))
    if not file.is_file():
        raise FileNotFoundError(f"no traces.jsonl at {file} (give a vf-eval run directory)")
    scored, errored, ks = rollouts(read_jsonl(str(file)))
    summary = summarize(scored, ks)
    for task, count in errored.items():
        summary.setdefault(task, {})["errored"] = float(count)
    return summary


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m evalpack.environments.summary <vf-eval run dir | traces.jsonl>",
            file=sys.stderr,
        )
        return 2
    try:
        print(json.dumps(summarize_run(args[0]), indent=2, sort_keys=True))
    except (FileNotFoundError, KeyError, ValueError) as error:
        print(f"evalpack.environments.summary: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
