import pytest

from evalpack.scoring.sampling_metrics import (
    avg_at_n,
    group_equivalent,
    maj_at_k,
    pass_at_k,
    powers_of_two_up_to,
)


def test_pass_at_k_hand_computed():
    # n=5, c=2: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # more correct samples than n-k: certain success
    assert pass_at_k(5, 4, 2) == 1.0
    assert pass_at_k(20, 0, 10) == 0.0
    # n=20, c=3, k=10: 1 - C(17,10)/C(20,10) = 1 - 19448/184756
    assert pass_at_k(20, 3, 10) == pytest.approx(1 - 19448 / 184756)


def test_pass_at_k_larger_than_n_is_missing_not_one():
    assert pass_at_k(1, 1, 10) is None
    assert pass_at_k(4, 4, 8) is None


def test_pass_at_k_rejects_impossible_counts():
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_powers_of_two():
    assert powers_of_two_up_to(16) == [1, 2, 4, 8, 16]
    assert powers_of_two_up_to(20) == [1, 2, 4, 8, 16]
    assert powers_of_two_up_to(1) == [1]


def test_avg_at_n():
    assert avg_at_n([True, False, True, True]) == 0.75


def test_majority_groups_equivalent_answers_and_breaks_ties_by_first_occurrence():
    answers = ["1/2", "0.5", "3", "3", None, "\\frac12"]
    same = lambda a, b: {a, b} <= {"1/2", "0.5", "\\frac12"} or a == b
    labels = group_equivalent(answers, same)
    assert labels == [0, 0, 2, 2, None, 0]
    correct = [False, False, True, True, False, False]
    # first 4: "1/2"-class twice, "3" twice: tie, the earlier class wins
    assert maj_at_k(labels, correct, 4) == 0.0
    # all 6: "1/2"-class three times beats "3" twice
    assert maj_at_k(labels, correct, 6) == 0.0
    assert maj_at_k(labels, [True] + correct[1:], 6) == 1.0
    assert maj_at_k(labels, correct, 8) is None


def test_majority_with_no_answers_is_wrong():
    assert maj_at_k([None, None], [False, False], 2) == 0.0
