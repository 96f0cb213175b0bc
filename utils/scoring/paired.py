"""Paired comparison of two models on the same docs: the difference of their scores with a
percentile-bootstrap confidence interval that resamples docs (each doc keeps both scores), and
its significance from a paired sign-flip (permutation) test: under "no difference" each doc's
difference is as likely negated, so the p-value is the share of sign assignments whose
statistic is at least as far from 0 as the one observed. It is exact (every assignment) up to
`EXACT_MAX` docs that differ and drawn at random beyond; unlike the bootstrap interval it stays
valid with a handful of docs (3 of 5 docs flipping the same way: p = 0.25, not significant).

A benchmark may be a weighted combination of strata (a group's subtasks, micro- or
macro-averaged): each stratum is resampled on its own and the statistic is the weighted sum of
the strata's mean differences, so the interval matches how the benchmark's score is built.
Scores per doc are plain numbers; a sampled task contributes each doc's mean over its samples.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

ROUNDS = 10_000
CHUNK = 500  # rounds drawn at a time (memory: CHUNK x docs indices)
EXACT_MAX = 16  # docs that differ, up to which every sign assignment is counted (2^16)


@dataclass(frozen=True)
class Comparison:
    """`delta` = mean(candidate) - mean(baseline) (score units), its interval at `level`, over
    `docs` paired docs; `p` the two-sided sign-flip p-value (`test` says exact or sampled),
    `significant` when p < 1 - level."""

    delta: float
    low: float
    high: float
    level: float
    docs: int
    significant: bool
    p: float = 1.0
    test: str = "exact sign-flip"

    def as_dict(self) -> dict:
        return asdict(self)


def doc_score(value) -> float:
    """A doc's score from a sample log field: a number, a bool, or samples' scores (mean)."""
    if isinstance(value, (list, tuple)):
        return float(np.mean([float(v) for v in value]))
    return float(value)


def paired_differences(candidate: dict, baseline: dict) -> np.ndarray:
    """candidate[doc] - baseline[doc] over the docs both scored (in sorted doc order)."""
    shared = sorted(set(candidate) & set(baseline))
    return np.array([candidate[d] - baseline[d] for d in shared], dtype=float)


def bootstrap_means(diffs: np.ndarray, rounds: int, rng: np.random.Generator) -> np.ndarray:
    """The mean of `diffs` in `rounds` resamples of the same size, with replacement (drawn as
    doc indices: a report's hundreds of strata take a tenth of the time multinomial counts do)."""
    n = len(diffs)
    out = np.empty(rounds)
    for start in range(0, rounds, CHUNK):
        size = min(CHUNK, rounds - start)
        out[start : start + size] = diffs[rng.integers(0, n, size=(size, n))].sum(axis=1) / n
    return out


def sign_flip_p(
    diffs: np.ndarray, coefficients: np.ndarray, rounds: int = ROUNDS, seed: int = 0
) -> tuple[float, str]:
    """Two-sided p-value of Σ coefficients·diffs under random signs, and how it was found:
    every assignment of the docs that differ (up to `EXACT_MAX`), else `rounds` random ones."""
    terms = (coefficients * diffs)[diffs != 0]
    observed = abs(terms.sum()) - 1e-12  # a tie counts as "at least as far"
    if len(terms) == 0:
        return 1.0, "exact sign-flip"
    if len(terms) <= EXACT_MAX:
        bits = (np.arange(2 ** len(terms))[:, None] >> np.arange(len(terms))) & 1
        signs = 2.0 * bits - 1  # every assignment, one per row
        return float(np.mean(np.abs(signs @ terms) >= observed)), "exact sign-flip"
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, rounds, CHUNK):
        signs = rng.choice([-1.0, 1.0], size=(min(CHUNK, rounds - start), len(terms)))
        hits += int(np.sum(np.abs(signs @ terms) >= observed))
    return (hits + 1) / (rounds + 1), f"sign-flip, {rounds:,} random assignments"


def paired_bootstrap(
    strata: list[np.ndarray],
    weights: list[float] | None = None,
    level: float = 0.95,
    rounds: int = ROUNDS,
    seed: int = 0,
) -> Comparison:
    """Δ = Σ w_s · mean(strata[s]) (weights normalised; default: by size, i.e. the pooled
    mean) with a percentile-bootstrap interval and a sign-flip p-value; strata without docs
    are left out."""
    kept = [
        (np.asarray(d, dtype=float), w)
        for d, w in zip(strata, weights or [len(d) for d in strata], strict=True)
        if len(d)
    ]
    if not kept:
        raise ValueError("no paired docs to compare")
    total = sum(w for _, w in kept)
    rng = np.random.default_rng(seed)
    delta = sum(w / total * d.mean() for d, w in kept)
    draws = sum(w / total * bootstrap_means(d, rounds, rng) for d, w in kept)
    tail = (1 - level) / 2
    low, high = np.quantile(draws, [tail, 1 - tail], method="inverted_cdf")
    diffs = np.concatenate([d for d, _ in kept])
    coefficients = np.concatenate([np.full(len(d), w / total / len(d)) for d, w in kept])
    p, test = sign_flip_p(diffs, coefficients, rounds, seed)
    return Comparison(
        float(delta),
        float(low),
        float(high),
        level,
        sum(len(d) for d, _ in kept),
        bool(p < 1 - level),
        p,
        test,
    )
