"""A task class for sampled tasks whose number of samples a user sets without editing YAML.

lm-eval's `repeats` is a fixed YAML field; `--metadata '{"repeats": 5}'` reaches only the
task's metadata. Tasks that name it as `class` (through their folder's `hooks.py`) take
`repeats` from their metadata when it is there (the YAML's `repeats` is the default), and
otherwise behave exactly as lm-eval's `ConfigurableTask`. A greedy task (`do_sample: false`)
keeps its YAML's `repeats`: one `--metadata` serves a whole run, and repeating a greedy
generation would only repeat it.
"""

from __future__ import annotations

from lm_eval.api.task import ConfigurableTask


class SampledTask(ConfigurableTask):
    def __init__(self, config: dict | None = None, **kwargs) -> None:
        config = {k: v for k, v in (config or {}).items() if k != "class"}
        super().__init__(config=self.adjust_config(config), **kwargs)

    @classmethod
    def adjust_config(cls, config: dict) -> dict:
        """The YAML config with run-time settings from the metadata applied."""
        repeats = (config.get("metadata") or {}).get("repeats")
        greedy = (config.get("generation_kwargs") or {}).get("do_sample") is False
        if repeats is not None and not greedy:
            if int(repeats) < 1:
                raise ValueError(f"{config.get('task')}: metadata repeats must be >= 1")
            config = {**config, "repeats": int(repeats)}
        return config
