"""The training algorithms: closed-form gradient vs autograd, the clipped update, advantages."""
import numpy as np
import pytest
import torch

from grpo.book import plots
from grpo.toy import algos, lava
from grpo.objectives import clip_mask, grpo_advantages
from grpo.toy.algos import (clipped_update, critic_values, fit_critic, grad_log_pi, policy_gradient,
                            run_seeds, train_grpo, train_ppo, train_reinforce)
from grpo.toy.lava import play_steps, steps_from_runs

torch.set_num_threads(1)


def random_batch(seed, n=40, scale=1.5):
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=scale, size=(4, 2))
    S = lava.PATTERNS[rng.integers(0, 8, size=n)]
    moves = rng.integers(0, 2, size=n)
    adv = rng.normal(size=n)
    return W, S, moves, adv


# ---------------------------------------------------------------------------------------------
# The gradient of log pi
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_grad_log_pi_matches_autograd(seed):
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=2.0, size=(4, 2))
    S = rng.normal(size=(25, 4))                      # any real sensor values, not just 0/1
    moves = rng.integers(0, 2, size=25)
    closed = grad_log_pi(W, S, moves)
    assert closed.shape == (25, 4, 2)
    for n in range(len(S)):
        Wt = torch.tensor(W, dtype=torch.float64, requires_grad=True)
        logp = torch.log_softmax(torch.tensor(S[n]) @ Wt, dim=-1)[int(moves[n])]
        logp.backward()
        np.testing.assert_allclose(closed[n], Wt.grad.numpy(), rtol=1e-12, atol=1e-14)
    # a single step gives a single (4, 2) matrix, the outer product of s and onehot(a) - pi
    one = grad_log_pi(W, S[0], moves[0])
    pi = lava.policy_probs(W, S[0])
    np.testing.assert_allclose(one, np.outer(S[0], np.eye(2)[moves[0]] - pi), rtol=1e-15)


def test_policy_gradient_is_the_mean_of_weighted_grad_log_pi():
    W, S, moves, adv = random_batch(1)
    expected = (adv[:, None, None] * grad_log_pi(W, S, moves)).mean(axis=0)
    np.testing.assert_allclose(policy_gradient(W, S, moves, adv), expected, rtol=1e-12,
                               atol=1e-15)
    Wt = torch.tensor(W, requires_grad=True)
    logp = torch.log_softmax(torch.tensor(S) @ Wt, dim=-1)[torch.arange(len(S)),
                                                           torch.tensor(moves)]
    (torch.tensor(adv) * logp).mean().backward()
    np.testing.assert_allclose(policy_gradient(W, S, moves, adv), Wt.grad.numpy(), rtol=1e-12,
                               atol=1e-15)


# ---------------------------------------------------------------------------------------------
# The clipped update
# ---------------------------------------------------------------------------------------------
def test_one_pass_is_the_plain_policy_gradient_and_rho_is_exactly_one():
    W, S, moves, adv = random_batch(2)
    trace = []
    W1 = clipped_update(W, S, moves, adv, lr=0.5, passes=1, trace=trace)
    np.testing.assert_array_equal(W1, W + 0.5 * policy_gradient(W, S, moves, adv))
    assert len(trace) == 1
    assert (trace[0].rho == 1.0).all()
    assert not trace[0].clipped.any()
    np.testing.assert_array_equal(trace[0].W, W)
    np.testing.assert_array_equal(trace[0].W_after, W1)
    # the first pass of a longer update is the same step
    trace4 = []
    clipped_update(W, S, moves, adv, lr=0.5, passes=4, trace=trace4)
    assert (trace4[0].rho == 1.0).all()
    np.testing.assert_array_equal(trace4[0].W_after, W1)
    np.testing.assert_array_equal(trace4[1].W, W1)


