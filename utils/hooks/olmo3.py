"""The run setting shared by the `*_olmo3` tasks (OLMES's `olmo3:adapt` suite): the thinking
switch, OLMES's per-model `process_output`.

`--metadata '{"process_output": "r1_style"}'` turns it on for every olmo3 task of the run (off
by default, as in OLMES, where a model's settings ask for it). A task that names `Olmo3Task`
as its `class` gets the setting bound into each of its custom filters as the keyword argument
`process_output`; the filter splits every sample with `split` before extracting the answer, so
extraction sees exactly what OLMES scores, and it keeps the reasoning beside the answer in its
record (lm-eval logs it in the samples' `filtered_resps`). `thinking_unfinished` is the share
of a doc's samples whose thinking never ended (no `</think>`), with the switch on; 0 when off.
"""

from __future__ import annotations

import functools

from ..scoring.thinking import Thought, split_r1_style
from .sampled import SampledTask

PROCESSORS = {"r1_style": split_r1_style}


def process_output_setting(config: dict) -> str | None:
    """The run's `process_output` (None: off); an unknown style is one clear error."""
    style = (config.get("metadata") or {}).get("process_output")
    if style is not None and style not in PROCESSORS:
        raise ValueError(
            f"{config.get('task')}: metadata process_output must be one of "
            f"{sorted(PROCESSORS)} or absent, not {style!r}"
        )
    return style


def split(text: str, process_output: str | None) -> Thought:
    """One sample as OLMES scores it: split by the switch, or whole (and finished) when off."""
    if process_output is None:
        return Thought(None, text, True)
    return PROCESSORS[process_output](text)


def thinking_unfinished(thoughts: list[Thought]) -> float:
    """The share of samples whose thinking never ended."""
    return sum(not t.finished for t in thoughts) / len(thoughts) if thoughts else 0.0


def with_setting(filter_step: dict, style: str | None) -> dict:
    """A custom filter step with the setting bound (other steps unchanged)."""
    if filter_step.get("function") != "custom":
        return filter_step
    return {
        **filter_step,
        "filter_fn": functools.partial(filter_step["filter_fn"], process_output=style),
    }


class Olmo3Task(SampledTask):
    """A sampled task (`repeats` settable with `--metadata`) whose custom filters get the
    run's thinking switch."""

    @classmethod
    def adjust_config(cls, config: dict) -> dict:
        config = super().adjust_config(config)
        style = process_output_setting(config)
        filters = [
            {**entry, "filter": [with_setting(step, style) for step in entry.get("filter", [])]}
            for entry in config.get("filter_list") or []
        ]
        return {**config, "filter_list": filters} if filters else config
