"""Paired before/after statistics (lib/grpo/stats.py)."""
import math

import numpy as np
import pytest

from grpo import stats
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
    """The interval is a function of the data and ``seed`` alone: the global generators' state
    does not reach it, the default seed is a seed like any other, and another seed moves it."""
    import inspect
    import random
    rng = np.random.default_rng(4)
    b, a = rng.random(300), rng.random(300)
    first = paired_lift(b, a)
    np.random.seed(123)
    random.seed(123)
    np.random.random(1000)                     # the global streams moved between the two calls
    assert paired_lift(b, a) == first
    default = inspect.signature(paired_lift).parameters["seed"].default
    assert paired_lift(b, a, seed=default) == first
    assert paired_lift(b, a, seed=default + 1).ci95 != first.ci95
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


def test_clusters_make_rewordings_of_one_calculation_count_once():
    """Three copies of each problem, clustered, give the interval of the problems alone; left
    unclustered they narrow it about sqrt(3)-fold, as if they were three times the evidence."""
    rng = np.random.default_rng(3)
    before = (rng.random(300) < 0.4).astype(float)
    after = np.where(rng.random(300) < 0.2, 1.0 - before, before)
    alone = paired_lift(before, after)
    tripled = paired_lift(np.repeat(before, 3), np.repeat(after, 3))
    clustered = paired_lift(np.repeat(before, 3), np.repeat(after, 3),
                            clusters=np.repeat(np.arange(300), 3))
    width = {k: x.ci95[1] - x.ci95[0] for k, x in
             (("alone", alone), ("tripled", tripled), ("clustered", clustered))}
    assert clustered.points == pytest.approx(alone.points)
    assert clustered.ci95 == pytest.approx(alone.ci95, abs=1e-9)
    assert width["tripled"] < 0.7 * width["clustered"]
    singletons = paired_lift(before, after, clusters=[f"p{i}" for i in range(300)])
    assert singletons.ci95 == pytest.approx(alone.ci95, abs=1e-9)
    with pytest.raises(ValueError, match="clusters must give one label per problem"):
        paired_lift(before, after, clusters=range(299))
    with pytest.raises(ValueError, match="clusters must be hashable"):
        paired_lift(before, after, clusters=[np.zeros(1)] * 300)
    with pytest.raises(ValueError, match="at least 2 distinct clusters"):
        paired_lift(before, after, clusters=["same"] * 300)


def test_one_problem_is_not_an_interval():
    """Regression: resampling one problem reported [+100, +100] as a significant lift."""
    with pytest.raises(ValueError, match="at least 2 problems"):
        paired_lift([0.0], [1.0])


def _null_runs(rng, S, P=400, seed_sd=4.0, lift=0.0):
    """S GRPO seeds from one start on P problems: each seed shifts every problem's success rate by
    its own training noise (sd ``seed_sd`` points) around a true lift of ``lift`` points."""
    q = rng.uniform(0.1, 0.9, P)
    before = (rng.random(P) < q).astype(float)
    shifts = lift / 100 + rng.normal(0, seed_sd / 100, S)
    after = (rng.random((S, P)) < np.clip(q[None] + shifts[:, None], 0, 1)).astype(float)
    return before, after


@pytest.mark.parametrize("S", [1, 2, 3, 5])
def test_the_interval_covers_a_null_lift_at_least_95_percent_of_the_time(S):
    """Calibration by simulation: under no lift, the 95% interval excludes 0 in at most about 5%
    of cases, at every seed count (a seed bootstrap at S = 2 or 3 would not: it understates the
    seed spread). With training noise the truth is the mean over seeds, which the t term carries."""
    rng = np.random.default_rng(S)
    sims = 300
    false = sum(paired_lift(*_null_runs(rng, S, seed_sd=4.0 if S > 1 else 0.0), n_boot=200,
                            seed=i).significant for i in range(sims))
    assert false / sims <= 0.07, false / sims


def test_a_real_lift_over_seeds_is_found():
    rng = np.random.default_rng(9)
    hits = sum(paired_lift(*_null_runs(rng, 5, P=2000, seed_sd=2.0, lift=8.0), n_boot=200,
                           seed=i).significant for i in range(40))
    assert hits >= 36


def test_holm_adjusts_a_family_step_down():
    from grpo.stats import holm
    adjusted = holm([0.01, 0.04, 0.03, 0.5])
    assert adjusted.tolist() == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert (holm([0.001] * 3) == 0.003).all()
    with pytest.raises(ValueError):
        holm([])
    with pytest.raises(ValueError):
        holm([1.5])


