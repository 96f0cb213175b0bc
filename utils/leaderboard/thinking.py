"""A checkpoint's thinking switch (`process_output:` in `models.yaml`), OLMES's per-model
setting: its pairs run with `process_output` added to the run's `--metadata` (the task's run
setting, `evalpack.hooks.thinking_switch`), so that a board can hold reasoning models, whose
`<think>` block is set aside before scoring, next to models without one.

    checkpoints:
      - name: thinker
        model: evalpack-chat
        model_args: {base_url: "http://127.0.0.1:8000/v1/chat/completions", model: thinker}
        process_output: r1_style
"""

from __future__ import annotations

import json

from .plan import run_metadata

MODES = ("r1_style",)  # OLMES's `process_output` values the tasks know


def thinking_problems(mode) -> list[str]:
    return [] if mode in MODES else [f"process_output must be one of {', '.join(MODES)}"]


def thinking_flags(ckpt: dict, extra: list[str]) -> list[str]:
    """`--metadata`: the run's own (in `extra`) with the checkpoint's switch; none without one
    (lm-eval keeps the last `--metadata`, so this one, after the run's, wins)."""
    mode = ckpt.get("process_output")
    if not mode:
        return []
    return ["--metadata", json.dumps({**run_metadata(extra), "process_output": mode})]
