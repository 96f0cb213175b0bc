"""Paired bootstrap (`evalpack.scoring.paired`) against cases whose answer is known by hand."""

from math import comb

import numpy as np
import pytest

from evalpack.scoring.paired import doc_score, paired_bootstrap, paired_differences


def binomial_cdf(k: int, n: int, p: float) -> float:
    return sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def test_nine_wins_one_tie_is_significant():
    # 10 docs, the candidate right and the baseline wrong on 9, both right on 1: a resample's
    # mean difference is k/10 with k ~ Binomial(10, 0.9). By hand: P(k<=6) = 0.0128 < 2.5%
    # <= P(k<=7) = 0.0702, so the 2.5% quantile is 0.7; P(k<=9) = 0.651 < 97.5%: high = 1.0
    assert binomial_cdf(6, 10, 0.9) == pytest.approx(0.0128, abs=1e-4)
    assert binomial_cdf(7, 10, 0.9) == pytest.approx(0.0702, abs=1e-4)
    candidate = {i: 1.0 for i in range(10)}
    baseline = {i: 0.0 for i in range(9)} | {9: 1.0}
    result = paired_bootstrap([paired_differences(candidate, baseline)])
    assert (result.delta, result.low, result.high) == (pytest.approx(0.9), 0.7, 1.0)
    assert result.significant and result.docs == 10


def test_one_win_in_three_is_not_significant():
    # k ~ Binomial(3, 1/3): P(k=0) = 8/27 > 2.5%, so low = 0; P(k<=2) = 26/27 < 97.5%: high = 1
    result = paired_bootstrap([np.array([1.0, 0.0, 0.0])])
    assert (result.delta, result.low, result.high) == (pytest.approx(1 / 3), 0.0, 1.0)
    assert not result.significant


def test_only_shared_docs_are_paired_and_sampled_docs_use_their_mean():
    candidate = {"a": doc_score([1, 0, 1, 1]), "b": doc_score(True), "c": 1.0}
    baseline = {"a": 0.25, "b": 0.0}
    assert list(paired_differences(candidate, baseline)) == [0.5, 1.0]


def test_strata_weights_follow_the_group_average():
    wins, loss = np.array([1.0, 1.0, 1.0]), np.array([0.0])
    assert paired_bootstrap([wins, loss]).delta == pytest.approx(0.75)  # pooled (by size)
    macro = paired_bootstrap([wins, loss], weights=[1, 1])
    assert (macro.delta, macro.low, macro.high) == (0.5, 0.5, 0.5)
    # every resample agrees, yet 3 docs cannot make it significant: 2 of 8 sign assignments
    # are as extreme
    assert macro.p == 0.25 and not macro.significant


def test_three_of_five_flips_are_not_significant():
    """The issue's case: 3 of 5 docs flip the same way, 2 tie. The bootstrap interval excludes
    0, but the exact sign-flip test gives p = 2/8 = 0.25."""
    result = paired_bootstrap([np.array([1.0, 1.0, 1.0, 0.0, 0.0])])
    assert result.low > 0  # what used to be marked significant
    assert (result.p, result.test, result.docs) == (0.25, "exact sign-flip", 5)
    assert not result.significant


def test_sign_flip_p_by_hand_and_sampled_beyond_the_exact_size():
    from evalpack.scoring.paired import EXACT_MAX, sign_flip_p

    # diffs 2, 1, -1 (equal weights): sums ±2±1±1 ->|s| in {4, 2, 2, 0, 0, 2, 2, 4}/3 for the
    # 8 assignments; observed |2| of 4: the 2s and 4s, 6 of 8
    diffs = np.array([2.0, 1.0, -1.0])
    assert sign_flip_p(diffs, np.full(3, 1 / 3)) == (0.75, "exact sign-flip")
    many = np.ones(EXACT_MAX + 4)  # all win: exact p would be 2 / 2^20
    p, test = sign_flip_p(many, np.full(len(many), 1 / len(many)), rounds=2000)
    assert test == "sign-flip, 2,000 random assignments" and p == 1 / 2001


def test_identical_models_are_never_significant():
    same = paired_bootstrap([np.zeros(50)])
    assert (same.delta, same.low, same.high, same.significant) == (0.0, 0.0, 0.0, False)
    with pytest.raises(ValueError, match="no paired docs"):
        paired_bootstrap([np.array([])])