def test_p_value_agrees_with_the_interval():
    rng = np.random.default_rng(5)
    for lift in (0.0, 3.0, 10.0):
        b, a = _null_runs(rng, 3, P=1000, seed_sd=1.0, lift=lift)
        x = paired_lift(b, a)
        assert (x.p_value < 0.05) == x.significant


def test_t_quantiles():
    from grpo.stats import t975
    assert t975(1) == pytest.approx(12.706) and t975(30) == pytest.approx(2.042)
    assert t975(11) == pytest.approx(2.201, abs=0.005) and t975(60) == pytest.approx(2.000, abs=0.005)


def test_lift_gap_finds_a_lift_that_sits_on_one_subset_and_not_a_uniform_one():
    from grpo.stats import lift_gap
    rng = np.random.default_rng(11)
    P = 2000
    first = np.arange(P) < P // 2
    before = (rng.random(P) < 0.4).astype(float)
    after = before.copy()
    after[first & (before == 0) & (rng.random(P) < 0.3)] = 1          # the lift sits on the first half
    gap = lift_gap(before, after, first, ~first)
    assert gap.significant and gap.points > 10
    false = 0
    for i in range(100):                                             # a uniform lift: no interaction
        b = (rng.random(P) < 0.4).astype(float)
        uniform = b.copy()
        uniform[(b == 0) & (rng.random(P) < 0.2)] = 1
        false += lift_gap(b, uniform, first, ~first, n_boot=300, seed=i).significant
    assert false <= 10
    with pytest.raises(ValueError, match="boolean masks"):
        lift_gap(before, after, first[:10], ~first)


def test_over_seeds_is_a_t_interval_on_s_minus_1_dof():
    r = stats.over_seeds([10.0, 12.0, 17.0])
    sd = np.std([10.0, 12.0, 17.0], ddof=1)
    assert r.mean == 13.0 and np.allclose(r.ci95, (13 - 4.303 * sd / 3 ** 0.5, 13 + 4.303 * sd / 3 ** 0.5))
    assert r.significant and 0 < r.p_value < 0.05
    assert not stats.over_seeds([-1.0, 2.0, 1.0]).significant
    for bad in ([1.0], [[1.0, 2.0]], [1.0, float("nan")]):
        with pytest.raises(ValueError, match="one finite number per seed"):
            stats.over_seeds(bad)


def _t_tail_by_quadrature(t, dof, n=200_001):
    """P(|T| >= t) by Simpson's rule on the t density over [0, t] (an independent check)."""
    from math import gamma, pi, sqrt
    x = np.linspace(0.0, t, n)
    f = gamma((dof + 1) / 2) / (sqrt(dof * pi) * gamma(dof / 2)) * (1 + x ** 2 / dof) ** (-(dof + 1) / 2)
    h = x[1] - x[0]
    inside = h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())
    return 1 - 2 * inside


@pytest.mark.parametrize("dof", [1, 2, 3, 4, 5, 7, 12, 30])
def test_the_t_tail_is_exact(dof):
    for t in (0.3, 1.0, 2.5, 6.0):
        assert stats.t_two_sided_p(t, dof) == pytest.approx(_t_tail_by_quadrature(t, dof), abs=1e-9)
    assert stats.t_two_sided_p(stats.t975(dof), dof) == pytest.approx(0.05, abs=2e-4)
    assert stats.t_two_sided_p(0.0, dof) == 1.0 and stats.t_two_sided_p(float("inf"), dof) == 0.0
    assert stats.t_two_sided_p(-2.5, dof) == stats.t_two_sided_p(2.5, dof)


def test_a_seed_p_value_is_the_t_test_and_not_a_normal_tail():
    """Three seeds whose difference is far beyond the interval's edge: the t-test on 2 dof gives
    p = 0.0046, so Holm over 8 keeps it at 0.037; the normal tail on the same scale said 6e-12."""
    r = stats.over_seeds([301.0, 238.0, 266.0])
    t = r.mean / (np.std(r.per_seed, ddof=1) / 3 ** 0.5)
    assert r.p_value == pytest.approx(stats.t_two_sided_p(t, 2), rel=1e-3)
    assert 0.004 < r.p_value < 0.005
    for S in (2, 3):   # under the null the test rejects 5% of the time
        draws = np.random.default_rng(S).normal(size=(20_000, S))
        rejected = np.mean([stats.over_seeds(v).p_value < 0.05 for v in draws])
        assert 0.04 < rejected < 0.06, (S, rejected)
    with pytest.raises(ValueError, match="dof"):
        stats.t_two_sided_p(1.0, 0)