def test_clip_mask_by_hand():
    rho = np.array([1.3, 1.3, 0.7, 0.7, 1.1, 0.9, 1.2, 1.3])
    adv = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 0.0])
    # up too far with A>0: clipped; up with A<0: a correction, kept; down with A>0: kept;
    # down too far with A<0: clipped; inside the band: kept; rho = 1+eps exactly: kept; A = 0: kept
    expected = [True, False, False, True, False, False, False, False]
    assert clip_mask(rho, adv, 0.2).tolist() == expected
    assert not clip_mask(rho, adv, 10.0).any()


def test_clip_mask_compares_in_rhos_precision_as_torch_does():
    import torch
    up, down = np.nextafter(np.float32(1.2), np.float32(2)), np.nextafter(np.float32(0.8), np.float32(0))
    rho = np.float32([1.2, 0.8, up, down])          # float32(1.2) is 1.2000000477 in float64
    adv = np.float32([1.0, -1.0, 1.0, -1.0])
    mask = clip_mask(rho, adv, 0.2)
    t_rho, t_adv = torch.from_numpy(rho), torch.from_numpy(adv)
    t_mask = ((t_adv > 0) & (t_rho > 1 + 0.2)) | ((t_adv < 0) & (t_rho < 1 - 0.2))
    assert mask.tolist() == t_mask.tolist() == [False, False, True, True]


def test_clip_zeroes_exactly_the_steps_that_left_the_band_in_their_direction():
    W, S, moves, adv = random_batch(3, n=60)
    trace = []
    clipped_update(W, S, moves, adv, lr=4.0, eps=0.2, passes=4, trace=trace)  # big steps
    n_clipped = n_corrections = 0
    for p in trace:
        pi_new = p.pi[np.arange(len(S)), moves]
        rho = pi_new / p.pi_old
        np.testing.assert_array_equal(p.rho, rho)
        up, down = rho > 1.2, rho < 0.8
        want = (up & (adv > 0)) | (down & (adv < 0))
        correction = (up & (adv < 0)) | (down & (adv > 0))
        np.testing.assert_array_equal(p.clipped, want)
        assert (p.coef[want] == 0).all()
        np.testing.assert_array_equal(p.coef[~want], (adv * rho / len(S))[~want])
        n_clipped += want.sum()
        n_corrections += correction.sum()
        # the gradient is autograd's gradient of the clipped surrogate, mean over steps
        Wt = torch.tensor(p.W, requires_grad=True)
        pi_t = torch.softmax(torch.tensor(S) @ Wt, dim=-1)[torch.arange(len(S)),
                                                           torch.tensor(moves)]
        ratio = pi_t / torch.tensor(p.pi_old)
        A = torch.tensor(adv)
        torch.minimum(ratio * A, torch.clamp(ratio, 0.8, 1.2) * A).mean().backward()
        np.testing.assert_allclose(p.grad, Wt.grad.numpy(), rtol=1e-10, atol=1e-14)
    assert n_clipped > 0 and n_corrections > 0, "the test must exercise both cases"


def test_clip_never_engages_with_eps_large():
    W, S, moves, adv = random_batch(4)
    trace = []
    clipped_update(W, S, moves, adv, lr=4.0, eps=1e6, passes=4, trace=trace)
    assert not any(p.clipped.any() for p in trace)
    assert any((p.rho != 1).any() for p in trace[1:])


# ---------------------------------------------------------------------------------------------
# Advantages and the critic
# ---------------------------------------------------------------------------------------------
def test_grpo_advantages_are_standardised_with_population_std():
    r = np.array([0.1, 0.3, 0.3, 0.9, 0.5, 0.2, 0.1, 0.6])
    A = grpo_advantages(r)
    np.testing.assert_allclose(A, (r - r.mean()) / (r.std(ddof=0) + 1e-8), rtol=1e-15)
    assert abs(A.mean()) < 1e-12 and abs(A.std() - 1) < 1e-6
    assert (A[r > r.mean()] > 0).all() and (A[r < r.mean()] < 0).all()


@pytest.mark.parametrize("scores", [[0.3] * 8, [1.0, 1.0], [0.0] * 64])
def test_degenerate_group_gives_zero_advantage_not_nan(scores):
    A = grpo_advantages(scores)
    assert np.isfinite(A).all()
    np.testing.assert_array_equal(A, np.zeros(len(scores)))


