"""Registering the pack's backends with lm-eval."""

# the model name a leaderboard worker's runs name for the checkpoint model it keeps loaded
# (`pooled`, registered by the worker alone)
POOLED = "resumable-pooled"


def register() -> None:
    """Register the pack's backends with lm-eval, after lm-eval's own, so every built-in
    backend stays available."""
    import lm_eval.models  # noqa: F401  (the built-in backends first)

    from . import backends, replay, resume  # noqa: F401  (each registers on import)
