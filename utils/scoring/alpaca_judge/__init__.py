"""AlpacaEval 2 judging with a served, OpenAI-compatible judge (see `annotate`, `client`,
`metrics`)."""

from .annotate import ANNOTATOR, judge
from .client import JudgeClient, JudgeSettings, JudgeUnavailable
from .metrics import METRICS, item_of, leaderboard, metric

__all__ = ["ANNOTATOR", "METRICS", "JudgeClient", "JudgeSettings", "JudgeUnavailable", "item_of",
           "judge", "leaderboard", "metric"]
