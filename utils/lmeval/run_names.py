"""Where a plain run's files land: `--output_path DIR` is `DIR/<name>/results_<time>.json` and
`DIR/<name>/samples_<task>_<time>.jsonl`, as in lm-eval, with a name a user can read.

lm-eval names the folder after `--model_args`' `pretrained=` or `model=` (or `peft`, `delta`,
`path`, `engine`), `/` written `__`. Without such a key (`replay`'s `from_doc=solution`, a
completions file) it takes 8 random characters, a new folder at every run; a local path gives a
hidden folder (`model=./checkpoints/sft` is `.__checkpoints__sft`). Under `evalpack` the name
falls back to the backend (`--model replay`: `DIR/replay/`) and loses its leading dots and
underscores (`DIR/checkpoints__sft/`). Leaderboard pairs and rescored runs have no such folder:
the pack writes them straight into their own (`rundirs.lm_eval_command`).
"""

from __future__ import annotations

from lm_eval.loggers.evaluation_tracker import GeneralConfigTracker
from lm_eval.utils import sanitize_model_name

_LM_EVAL_LOG_ARGS = GeneralConfigTracker.log_experiment_args


def folder_name(model_source: str, model_args) -> str:
    """The results folder of a run of `model_source` (`--model`) with `model_args`."""
    named = GeneralConfigTracker._get_model_name(model_args)
    readable = sanitize_model_name(named).lstrip("._") if named else ""
    return readable or sanitize_model_name(model_source)


def _log_experiment_args(self, model_source: str, model_args, *args, **kwargs) -> None:
    _LM_EVAL_LOG_ARGS(self, model_source, model_args, *args, **kwargs)
    if GeneralConfigTracker._get_model_name(model_args) is None:
        self.model_name = model_source  # not lm-eval's random characters, in results too
    self.model_name_sanitized = folder_name(model_source, model_args)


def install() -> None:
    """Name the results folders of the runs this process starts as the module docstring says."""
    GeneralConfigTracker.log_experiment_args = _log_experiment_args
