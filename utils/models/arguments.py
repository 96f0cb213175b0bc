"""Model arguments checked: lm-eval's API models take any keyword and drop the ones they do not
know, so a misspelt `base_ur=` would only show up later as a missing `base_url`."""

from __future__ import annotations

import difflib
import inspect


def backend_label(lm) -> str:
    return getattr(lm, "backend_name", type(lm).__name__)


LM_EVAL_OPTIONS = {"batch_size", "max_batch_size", "device"}  # lm-eval passes these to every model


def check_model_args(lm, kwargs: dict) -> None:
    """A model argument no class of `lm` takes is an error naming it (and what it may mean)."""
    known = set(LM_EVAL_OPTIONS)
    for cls in type(lm).__mro__:
        if "__init__" in vars(cls):
            known |= set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    unknown = [name for name in kwargs if name not in known]
    if unknown:
        named = ", ".join(
            f"{name}=" + "".join(f" (did you mean {m}=?)"
                                 for m in difflib.get_close_matches(name, known, n=1))
            for name in unknown)
        raise ValueError(f"bad --model_args for {backend_label(lm)}: {named}")
