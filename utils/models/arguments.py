"""Model arguments checked: lm-eval's API models take any keyword and drop the ones they do not
know, so a misspelt `base_ur=` would only show up later as a missing `base_url`."""

from __future__ import annotations

import inspect

from ..core.suggest import did_you_mean


def backend_label(lm) -> str:
    return getattr(lm, "backend_name", type(lm).__name__)


LM_EVAL_OPTIONS = {"batch_size", "max_batch_size", "device"}  # lm-eval passes these to every model


def accepted_args(model_cls) -> set[str]:
    """Every named argument of the `__init__`s along the class's MRO, and lm-eval's options."""
    known = set(LM_EVAL_OPTIONS)
    for cls in model_cls.__mro__:
        if "__init__" in vars(cls):
            params = inspect.signature(cls.__init__).parameters.values()
            known |= {
                p.name
                for p in params
                if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != "self"
            }
    return known


def known_model_args(model_cls) -> set[str] | None:
    """The model arguments one of the pack's backends takes, for checking a models file before
    anything runs; None for a backend that takes any (lm-eval's own, `answer-server`'s extra
    fields)."""
    if not model_cls.__module__.startswith("evalpack.") or getattr(
        model_cls, "takes_any_model_args", False
    ):
        return None
    return accepted_args(model_cls)


def check_model_args(lm, kwargs: dict) -> None:
    """A model argument no class of `lm` takes is an error naming it (and what it may mean)."""
    known = accepted_args(type(lm))
    unknown = [name for name in kwargs if name not in known]
    if unknown:
        named = ", ".join(f"{n}={did_you_mean(n, known, show='{}='.format)}" for n in unknown)
        raise ValueError(f"bad --model_args for {backend_label(lm)}: {named}")
