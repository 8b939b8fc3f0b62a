"""The k1/k2/k3 KL estimators, exact KL, and the k3 gradient identity (chapter 5)."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo.kl import (check_distribution, exact_kl, expected_estimator_grad, kl_k1, kl_k2,
                     kl_k3, log_ratio)

torch.set_num_threads(1)

LOGP = st.floats(min_value=-1e6, max_value=0.0, allow_nan=False, allow_infinity=False)
LOGP_REF = st.one_of(LOGP, st.just(-math.inf))


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def random_pair(rng, v, sigma):
    z = rng.normal(size=v)
    return softmax(z + sigma * rng.normal(size=v)), softmax(z)     # (pi_theta, pi_ref)


# ---------------------------------------------------------------------------------------------
# Non-negativity, sample by sample (property tests)
# ---------------------------------------------------------------------------------------------
@settings(derandomize=True, max_examples=300, deadline=None)
@given(lp=st.lists(LOGP, min_size=1, max_size=8), data=st.data())
def test_k3_is_non_negative_for_any_pair_of_log_probabilities(lp, data):
    lr = data.draw(st.lists(LOGP_REF, min_size=len(lp), max_size=len(lp)))
    k3 = kl_k3(np.array(lp), np.array(lr))
    assert not np.isnan(k3).any()
    assert (k3 >= 0).all()
    k3_t = kl_k3(torch.tensor(lp, dtype=torch.float32), torch.tensor(lr, dtype=torch.float32))
    assert not torch.isnan(k3_t).any()
    assert bool((k3_t >= 0).all())


@settings(derandomize=True, max_examples=200, deadline=None)
@given(lp=st.lists(LOGP, min_size=1, max_size=8))
def test_k3_is_zero_exactly_when_the_log_probabilities_are_equal(lp):
    a = np.array(lp)
    assert (kl_k3(a, a) == 0).all()
    t = torch.tensor(lp, dtype=torch.float64)
    assert bool((kl_k3(t, t) == 0).all())
    # and strictly positive once they differ by more than rounding can hide
    assert (kl_k3(a, a - 1e-3) > 0).all() and (kl_k3(a - 1e-3, a) > 0).all()


def test_k1_can_be_negative_where_k3_cannot():
    lp, lr = np.log([0.2]), np.log([0.5])            # the token is likelier under the reference
    assert kl_k1(lp, lr)[0] < 0
    assert kl_k3(lp, lr)[0] > 0
    assert kl_k3(lp, lr)[0] == pytest.approx(kl_k1(lp, lr)[0] + (0.5 / 0.2 - 1))


# ---------------------------------------------------------------------------------------------
# Definitions and numerics
# ---------------------------------------------------------------------------------------------
def test_estimators_match_their_definitions():
    lp = np.log([0.1, 0.3, 0.6, 0.05])
    lr = np.log([0.2, 0.3, 0.4, 0.4])
    x = np.exp(lr - lp)
    np.testing.assert_allclose(log_ratio(lp, lr), np.log(x))
    np.testing.assert_allclose(kl_k1(lp, lr), -np.log(x))
    np.testing.assert_allclose(kl_k2(lp, lr), 0.5 * np.log(x) ** 2)
    np.testing.assert_allclose(kl_k3(lp, lr), x - np.log(x) - 1, rtol=1e-12, atol=1e-15)


def test_k3_is_accurate_near_zero_where_the_naive_formula_is_not():
    u = np.array([1e-8, -1e-8, 1e-6, -3e-7])
    series = u ** 2 / 2 + u ** 3 / 6 + u ** 4 / 24
    k3 = kl_k3(np.zeros_like(u), u)
    np.testing.assert_allclose(k3, series, rtol=1e-6)
    naive = np.exp(u) - u - 1
    assert np.abs(naive - series).max() / series.min() > 0.1   # what expm1 saves us from


def test_k3_for_large_log_ratios_is_inf_or_linear_never_nan():
    u = np.array([-1e20, -800.0, -50.0, 50.0, 710.0, 1e6])
    with np.errstate(all="raise"):                   # no warnings escape either
        k3 = kl_k3(np.zeros_like(u), u)
    np.testing.assert_allclose(k3[:3], -u[:3] - 1, rtol=1e-15)
    assert k3[3] == pytest.approx(math.exp(50.0) - 51.0, rel=1e-12)
    assert np.isposinf(k3[4:]).all()
    # float32 torch overflows earlier (u > ~88.7) and stays inf, not NaN
    t = kl_k3(torch.zeros(3), torch.tensor([-100.0, 80.0, 100.0]))
    assert t[0].item() == pytest.approx(99.0) and math.isfinite(t[1].item())
    assert math.isinf(t[2].item()) and t[2].item() > 0
    # a reference that rules the token out: every estimator is +inf
    for k in (kl_k1, kl_k2, kl_k3):
        assert np.isposinf(k(np.zeros(1), np.array([-np.inf]))).all()


def test_max_log_ratio_clamps_the_penalty_and_its_gradient():
    lp = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    lr = torch.tensor([5.0, 1000.0], dtype=torch.float64)
    k3 = kl_k3(lp, lr, max_log_ratio=10.0)
    assert k3[0].item() == pytest.approx(math.expm1(5.0) - 5.0)
    assert k3[1].item() == pytest.approx(math.expm1(10.0) - 10.0)
    k3.sum().backward()
    assert lp.grad[0].item() == pytest.approx(1 - math.exp(5.0))   # d k3 / d logp = 1 - x
    assert lp.grad[1].item() == 0.0


def test_torch_in_torch_out_and_differentiable():
    lp = torch.log(torch.tensor([0.1, 0.3, 0.6], dtype=torch.float64)).requires_grad_(True)
    lr = torch.log(torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64))
    for k in (kl_k1, kl_k2, kl_k3):
        out = k(lp, lr)
        assert isinstance(out, torch.Tensor) and out.shape == (3,) and out.requires_grad
        np.testing.assert_allclose(out.detach().numpy(), k(lp.detach().numpy(), lr.numpy()))
    (g,) = torch.autograd.grad(kl_k3(lp, lr).sum(), lp)
    x = torch.exp(lr - lp.detach())
    torch.testing.assert_close(g, 1 - x)               # d k3 / d logp = 1 - x
    out = kl_k3(np.log([0.5]), np.log([0.25]))
    assert isinstance(out, np.ndarray)


# ---------------------------------------------------------------------------------------------
# Exact KL and unbiasedness by enumeration
# ---------------------------------------------------------------------------------------------
def test_exact_kl_known_values_and_edge_cases():
    p, q = np.array([0.5, 0.5]), np.array([0.9, 0.1])
    assert exact_kl(p, q) == pytest.approx(0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1))
    assert exact_kl(q, q) == 0.0
    assert exact_kl(np.array([0.0, 1.0]), np.array([0.5, 0.5])) == pytest.approx(math.log(2))
    assert np.isposinf(exact_kl(np.array([0.5, 0.5]), np.array([1.0, 0.0])))
    batch = exact_kl(np.stack([p, q]), np.stack([q, p]))
    assert batch.shape == (2,) and batch[0] == pytest.approx(exact_kl(p, q))
    t = exact_kl(torch.tensor(p), torch.tensor(q))
    assert isinstance(t, torch.Tensor) and t.item() == pytest.approx(exact_kl(p, q))


@pytest.mark.parametrize("v,sigma", [(2, 0.1), (10, 1.0), (100, 0.3), (1000, 3.0)])
def test_k1_and_k3_are_unbiased_by_exact_enumeration_k2_is_not(v, sigma):
    rng = np.random.default_rng(v)
    th, ref = random_pair(rng, v, sigma)
    kl = exact_kl(th, ref)
    lt, lr = np.log(th), np.log(ref)
    assert (th * np.exp(lr - lt)).sum() == pytest.approx(1.0, abs=1e-12)     # E[x] = 1
    assert (th * kl_k1(lt, lr)).sum() == pytest.approx(kl, rel=1e-9, abs=1e-15)
    assert (th * kl_k3(lt, lr)).sum() == pytest.approx(kl, rel=1e-9, abs=1e-15)
    if sigma >= 1:
        assert abs((th * kl_k2(lt, lr)).sum() - kl) > 1e-3 * kl   # k2 is biased far apart


def test_k3_is_biased_low_when_the_reference_leaves_the_policys_support():
    th = np.array([0.5, 0.5, 0.0])
    ref = np.array([0.3, 0.3, 0.4])           # mass on a token pi_theta never samples
    seen = th > 0
    k3 = kl_k3(np.log(th[seen]), np.log(ref[seen]))
    assert (th[seen] * k3).sum() == pytest.approx(exact_kl(th, ref) - ref[~seen].sum())


# ---------------------------------------------------------------------------------------------
# Caveat 2: the expected gradient of k3 is the gradient of KL(pi_ref || pi_theta)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_k3_gradient_is_the_gradient_of_the_kl_the_other_way_round(seed):
    rng = np.random.default_rng(seed)
    v = 6
    z = torch.tensor(rng.normal(size=v) * 1.5, dtype=torch.float64)
    ref = torch.softmax(torch.tensor(rng.normal(size=v), dtype=torch.float64), -1)
    lref = torch.log(ref)
    g_k3 = expected_estimator_grad(kl_k3, z, lref)

    zz = z.clone().requires_grad_(True)
    (g_swapped,) = torch.autograd.grad(exact_kl(ref, torch.softmax(zz, -1)), zz)
    zz = z.clone().requires_grad_(True)
    (g_kl,) = torch.autograd.grad(exact_kl(torch.softmax(zz, -1), ref), zz)

    pi = torch.softmax(z, -1)
    torch.testing.assert_close(g_k3, g_swapped, rtol=0, atol=1e-12)
    torch.testing.assert_close(g_k3, pi - ref, rtol=0, atol=1e-12)        # closed form
    assert (g_k3 - g_kl).abs().max() > 1e-3                               # not the KL we want
    # for contrast: k2 as a loss gives the right gradient, k1 gives none
    torch.testing.assert_close(expected_estimator_grad(kl_k2, z, lref), g_kl, rtol=0, atol=1e-12)
    torch.testing.assert_close(expected_estimator_grad(kl_k1, z, lref), torch.zeros(v,
                               dtype=torch.float64), rtol=0, atol=1e-12)


def test_expected_estimator_grad_with_a_behaviour_policy():
    z = torch.tensor([0.3, -0.2, 1.0], dtype=torch.float64)
    lref = torch.log(torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64))
    old = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
    pi = torch.softmax(z, -1)
    # E_old[(1 - x) grad log pi] with grad_z log pi(a) = e_a - pi
    x = torch.exp(lref) / pi
    expected = sum(old[a] * (1 - x[a]) * (torch.eye(3, dtype=torch.float64)[a] - pi)
                   for a in range(3))
    torch.testing.assert_close(expected_estimator_grad(kl_k3, z, lref, sample_probs=old),
                               expected, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [kl_k1, kl_k2, kl_k3])
def test_estimators_reject_bad_input(k):
    with pytest.raises(ValueError, match="same shape"):
        k(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="same shape"):
        k(torch.zeros(2, 3), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="NaN"):
        k(np.array([0.0, np.nan]), np.zeros(2))
    with pytest.raises(ValueError, match="NaN"):
        k(torch.zeros(2), torch.tensor([0.0, float("nan")]))
    with pytest.raises(ValueError, match="logp must be finite"):
        k(np.array([-np.inf]), np.zeros(1))
    with pytest.raises(ValueError, match=r"\+inf"):
        k(np.zeros(1), np.array([np.inf]))
    with pytest.raises(ValueError, match="both"):
        k(np.zeros(2), torch.zeros(2))
    with pytest.raises(ValueError, match="floating-point"):
        k(torch.zeros(2, dtype=torch.long), torch.zeros(2, dtype=torch.long))


def test_max_log_ratio_must_be_positive():
    with pytest.raises(ValueError, match="max_log_ratio"):
        kl_k3(np.zeros(1), np.zeros(1), max_log_ratio=0.0)
    with pytest.raises(ValueError, match="max_log_ratio"):
        kl_k3(np.zeros(1), np.zeros(1), max_log_ratio=float("nan"))


def test_exact_kl_rejects_bad_distributions():
    good = np.array([0.5, 0.5])
    with pytest.raises(ValueError, match="sum to 1"):
        exact_kl(np.array([0.5, 0.6]), good)
    with pytest.raises(ValueError, match="sum to 1"):
        exact_kl(good, torch.tensor([0.2, 0.2]).numpy())
    with pytest.raises(ValueError, match="sum to 1"):
        exact_kl(torch.tensor([0.5, 0.5]), torch.tensor([0.7, 0.7]))
    with pytest.raises(ValueError, match="non-negative"):
        exact_kl(np.array([1.5, -0.5]), good)
    with pytest.raises(ValueError, match="finite"):
        exact_kl(np.array([np.nan, 1.0]), good)
    with pytest.raises(ValueError, match="same shape"):
        exact_kl(good, np.array([0.2, 0.3, 0.5]))
    with pytest.raises(ValueError, match="at least one category"):
        exact_kl(np.float64(1.0), np.float64(1.0))
    with pytest.raises(ValueError, match="both"):
        exact_kl(good, torch.tensor(good))
    np.testing.assert_array_equal(check_distribution(good), good)


def test_expected_estimator_grad_rejects_bad_input():
    lref = torch.log(torch.full((3,), 1 / 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="torch tensor"):
        expected_estimator_grad(kl_k3, np.zeros(3), lref)
    with pytest.raises(ValueError, match="shape"):
        expected_estimator_grad(kl_k3, torch.zeros(3, 2, dtype=torch.float64), lref)
    with pytest.raises(ValueError, match="finite"):
        expected_estimator_grad(kl_k3, torch.tensor([0.0, float("nan"), 1.0],
                                                    dtype=torch.float64), lref)
    with pytest.raises(ValueError, match="same shape"):
        expected_estimator_grad(kl_k3, torch.zeros(4, dtype=torch.float64), lref)
    with pytest.raises(ValueError, match="sum to 1"):
        expected_estimator_grad(kl_k3, torch.zeros(3, dtype=torch.float64), lref,
                                sample_probs=torch.ones(3, dtype=torch.float64))
    with pytest.raises(TypeError, match="sample_probs"):
        expected_estimator_grad(kl_k3, torch.zeros(3, dtype=torch.float64), lref,
                                sample_probs=np.full(3, 1 / 3))


def test_estimator_moments_exact_means_are_the_kl_for_k1_and_k3_and_not_for_k2():
    from grpo.kl import estimator_moments, random_pair, sample_tokens
    rng = np.random.default_rng(3)
    pi, ref = random_pair(rng, 40, 1.0)
    row = estimator_moments(pi, ref, sample_tokens(rng, pi, 500))
    assert row["k1"]["mean"] == pytest.approx(row["kl"], rel=1e-12)
    assert row["k3"]["mean"] == pytest.approx(row["kl"], rel=1e-12)
    assert abs(row["k2"]["mean"] / row["kl"] - 1) > 1e-3
    assert row["k3"]["mc_min"] >= 0 > row["k1"]["mc_min"] and 0 < row["k1_negative"] < 1
    assert "mc_mean" not in estimator_moments(pi, ref)["k3"]
    with pytest.raises(ValueError, match="tokens"):
        estimator_moments(pi, ref, [0, 40])
    with pytest.raises(ValueError, match="same shape"):
        estimator_moments(pi, np.full(10, 0.1))


def test_moments_summary_is_relative_to_each_pairs_kl_and_refuses_unsampled_rows():
    from grpo.kl import estimator_moments, moments_summary, random_pair, sample_tokens
    rng = np.random.default_rng(4)
    rows = []
    for _ in range(30):
        pi, ref = random_pair(rng, 20, 0.5)
        rows.append(estimator_moments(pi, ref, sample_tokens(rng, pi, 300)))
    s = moments_summary(rows)
    assert abs(s["k3"]["bias_exact"]) < 1e-12 and abs(s["k1"]["bias_exact"]) < 1e-12
    assert abs(s["k3"]["bias"]) < 4 * s["k3"]["bias_se"] + 1e-12
    assert s["k1"]["std"] > s["k3"]["std"]          # a close pair: k3's spread is the smaller
    with pytest.raises(ValueError, match="rows"):
        moments_summary([estimator_moments(pi, ref)] * 2)


def test_estimator_grid_cells_do_not_depend_on_the_other_cells():
    from grpo.kl import estimator_grid
    both = estimator_grid((10, 30), (0.1, 1.0), pairs=3, tokens=50, seed=7)
    alone = estimator_grid((30,), (0.1, 1.0), pairs=3, tokens=50, seed=7)
    assert both[30, 1.0]["summary"] == alone[30, 1.0]["summary"]
    assert both[10, 1.0]["summary"] != both[30, 1.0]["summary"]


def test_sample_tokens_draws_from_the_distribution():
    from grpo.kl import sample_tokens
    p = np.array([0.1, 0.0, 0.6, 0.3])
    t = sample_tokens(np.random.default_rng(0), p, 20_000)
    assert 1 not in t and abs(np.mean(t == 2) - 0.6) < 0.02
    with pytest.raises(ValueError, match="n must"):
        sample_tokens(np.random.default_rng(0), p, 0)