def test_a_lift_s_p_value_inverts_its_two_part_interval():
    """At the interval's edge p is 0.05 whatever the mix of problem and seed noise; a lift whose
    interval is all problem noise gets a normal tail, all seed noise a t tail."""
    from grpo.stats import Lift

    def lift(points, a, b, seeds=2):
        half = float(np.hypot(a, b))
        return Lift(points, (points - half, points + half), (), (), 100, seeds, problem_half=a,
                    seed_half=b)
    for a, b in ((1.0, 0.0), (1.0, 1.0), (0.2, 3.0), (0.0, 1.0)):
        assert lift(float(np.hypot(a, b)), a, b).p_value == pytest.approx(0.05, abs=2e-4), (a, b)
    assert lift(3.0, 1.0, 0.0).p_value == pytest.approx(math.erfc(3.0 * 1.96 / 2 ** 0.5), rel=1e-9)
    assert lift(3.0, 0.0, 1.0, seeds=3).p_value == pytest.approx(
        stats.t_two_sided_p(3.0 * stats.t975(2), 2), rel=1e-9)
    mixed = lift(3.0, 1.0, 1.0).p_value       # between the two tails
    assert lift(3.0, 1.414, 0.0).p_value < mixed < lift(3.0, 0.0, 1.414).p_value


def test_a_change_in_readings_is_split_into_what_each_group_carries():
    groups, cats = ["x", "x", "y", "y"], ("a", "b")
    before = ["a", "a", "a", "b"]                                  # one run
    after = [["b", "a", "b", "b"], ["a", "a", "b", "b"]]           # two runs: shares are their mean
    ch = stats.group_change(before, after, groups, cats)
    assert ch.before.sizes == {"x": 2, "y": 2}
    assert ch.before.shares == {"x": {"a": 1.0, "b": 0.0}, "y": {"a": 0.5, "b": 0.5}}
    assert ch.after.shares == {"x": {"a": 0.75, "b": 0.25}, "y": {"a": 0.0, "b": 1.0}}
    assert ch.after.overall == {"a": 0.375, "b": 0.625}
    assert ch.whole == pytest.approx({"a": -37.5, "b": 37.5})
    assert ch.carried["x"] == pytest.approx({"a": -12.5, "b": 12.5})      # 2/4 of -25 points
    assert ch.carried["y"] == pytest.approx({"a": -25.0, "b": 25.0})      # 2/4 of -50 points


def test_what_the_groups_carry_adds_up_to_the_whole_change_whatever_their_sizes():
    rng = np.random.default_rng(3)
    cats = ("p", "q", "r", "s")
    groups = rng.choice(["one", "two", "three"], size=57, p=[0.6, 0.3, 0.1])
    before, after = rng.choice(cats, size=(1, 57)), rng.choice(cats, size=(5, 57))
    ch = stats.group_change(before, after, groups, cats)
    for c in cats:
        assert sum(ch.carried[g][c] for g in ch.carried) == pytest.approx(ch.whole[c])
        assert ch.whole[c] == pytest.approx(100 * ((after == c).mean() - (before == c).mean()))
    assert sum(ch.after.sizes.values()) == 57
    assert all(sum(s.values()) == pytest.approx(1) for s in ch.after.shares.values())
    # a group's share is its own: the 'three' group read from its problems alone
    m = groups == "three"
    assert ch.after.shares["three"]["q"] == pytest.approx((after[:, m] == "q").mean())
    assert {type(g) for g in ch.carried} == {str}                 # NumPy's labels, as Python's


@pytest.mark.parametrize("call, match", [
    (lambda: stats.shares_by_group(["a", "b"], ["x"], ("a", "b")), "groups must give one label"),
    (lambda: stats.shares_by_group(["a", "z"], ["x", "y"], ("a", "b")), "readings holds.*'z'"),
    (lambda: stats.shares_by_group([], [], ("a",)), "readings must be"),
    (lambda: stats.shares_by_group(["a"], [["x"]], ("a",)), "groups must be hashable"),
    (lambda: stats.shares_by_group(["a"], ["x"], ("a", "a")), "categories"),
    (lambda: stats.group_change(["a", "b"], ["a", "b", "b"], ["x", "y"], ("a", "b")),
     "before .* and after .* must read the same problems"),
    (lambda: stats.group_change(["a", "b"], ["a", "c"], ["x", "y"], ("a", "b")), "after holds"),
    (lambda: stats.group_change(["c", "b"], ["a", "b"], ["x", "y"], ("a", "b")), "before holds"),
])
def test_bad_readings_or_groups_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_lift_names_its_unit_one_run_or_its_seeds():
    one = paired_lift(np.zeros(40), np.ones(40))
    assert one.unit == "over 40 problems, one run"
    many = paired_lift(np.zeros(40), np.ones((3, 40)))
    assert many.unit == "across 3 seeds and 40 problems"
