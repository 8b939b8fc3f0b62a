"""Paired before/after statistics (lib/grpo/stats.py)."""
import numpy as np
import pytest

from grpo.stats import paired_lift


def test_a_real_lift_is_significant_and_its_interval_holds_the_truth():
    rng = np.random.default_rng(1)
    before = (rng.random(2000) < 0.4).astype(float)
    after = before.copy()
    flip = (before == 0) & (rng.random(2000) < 0.15)           # 15% of the wrong ones become right
    after[flip] = 1
    lift = paired_lift(before, after)
    assert lift.points == pytest.approx(100 * flip.mean())
    assert lift.significant and lift.ci95[0] > 0
    assert lift.ci95[0] < lift.points < lift.ci95[1]


def test_flips_both_ways_in_equal_number_are_not_significant():
    rng = np.random.default_rng(2)
    before = (rng.random(2000) < 0.5).astype(float)
    after = before.copy()
    right, wrong = np.flatnonzero(before == 1)[:80], np.flatnonzero(before == 0)[:80]
    after[right], after[wrong] = 0, 1                          # 80 gained, 80 lost: no lift
    lift = paired_lift(before, after)
    assert lift.points == 0 and not lift.significant
    assert lift.ci95[0] < 0 < lift.ci95[1]


def test_pairing_is_narrower_than_two_independent_bands():
    rng = np.random.default_rng(3)
    skill = rng.random(2000)                                    # problems differ in difficulty
    before = rng.random((1, 2000)) < skill
    after = rng.random((1, 2000)) < np.clip(skill + 0.05, 0, 1)
    lift = paired_lift(before[0].astype(float), after.astype(float))
    p = before.mean()
    unpaired_half = 100 * 1.96 * np.sqrt(2 * p * (1 - p) / 2000)
    assert (lift.ci95[1] - lift.ci95[0]) / 2 < unpaired_half


def test_seeds_pool_and_per_seed_lifts_are_each_seeds_mean():
    before = np.zeros(500)
    after = np.zeros((3, 500))
    after[0, :50], after[1, :100], after[2, :150] = 1, 1, 1    # +10, +20, +30 points
    lift = paired_lift(before, after)
    assert lift.per_seed == pytest.approx((10, 20, 30))
    assert lift.points == pytest.approx(20)
    assert lift.seeds == 3 and lift.problems == 500
    # resampling seeds: the pooled interval is wider than any one seed's
    assert lift.ci95[1] - lift.ci95[0] > max(hi - lo for lo, hi in lift.per_seed_ci95)
    # a (seeds, problems) before pairs row s with row s
    assert paired_lift(after, after).points == 0


def test_deterministic_by_seed():
    rng = np.random.default_rng(4)
    b, a = rng.random(300), rng.random(300)
    assert paired_lift(b, a) == paired_lift(b, a)
    assert paired_lift(b, a, seed=1).ci95 != paired_lift(b, a, seed=2).ci95


@pytest.mark.parametrize("before, after, match", [
    (np.zeros(5), np.zeros(6), "same problems"),
    (np.zeros((2, 5)), np.zeros((3, 5)), "same problems"),
    (np.zeros(0), np.zeros(0), "problems >= 1"),
    (np.full(5, np.nan), np.zeros(5), "NaN"),
    (np.full(5, 2.0), np.zeros(5), r"\[0, 1\]"),
    (np.zeros((1, 1, 5)), np.zeros(5), "shape"),
])
def test_bad_input_is_a_clear_error(before, after, match):
    with pytest.raises(ValueError, match=match):
        paired_lift(before, after)
    with pytest.raises(ValueError, match="n_boot"):
        paired_lift(np.zeros(5), np.zeros(5), n_boot=10)


def test_one_problem_is_not_an_interval():
    """Regression: resampling one problem reported [+100, +100] as a significant lift."""
    with pytest.raises(ValueError, match="at least 2 problems"):
        paired_lift([0.0], [1.0])
