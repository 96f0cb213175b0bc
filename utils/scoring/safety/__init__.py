"""Tülu 3's safety evaluation as AI2's safety-eval (060cc903) scores it: WildGuard's prompt and
its parse (`wildguard`), the per-benchmark verdicts and metrics (`verdicts`), and judging a
run's responses with a served WildGuard (`judging`; its HTTP client is a model client:
`evalpack.judges.wildguard`)."""

from .wildguard import WILDGUARD_INPUT_FORMAT, judge_input, parse_wildguard

__all__ = ["WILDGUARD_INPUT_FORMAT", "judge_input", "parse_wildguard"]
