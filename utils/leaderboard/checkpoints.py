"""The checkpoints of a leaderboard (`models.yaml`), checked before anything runs.

    checkpoints:
      - name: sft-math                 # the row name and directory name
        model: vllm                    # an lm-eval or evalpack model name
        model_args: {pretrained: /ckpt/sft-math, tensor_parallel_size: 2}   # or "k=v,..."
        resources: {num_gpus: 2}       # optional, for --executor ray (see executors)
        serve: {command: "vllm serve {model} --port {port}", gpus_per_replica: 1, replicas: 1}
                                       # optional: the board runs its servers (see serve)
        gen_kwargs: {temperature: 0.6} # optional, this checkpoint's generation settings
        process_output: r1_style       # optional, its thinking switch (see `thinking`)

Every problem is one line naming the file and checkpoint; all of them are reported at once.
A backend class may define `model_args_problems(args: dict) -> list[str]` (a classmethod) to
check what its signature cannot say (replay needs one of completions / from_doc).
"""

from __future__ import annotations

import inspect
import re

from ..core.suggest import did_you_mean
from ..core.yaml_files import read_yaml
from ..models.arguments import known_model_args
from ..models.registry import register
from . import identity
from .gen_settings import gen_kwargs_problems, misplaced
from .serve import serve_problems
from .thinking import thinking_problems

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
KEYS = ("name", "model", "model_args", "resources", "gen_kwargs", "process_output", "serve")


class CheckpointsError(ValueError):
    """Problems of a models file, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def model_problems(model: str, model_args) -> list[str]:
    """An unknown model name, or constructor arguments the model requires and lacks (models
    whose class cannot be imported here, e.g. without torch, are checked for their name only)."""
    from lm_eval.api.registry import get_model, model_registry

    register()
    known = list(model_registry.keys())
    if model not in known:
        return [f"unknown model {model!r}{did_you_mean(model, known)}"]
    model_args = identity.as_mapping(model_args)
    try:
        cls = get_model(model)
        params = inspect.signature(cls.__init__).parameters
    except (ImportError, ValueError, TypeError):
        return []
    required = [
        name
        for name, p in list(params.items())[1:]
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    missing = [name for name in required if name not in (model_args or {})]
    problems = [f"model {model!r} needs model_args {', '.join(missing)}"] if missing else []
    accepted = known_model_args(cls)
    if accepted is not None:  # the pack's backends: every key they take is known here
        problems += [
            f"model {model!r} takes no model_args {key!r}{did_you_mean(key, accepted)}"
            f"{misplaced(key)}; it takes: {', '.join(sorted(accepted))}"
            for key in model_args or {}
            if key not in accepted
        ]
    # a backend may check its arguments further (which combinations it needs)
    check = getattr(cls, "model_args_problems", None)
    return problems + (list(check(dict(model_args or {}))) if callable(check) else [])


def checkpoint_problems(ckpt, names: set) -> list[str]:
    """What is wrong with one checkpoint entry (empty when nothing is)."""
    if not isinstance(ckpt, dict):
        return ["needs a mapping {name, model, model_args}"]
    problems = [
        f"unknown key {key!r}{did_you_mean(str(key), KEYS)}{misplaced(key)}; known: "
        f"{', '.join(KEYS)}"
        for key in ckpt
        if key not in KEYS
    ]
    if "gen_kwargs" in ckpt:
        problems += gen_kwargs_problems(ckpt["gen_kwargs"])
    if "process_output" in ckpt:
        problems += thinking_problems(ckpt["process_output"])
    name = str(ckpt.get("name", ""))
    if "name" not in ckpt:
        problems.append("needs `name`")
    elif not NAME_PATTERN.match(name):
        problems.append(f"name {name!r} must match [A-Za-z0-9._-]+")
    elif name in names:
        problems.append(f"name {name!r} appears twice")
    args = ckpt.get("model_args", "")
    if not isinstance(args, (str, dict)):
        problems.append("model_args must be a mapping or a 'k=v,...' string")
    resources = ckpt.get("resources", {})
    if not isinstance(resources, dict) or not all(
        isinstance(v, (int, float)) for v in resources.values()
    ):
        problems.append("resources must map resource names to numbers (num_gpus: 1)")
    if "model" not in ckpt:
        problems.append("needs `model`")
    elif "serve" in ckpt:
        problems += serve_problems(ckpt)
    if "model" in ckpt and not problems:  # the arguments are checked once the entry's shape is
        # right (an unknown key such as `model_arg:` is usually the misspelt arguments themselves)
        if "serve" in ckpt:  # the board fills in base_url
            args = {**args, "base_url": "http://127.0.0.1:1/"}
        problems += model_problems(str(ckpt["model"]), args)
    return problems


def load_checkpoints(models_file: str) -> list[dict]:
    """The checkpoints of a models YAML; `CheckpointsError` lists every problem found."""
    try:
        config = read_yaml(models_file) or {}
    except ValueError as exc:
        raise CheckpointsError([str(exc)]) from None
    checkpoints = config.get("checkpoints") if isinstance(config, dict) else None
    if not isinstance(checkpoints, list) or not checkpoints:
        raise CheckpointsError([f"{models_file}: needs a non-empty `checkpoints` list"])
    problems, names = [], set()
    for number, ckpt in enumerate(checkpoints, start=1):
        label = f" ({ckpt['name']!r})" if isinstance(ckpt, dict) and "name" in ckpt else ""
        where = f"{models_file}, checkpoint {number}{label}"
        problems += [f"{where}: {problem}" for problem in checkpoint_problems(ckpt, names)]
        if isinstance(ckpt, dict) and "name" in ckpt:
            names.add(str(ckpt["name"]))
    if problems:
        raise CheckpointsError(problems)
    return checkpoints
