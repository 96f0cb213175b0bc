"""A checkpoint's own generation settings (`gen_kwargs:` in `models.yaml`), checked with the
rest of the file and passed to each of its pairs as lm-eval's `--gen_kwargs`, after the run's
own (`-- --gen_kwargs ...`), so that the checkpoint's win where both set a key.

    checkpoints:
      - name: sft-t06
        model: evalpack-chat
        model_args: {base_url: "http://127.0.0.1:8000/v1/chat/completions", model: sft}
        gen_kwargs: {temperature: 0.6, top_p: 0.95}
"""

from __future__ import annotations

import json

from ..core.suggest import did_you_mean

# the generation settings lm-eval's backends and the pack's served ones understand
GEN_KEYS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "do_sample",
    "max_gen_toks",
    "until",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "seed",
)
WHERE = "generation settings go under the checkpoint's gen_kwargs: {temperature: 0.6, ...}"


def misplaced(key: str) -> str:
    """For a model_args or checkpoint key that is a generation setting: where it goes."""
    return f"; {WHERE}" if key in GEN_KEYS else ""


def gen_kwargs_problems(value) -> list[str]:
    """What is wrong with a checkpoint's `gen_kwargs` (empty when nothing is)."""
    if not isinstance(value, dict):
        return ["gen_kwargs must be a mapping, e.g. {temperature: 0.6, top_p: 0.95}"]
    problems = []
    for key, setting in value.items():
        if key not in GEN_KEYS:
            hint = did_you_mean(str(key), GEN_KEYS)
            problems.append(
                f"gen_kwargs: unknown setting {key!r}{hint}; known: {', '.join(GEN_KEYS)}"
            )
        elif key == "until" and not (
            isinstance(setting, list) and all(isinstance(s, str) for s in setting)
        ):
            problems.append("gen_kwargs: until must be a list of strings")
        elif key not in ("until", "do_sample") and (
            isinstance(setting, bool) or not isinstance(setting, (int, float))
        ):
            problems.append(f"gen_kwargs: {key} must be a number, not {setting!r}")
        elif key == "do_sample" and not isinstance(setting, bool):
            problems.append(f"gen_kwargs: do_sample must be true or false, not {setting!r}")
    return problems


def gen_kwargs_flags(ckpt: dict) -> list[str]:
    """lm-eval flags carrying the checkpoint's generation settings (none when it has none)."""
    settings = ckpt.get("gen_kwargs")
    return ["--gen_kwargs", json.dumps(settings)] if settings else []