def test_fit_critic_descends_to_least_squares():
    rng = np.random.default_rng(0)
    S = lava.PATTERNS[rng.integers(0, 8, size=200)]
    targets = S @ np.array([-0.2, 0.1, 0.05, 0.4]) + rng.normal(scale=0.05, size=200)
    v = fit_critic(np.zeros(4), S, targets, lr=0.5, passes=4000)
    best = np.linalg.lstsq(S, targets, rcond=None)[0]
    np.testing.assert_allclose(v, best, atol=1e-6)
    # one pass is one gradient step on mean (v.s - target)^2 / 2
    v1 = fit_critic(np.zeros(4), S, targets, lr=0.5, passes=1)
    np.testing.assert_allclose(v1, 0.5 * (targets @ S) / len(S), rtol=1e-14)
    # V(s) = v . s by hand: pattern "L.L" reads [1, 0, 1, 1]
    assert critic_values(np.array([4.0, 2.0, 1.0, 8.0]), lava.PATTERNS[5]) == 13.0
    np.testing.assert_array_equal(critic_values(np.array([4.0, 2.0, 1.0, 8.0]), lava.PATTERNS),
                                  8.0 + np.arange(8))


# ---------------------------------------------------------------------------------------------
# Training: each algorithm's first update, by hand
# ---------------------------------------------------------------------------------------------
def first_group(seed, G=8):
    rng = np.random.default_rng(seed)
    floor = lava.make_floor(rng)
    return steps_from_runs(lava.play_group(floor, np.zeros((4, 2)), G, rng))


def test_reinforce_first_update_by_hand():
    g = first_group(5)
    score = g.scores[g.run]
    grad = (score[:, None, None] * grad_log_pi(np.zeros((4, 2)), g.S, g.moves)).mean(axis=0)
    res = train_reinforce(5, updates=1, eval_every=1)
    np.testing.assert_allclose(res.W, 0.5 * grad, rtol=1e-12, atol=1e-15)


def test_grpo_first_update_by_hand_and_ppo_is_grpo_plus_a_critic():
    g = first_group(6)
    A = grpo_advantages(g.scores)[g.run]
    res = train_grpo(6, updates=1, eval_every=1)
    np.testing.assert_array_equal(res.W, clipped_update(np.zeros((4, 2)), g.S, g.moves, A, 0.5))
    # PPO's critic starts at zero, so its first advantages are the raw scores
    ppo = train_ppo(6, updates=1, eval_every=1)
    np.testing.assert_array_equal(
        ppo.W, clipped_update(np.zeros((4, 2)), g.S, g.moves, g.scores[g.run], 0.5))
    np.testing.assert_array_equal(ppo.v, fit_critic(np.zeros(4), g.S, g.scores[g.run]))


def test_training_is_deterministic_and_evaluates_on_the_test_floors():
    a, b = train_grpo(3, updates=30), train_grpo(3, updates=30)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.eval_score, b.eval_score)
    assert a.eval_updates.tolist() == [0, 10, 20, 30]
    assert (a.eval_W[0] == 0).all() and (a.eval_W[-1] == a.W).all()
    np.testing.assert_array_equal(a.eval_W[2], train_grpo(3, updates=20).W)
    untrained = lava.exact_score(lava.held_out_floors(), np.zeros((4, 2)))
    assert a.eval_score[0] == untrained.mean_score
    assert a.eval_exit[0] == untrained.exit_rate
    final = lava.exact_score(lava.held_out_floors(), a.W)
    assert a.eval_score[-1] == pytest.approx(final.mean_score, abs=1e-12)
    # a shorter run is the start of a longer one
    c = train_grpo(3, updates=20)
    np.testing.assert_array_equal(c.W, train_grpo(3, updates=20, eval_every=7).W)
    assert not np.array_equal(c.W, a.W)
    assert len(a.n_steps) == 30 and a.clipped.shape == (30,)


