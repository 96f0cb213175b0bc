"""Metrics over n samples of one problem: unbiased pass@k, avg@n, maj@k.

Plain data in, plain numbers out. A metric whose k exceeds the number of samples is undefined:
the functions return None, and callers must report it missing, never as 1.0.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from math import comb


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased estimate of P(at least one of k samples is correct) from n samples, c correct:
    1 - C(n-c, k) / C(n, k). None when k > n."""
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: c={c} must lie in [0, n={n}]")
    if k < 1 or k > n:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def powers_of_two_up_to(n: int) -> list[int]:
    """1, 2, 4, ... <= n: the ks a sampled task reports."""
    ks, k = [], 1
    while k <= n:
        ks.append(k)
        k *= 2
    return ks


def avg_at_n(correct: Sequence[bool]) -> float:
    """Mean accuracy over all samples (the expected pass@1)."""
    if not correct:
        raise ValueError("avg_at_n needs at least one sample")
    return sum(map(bool, correct)) / len(correct)


def group_equivalent(
    answers: Sequence[Hashable | None], same: Callable[[object, object], bool]
) -> list[int | None]:
    """Label each answer with the index of the first earlier answer it is equivalent to
    (`same(a, b)`), or its own index; None answers (nothing extracted) get None."""
    labels: list[int | None] = []
    for i, answer in enumerate(answers):
        if answer is None:
            labels.append(None)
            continue
        label = i
        for j in range(i):
            if labels[j] == j and same(answers[j], answer):
                label = j
                break
        labels.append(label)
    return labels


def majority_label(labels: Sequence[int | None]) -> int | None:
    """The most frequent label, ties broken by first occurrence; None when no sample has an
    answer."""
    counts: dict[int, int] = {}
    for label in labels:
        if label is not None:
            counts[label] = counts.get(label, 0) + 1
    if not counts:
        return None
    best = max(counts.values())
    return next(label for label in labels if label is not None and counts[label] == best)


def maj_at_k(labels: Sequence[int | None], correct: Sequence[bool], k: int) -> float | None:
    """1.0 if the majority answer of the first k samples is correct, else 0.0 (also when none
    of them has an answer); None when k > n. `labels` come from `group_equivalent`, so a label
    is the index of a sample holding that answer."""
    if k < 1 or k > len(labels):
        return None
    winner = majority_label(labels[:k])
    return 0.0 if winner is None else float(bool(correct[winner]))
