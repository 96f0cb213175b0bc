"""DROP answer scoring as OLMES computes it (`drop::llama3`): exact match and bag-of-words F1.

Behaviour of OLMES's `oe_eval/dependencies/drop/process_results.py` (itself the official
AllenNLP `drop_eval.py`), reproduced rule for rule:

* A gold answer is a tuple of spans; a prediction is scored as a list of spans. OLMES passes the
  model's whole completion as ONE span (it never splits "Alice, Bob"), so against a two-span
  gold the F1 is at most 0.5.
* Each span is normalised token by token (tokens split on spaces and hyphens): lower-cased,
  punctuation removed unless the token parses as a float, numbers rewritten as `str(float(x))`
  (`"3"` -> `"3.0"`), the articles a/an/the removed, whitespace collapsed; empty tokens dropped.
* Exact match: the normalised spans are equal as sets and in number.
* F1: predicted and gold spans are aligned one to one (Hungarian assignment on span F1); a pair
  scores 0 when the gold span holds numbers and the predicted span shares none of them; the
  per-gold-span scores are averaged over max(#gold spans, #predicted spans) and rounded to 2
  decimals (numpy rounding).
* Over several golds: the maximum of each metric, skipping golds whose first span is blank
  (they are scored, then ignored); with no usable gold both metrics are 0.
"""

from __future__ import annotations

import re
import string

import numpy as np
from scipy.optimize import linear_sum_assignment

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def is_number(text: str) -> bool:
    """Python's `float()` accepts it (so "1e3", "nan" and "1_000" count, as in OLMES)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def normalize_token(token: str) -> str:
    token = token.lower()
    if not is_number(token):
        token = "".join(ch for ch in token if ch not in _PUNCTUATION)
    if is_number(token):
        token = str(float(token))
    return " ".join(_ARTICLES.sub(" ", token).split())


def normalize_span(span: str) -> str:
    tokens = (normalize_token(token) for token in re.split(" |-", span))
    return " ".join(token for token in tokens if token.strip()).strip()


def _bags(spans: list[str] | tuple[str, ...]) -> tuple[list[str], list[set[str]]]:
    normalized = [normalize_span(span) for span in spans]
    return normalized, [set(span.split()) for span in normalized]


def bag_f1(predicted: set[str], gold: set[str]) -> float:
    common = len(gold & predicted)
    precision = common / len(predicted) if predicted else 1.0
    recall = common / len(gold) if gold else 1.0
    if precision == 0.0 and recall == 0.0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def numbers_compatible(gold: set[str], predicted: set[str]) -> bool:
    """False only when the gold bag holds numbers and the predicted bag none of them."""
    gold_numbers = {word for word in gold if is_number(word)}
    return not gold_numbers or bool(gold_numbers & {w for w in predicted if is_number(w)})


def aligned_f1(predicted: list[set[str]], gold: list[set[str]]) -> float:
    """Mean per-gold-span F1 under the best one-to-one alignment, rounded to 2 decimals."""
    scores = np.zeros((len(gold), len(predicted)))
    for g, gold_bag in enumerate(gold):
        for p, pred_bag in enumerate(predicted):
            if numbers_compatible(gold_bag, pred_bag):
                scores[g, p] = bag_f1(pred_bag, gold_bag)
    rows, cols = linear_sum_assignment(-scores)
    best = np.zeros(max(len(gold), len(predicted)))
    for row, col in zip(rows, cols):
        best[row] = max(best[row], scores[row, col])
    return float(np.round(np.mean(best), 2))


def score_against(predicted: list[str], gold: tuple[str, ...]) -> tuple[float, float]:
    """(exact match, F1) of predicted spans against one gold answer."""
    pred_spans, pred_bags = _bags(predicted)
    gold_spans, gold_bags = _bags(gold)
    exact = float(set(pred_spans) == set(gold_spans) and len(pred_spans) == len(gold_spans))
    return exact, aligned_f1(pred_bags, gold_bags)


def olmes_drop_scores(prediction: str, golds: list[tuple[str, ...]]) -> dict[str, float]:
    """OLMES's `exact_match` and `f1` for one completion: the whole text is one span."""
    best_em, best_f1 = 0.0, 0.0
    for gold in golds:
        exact, f1 = score_against([prediction], tuple(gold))
        if gold[0].strip():
            best_em, best_f1 = max(best_em, exact), max(best_f1, f1)
    return {"exact_match": best_em, "f1": best_f1}