def test_each_algorithms_first_update_points_up_the_true_gradient():
    # averaged over 40 first groups, each algorithm's update is an ascent direction of the
    # exact expected score (the first update from W = 0 is a sampled policy gradient)
    true = algos.exact_gradient(np.zeros((4, 2)), lava.held_out_floors())
    for algo in ("REINFORCE", "PPO", "GRPO"):
        mean_update = np.mean([algos.TRAINERS[algo](s, updates=1, eval_every=1).W
                               for s in range(40)], axis=0)
        cos = (mean_update * true).sum() / np.linalg.norm(mean_update) / np.linalg.norm(true)
        assert cos > 0.5, (algo, cos)


def test_training_learns_on_every_seed():
    for algo, gain in (("REINFORCE", 0.01), ("PPO", 0.05), ("GRPO", 0.15)):
        for seed in range(3):
            r = algos.TRAINERS[algo](seed, updates=100)
            assert r.eval_score[-1] > r.eval_score[0] + gain, (algo, seed)


def test_seed_runs_summary():
    sr = run_seeds("GRPO", seeds=[0, 1], updates=20)
    assert sr.seeds == [0, 1] and sr.curves.shape == (2, 3)
    s = sr.summary(0.6)
    assert s["final_score_min"] <= s["final_score_mean"] <= s["final_score_max"]
    assert s["share_of_ceiling"] == pytest.approx(s["final_score_mean"] / 0.6)
    assert sr.first_update_reaching(0.0) == 0
    assert sr.first_update_reaching(2.0) is None
    # replay GRPO's first 20 updates with the lib's pieces and count the clip by hand
    clip_runs = train_grpo(0, updates=20)
    rng, W, engaged, clipped_passes, step_passes = np.random.default_rng(0), np.zeros((4, 2)), 0, 0, 0
    for _ in range(20):
        g = play_steps(lava.make_floor(rng), W, 8, rng)
        trace = []
        W = clipped_update(W, g.S, g.moves, grpo_advantages(g.scores)[g.run], 0.5, trace=trace)
        engaged += any(p.clipped.any() for p in trace)
        clipped_passes += sum(int(p.clipped.sum()) for p in trace)
        step_passes += g.N * len(trace)
    np.testing.assert_array_equal(W, clip_runs.W)
    assert clip_runs.clip_engaged_updates == engaged > 0
    assert clip_runs.clip_step_pass_fraction == clipped_passes / step_passes


# ---------------------------------------------------------------------------------------------
# Bad input raises a clear ValueError
# ---------------------------------------------------------------------------------------------
W0, S0, M0, A0 = random_batch(9, n=10)


