"""AlpacaEval 2 judging with a served, OpenAI-compatible judge (see `annotate`, `metrics`; the
judge's HTTP client is a model client: `evalpack.judges.client`)."""

from .annotate import ANNOTATOR, JUDGE_MODELS, judge
from .metrics import METRICS, item_of, leaderboard, metric

__all__ = ["ANNOTATOR", "JUDGE_MODELS", "METRICS", "item_of", "judge", "leaderboard", "metric"]
