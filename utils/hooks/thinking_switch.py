"""The thinking switch on the task side, for every backend: `--metadata '{"process_output":
"r1_style"}'` (OLMES's per-model `process_output`; off by default, as in OLMES).

The task applies it, not the model, so that it works the same with the pack's backends and
lm-eval's own (`vllm`, `hf`), and so that the samples keep the model's raw output (`resps`)
while the filtered record shows the scored answer, the reasoning beside it and whether the
thinking ended. The split itself is `evalpack.scoring.thinking.split_r1_style`.

A task's loader stamps the run's setting on every doc (`stamp`), which is how its filters,
which see only responses and docs, know it; `split` then gives each sample's `Thought`, or
None when the switch is off (the whole output is the answer, as in OLMES).
"""

from __future__ import annotations

from ..scoring.thinking import Thought, split_r1_style

SETTING = "process_output"  # the --metadata key, OLMES's model setting of the same name
MODES = ("r1_style",)
DOC_FIELD = "process_output"


def checked_mode(mode) -> str:
    """The run's setting, "" when off; anything else than OLMES's modes is an error."""
    if mode in (None, "", "none"):
        return ""
    if mode not in MODES:
        raise ValueError(
            f"--metadata {SETTING}: {mode!r} is not a thinking mode; use one of "
            f"{', '.join(MODES)} (or leave it out: off)"
        )
    return mode


def stamp(dataset, mode):
    """`dataset` (a DatasetDict) with the run's setting on every doc."""
    mode = checked_mode(mode)
    return dataset.map(lambda doc: {DOC_FIELD: mode})


def split(text: str, doc: dict) -> Thought | None:
    """The sample split as the run's setting says; None with the switch off."""
    return split_r1_style(text) if doc.get(DOC_FIELD) else None


def scored_text(text: str, thought: Thought | None) -> str:
    return text if thought is None else thought.answer


def thinking_record(thought: Thought | None) -> dict:
    """What a sample's record shows of its thinking: the reasoning beside the answer and
    whether `</think>` was written (nothing with the switch off)."""
    if thought is None:
        return {}
    return {"reasoning": thought.reasoning, "thinking_finished": thought.finished}


def unfinished(records: list[dict]) -> int:
    """How many of the records' samples never ended their thinking."""
    return sum(record.get("thinking_finished") is False for record in records)