@pytest.mark.parametrize("call, match", [
    (lambda: grpo_advantages([0.5]), "G >= 2"),
    (lambda: grpo_advantages([]), "G >= 2"),
    (lambda: grpo_advantages([[0.1, 0.2]]), "shape"),
    (lambda: grpo_advantages([0.1, np.nan]), "NaN"),
    (lambda: train_grpo(0, G=1), "G must be >= 2"),
    (lambda: steps_from_runs([]), "empty"),
    (lambda: clipped_update(W0, np.zeros((0, 4)), [], [], 0.5), "empty"),
    (lambda: clipped_update(W0, S0, M0, A0[:-1], 0.5), "one value per step"),
    (lambda: clipped_update(W0, S0[:, :3], M0, A0, 0.5), r"\(N, 4\)"),
    (lambda: clipped_update(W0, S0, M0[:-1], A0, 0.5), "moves"),
    (lambda: clipped_update(W0, S0, M0 + 2, A0, 0.5), "moves"),
    (lambda: clipped_update(W0.T, S0, M0, A0, 0.5), "shape"),
    (lambda: clipped_update(W0, S0, M0, np.full(10, np.nan), 0.5), "NaN"),
    (lambda: clipped_update(W0, S0, M0, A0, 0.0), "lr"),
    (lambda: clipped_update(W0, S0, M0, A0, -0.5), "lr"),
    (lambda: clipped_update(W0, S0, M0, A0, 0.5, eps=-0.1), "eps"),
    (lambda: clipped_update(W0, S0, M0, A0, 0.5, passes=0), "passes"),
    (lambda: clipped_update(W0, S0, M0, A0, 0.5, passes=1.5), "passes"),
    (lambda: clipped_update(W0, S0, M0, A0, 0.5, trace=()), "trace"),
    (lambda: clip_mask([1.0, 1.0], [0.5], 0.2), "same shape"),
    (lambda: policy_gradient(W0, S0, M0, A0[:3]), "one value per step"),
    (lambda: grad_log_pi(W0, S0, M0[:4]), "moves"),
    (lambda: fit_critic(np.zeros(3), S0, A0), "v must"),
    (lambda: fit_critic(np.zeros(4), S0, A0, lr=0), "lr"),
    (lambda: fit_critic(np.zeros(4), S0, A0, passes=0), "passes"),
    (lambda: train_reinforce(0, lr=0), "lr"),
    (lambda: train_ppo(0, updates=0), "updates"),
    (lambda: train_grpo(0, eps=-1), "eps"),
    (lambda: train_grpo(-1), "seed"),
    (lambda: play_steps(lava.held_out_floors()[0], W0, 0, np.random.default_rng(0)), "G"),
    (lambda: algos.exact_gradient(W0, lava.held_out_floors()[:2], h=0.0), "h"),
    (lambda: algos.exact_gradient(W0[:3], lava.held_out_floors()[:2]), "shape"),
    (lambda: run_seeds("SAC"), "algo"),
    (lambda: run_seeds("GRPO", seeds=[]), "seeds"),
    (lambda: run_seeds("GRPO", seeds=[0], updates=10).summary(0.0), "ceiling"),
])
def test_bad_input_raises_a_clear_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------------------------
# The exact gradient: what sampled updates estimate
# ---------------------------------------------------------------------------------------------
def test_exact_gradient_matches_the_unbiased_score_function_estimate():
    floors = lava.held_out_floors()[:20]
    W = np.array([[0.0, 0.0], [0.3, -0.3], [0.0, 0.0], [-0.2, 0.2]])
    exact = algos.exact_gradient(W, floors)
    # Monte-Carlo: mean over runs of score * sum_t grad log pi(a_t|s_t), uniform over the floors
    rng = np.random.default_rng(0)
    samples = []
    for floor in floors:
        g = play_steps(floor, W, 1500, rng)
        per_step = g.scores[g.run][:, None, None] * grad_log_pi(W, g.S, g.moves)
        per_run = np.zeros((g.G, 4, 2))
        np.add.at(per_run, g.run, per_step)
        samples.append(per_run)
    samples = np.concatenate(samples)
    mc, se = samples.mean(axis=0), samples.std(axis=0) / np.sqrt(len(samples))
    assert (np.abs(mc - exact) < 5 * se + 1e-4).all(), (mc, exact, se)
    assert np.abs(exact).max() > 10 * se.max(), "the test must compare a non-trivial gradient"
    # the columns of a 2-move softmax gradient are mirror images
    np.testing.assert_allclose(exact[:, 0], -exact[:, 1], atol=1e-8)


def test_plot_seed_curves_draws_mean_and_band():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sr = run_seeds("REINFORCE", seeds=[0, 1], updates=20)
    fig, ax = plt.subplots()
    plots.plot_seed_curves(ax, sr)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), sr.curves.mean(axis=0))
    assert ax.lines[0].get_label().startswith("REINFORCE")
    # the band spans the lowest to the highest seed at every evaluation
    band = ax.collections[0].get_paths()[0].vertices
    for x, lo, hi in zip(sr.eval_updates, sr.curves.min(axis=0), sr.curves.max(axis=0)):
        ys = band[np.isclose(band[:, 0], x), 1]
        assert np.isclose(ys.min(), lo) and np.isclose(ys.max(), hi)
    plt.close(fig)
