"""evalpack: OLMES-faithful and reasoning-benchmark tasks for lm-evaluation-harness.

The package is also the `verifiers` taskset plugin `evalpack` (`vf-eval evalpack ...`, the
optional extra `evalpack[verifiers]`): verifiers resolves a taskset id to the module of that
name and takes its classes from `__all__`, imported here only when asked for.
"""

__all__ = ["EvalpackEnv", "EvalpackHarness", "EvalpackTaskset", "load_environment"]


def __getattr__(name: str):
    if name in __all__:
        try:
            from .environments import taskset
        except ModuleNotFoundError as error:
            if (error.name or "").split(".")[0] != "verifiers":
                raise
            raise ModuleNotFoundError(
                f"evalpack.{name} needs verifiers: pip install 'evalpack[verifiers]'",
                name=error.name,
            ) from None
        return getattr(taskset, name)
    raise AttributeError(f"module 'evalpack' has no attribute {name!r}")
