"""The test without its answers, for BigCodeBench's recording run: `rewrite` takes the checks
out, `prune` what only they read, `blanks` the values it makes None rather than removes."""

from .rewrite import answerless

__all__ = ["answerless"]
