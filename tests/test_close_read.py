"""Issue 7's lib fixes: one floor against many policies, validation gaps, the configs, the
update's averaging, and the helpers the chapters share."""
from dataclasses import FrozenInstanceError, asdict

import numpy as np
import pytest

from grpo import kl
from grpo.book import display
from grpo.objectives import grpo_advantages
from grpo.toy import algos, lava
from grpo.toy.algos import ToyGRPOConfig, ToyPPOConfig, ReinforceConfig, step_divisors

F = lava.held_out_floors()
W0 = np.zeros((4, 2))


# ---------------------------------------------------------------------------------------------
# One floor, many policies: the floor axis stays inside Evaluation
# ---------------------------------------------------------------------------------------------
def test_one_floor_against_many_policies_averages_over_floors_only():
    D = lava.deterministic_policies()
    one = lava.exact_score(F[0], D)
    as_set = lava.exact_score(F[:1], D)
    assert one.mean_score.shape == (256,)
    np.testing.assert_array_equal(one.mean_score, as_set.mean_score)
    np.testing.assert_array_equal(one.score, as_set.score[:, 0])
    # the always-STEP policy walks into the first channel's first tile
    first = lava.channels(F[0])[0][0]
    assert one.mean_score[0] == first / lava.EXIT
    single = lava.exact_score(F[0], W0)
    assert single.score.shape == () and single.mean_score == single.score


def test_ceiling_best_moves_and_exact_gradient_take_one_floor():
    c = lava.ceiling(F[0])
    assert c.score == lava.exact_score(F[0], lava.deterministic_policies()).mean_score.max()
    assert len(lava.best_moves(F[0])) == 8
    g1 = algos.exact_gradient(W0, F[0])
    np.testing.assert_allclose(g1, algos.exact_gradient(W0, F[:1]), rtol=0, atol=0)
    assert lava.omniscient_score(F[0]).score.shape == ()
    mc = lava.monte_carlo_score(F[0], W0, 50, np.random.default_rng(0))
    assert mc.score.shape == () and mc.mean_score == mc.score


# ---------------------------------------------------------------------------------------------
# Validation gaps
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, match", [
    (lambda: lava.make_floor(0), TypeError, "Generator"),
    (lambda: lava.make_floors(3, 0), TypeError, "Generator"),
    (lambda: lava.play_steps(F[0], W0, 4, 1), TypeError, "Generator"),
    (lambda: lava.monte_carlo_score(F[0], W0, 10, 1), TypeError, "Generator"),
    (lambda: lava.make_floors(0, np.random.default_rng(0)), ValueError, "n must"),
    (lambda: lava.sensors(F[0], 2.5), TypeError, "integer tile"),
    (lambda: lava.policy_probs(W0, [np.nan, 0, 0, 1]), ValueError, "NaN"),
    (lambda: algos.critic_values(np.zeros(4), [np.inf, 0, 0, 1]), ValueError, "NaN"),
    (lambda: lava.tile_values(F[:1], np.full((1, 1, 40), np.nan)), ValueError, "NaN"),
    (lambda: lava.tile_values(F[:1], np.full((1, 1, 40), "a")), TypeError, "LEAP"),
    (lambda: lava.tile_values(F[:1], np.full((1, 1, 40), 1.5)), ValueError, r"\[0, 1\]"),
    (lambda: lava.exact_score(np.zeros((0, 40), bool), W0), ValueError, "empty"),
    (lambda: lava.ceiling(np.zeros((0, 40), bool)), ValueError, "empty"),
    (lambda: algos.train_grpo(0, lr="0.5"), ValueError, "lr"),
    (lambda: algos.train_grpo(0, G=None), ValueError, "G"),
    (lambda: algos.train_ppo(0, critic_lr=None), ValueError, "critic_lr"),
    (lambda: algos.train_grpo(0, critic_lr=0.5), TypeError, "critic_lr"),
    (lambda: algos.train_grpo(0, averaging="median"), ValueError, "averaging"),
    (lambda: algos.train_ppo(0, adv_norm="yes"), ValueError, "adv_norm"),
    (lambda: algos.train_grpo(0, ToyGRPOConfig(), G=1), ValueError, "G must be >= 2"),
    (lambda: algos.train_grpo(0, ToyPPOConfig()), TypeError, "ToyGRPOConfig"),
    (lambda: algos.run_seeds("GRPO", seeds=5), TypeError, "seeds"),
    (lambda: lava.monte_carlo_score(F[0], W0, 0, np.random.default_rng(0)), ValueError, "n_runs"),
    (lambda: algos.train_ppo(0, updates=30, critic_lr=50.0), ValueError, "diverged"),
    (lambda: display.markdown_table(["a"], [["x|y"]]), ValueError, r"\|"),
    (lambda: display.markdown_table(["a"], "abc"), TypeError, "rows"),
    (lambda: display.markdown_table("ab", [["x", "y"]]), TypeError, "header"),
    (lambda: step_divisors([0, 1, 2], 2), ValueError, "run indices"),
    (lambda: step_divisors([0, 1], 2, "median"), ValueError, "averaging"),
    (lambda: algos.clipped_update(W0, lava.PATTERNS[:2], [0, 1], [1.0, -1.0], 0.5,
                                  divisors=[1.0, 0.0]), ValueError, "divisors"),
])
def test_bad_input_is_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_sane_critic_lr_does_not_trip_the_divergence_check():
    r = algos.train_ppo(0, updates=30)
    assert np.abs(r.v).max() < 10


# ---------------------------------------------------------------------------------------------
# One frozen config per protocol, stored in the result
# ---------------------------------------------------------------------------------------------
def test_configs_are_frozen_and_stored_in_the_result():
    r = algos.train_grpo(1, updates=10, lr=0.25)
    assert r.config == ToyGRPOConfig(updates=10, lr=0.25)
    assert r.hparams == asdict(r.config) == {"updates": 10, "G": 8, "lr": 0.25, "eval_every": 10,
                                              "eps": 0.2, "passes": 4, "averaging": "batch_steps"}
    with pytest.raises(FrozenInstanceError):
        r.config.lr = 1.0
    # a config and keyword changes give the same run
    same = algos.train_grpo(1, ToyGRPOConfig(updates=10, lr=0.25))
    np.testing.assert_array_equal(r.W, same.W)
    assert isinstance(algos.train_ppo(0, updates=1).config, ToyPPOConfig)
    assert type(algos.train_reinforce(0, updates=1).config) is ReinforceConfig


def test_eval_floors_scores_the_run_on_its_own_floors():
    wide = np.stack([lava.make_wide_floor(np.random.default_rng(s)) for s in range(20)])
    r = algos.train_grpo(0, updates=20, make_floor=lava.make_wide_floor, eval_floors=wide)
    assert r.final_score == pytest.approx(lava.exact_score(wide, r.W).mean_score, abs=1e-12)
    assert r.eval_score[0] == lava.exact_score(wide, W0).mean_score


# ---------------------------------------------------------------------------------------------
# How the update averages over steps (experiment A)
# ---------------------------------------------------------------------------------------------
def test_step_divisors_by_hand():
    run = np.array([0, 0, 0, 1, 2, 2])          # runs of 3, 1 and 2 steps
    assert step_divisors(run, 3).tolist() == [6] * 6
    assert step_divisors(run, 3, "per_answer").tolist() == [9, 9, 9, 3, 6, 6]
    assert step_divisors(run, 3, "constant").tolist() == [3 * 39] * 6
    # per answer: every run's steps carry 1/G of the total weight, so group advantages,
    # which sum to zero over runs, sum to zero over steps too
    A = np.array([1.0, -0.5, -0.5])[run]
    assert (A / step_divisors(run, 3, "per_answer")).sum() == pytest.approx(0, abs=1e-15)
    assert (A / step_divisors(run, 3)).sum() == pytest.approx((3 * 1.0 - 0.5 - 2 * 0.5) / 6)


def test_per_answer_update_is_the_mean_over_answers_of_each_answers_mean():
    rng = np.random.default_rng(4)
    g = lava.play_steps(F[5], W0, 8, rng)
    A = grpo_advantages(g.scores)[g.run]
    W1 = algos.clipped_update(W0, g.S, g.moves, A, 0.5, passes=1,
                              divisors=step_divisors(g.run, 8, "per_answer"))
    per_run = [algos.policy_gradient(W0, g.S[g.run == i], g.moves[g.run == i], A[g.run == i])
               for i in range(8)]
    np.testing.assert_allclose(W1, 0.5 * np.mean(per_run, axis=0), rtol=1e-12, atol=1e-15)


def test_batch_steps_is_the_default_update_bit_for_bit():
    r = algos.train_grpo(2, updates=15)
    np.testing.assert_array_equal(r.W, algos.train_grpo(2, updates=15, averaging="batch_steps").W)
    assert not np.array_equal(r.W, algos.train_grpo(2, updates=15, averaging="per_answer").W)


def test_ppo_advantage_normalisation_standardises_each_batch():
    r = algos.train_ppo(0, updates=5, adv_norm=True)
    # standardised advantages have mean |A| below 1 (= sqrt of their mean square)
    assert (r.abs_adv <= 1 + 1e-9).all() and (r.abs_adv > 0.5).all()


# ---------------------------------------------------------------------------------------------
# Helpers the chapters share
# ---------------------------------------------------------------------------------------------
def test_pattern_name_and_counts():
    assert [lava.pattern_name(s) for s in lava.PATTERNS] == list(lava.PATTERN_NAMES)
    floor = np.zeros(40, bool)
    floor[10] = True                       # one lava tile: tiles 7, 8, 9 see it at +3, +2, +1
    counts = lava.pattern_counts(floor)
    assert counts.sum() == 39              # every safe tile once
    names = dict(zip(lava.PATTERN_NAMES, counts))
    assert names["L.."] == names[".L."] == names["..L"] == 1 and names["..."] == 36
    with pytest.raises(ValueError):
        lava.pattern_name([2, 0, 0, 1])


def test_signed_below_and_rounded():
    assert display.signed(-0.0001) == "+0.000" and display.signed(0.12345, 4) == "+0.1235"
    assert display.signed(-2) == "-2" and display.signed(np.float64(-1.5), 1) == "-1.5"
    with pytest.raises(TypeError):
        display.signed("1")
    assert display.below(3e-17, 1e-14) == "< 1e-14" and display.below(2e-3, 1e-14) == "2.0e-03"
    with pytest.raises(ValueError):
        display.below(np.nan, 1e-14)
    out = display.rounded({"a": np.float64(0.123456), "b": [1e-20, 2.0], "c": np.int64(3),
                           "d": "text", "e": True}, digits=3, floor=1e-12)
    assert out == {"a": 0.123, "b": [0.0, 2.0], "c": 3, "d": "text", "e": True}
    assert type(out["c"]) is int
    with pytest.raises(ValueError, match="finite"):
        display.rounded({"x": float("nan")})


def test_softmax_and_random_pair():
    p = kl.softmax(np.array([[0.0, np.log(3.0)], [1000.0, 1000.0]]))
    np.testing.assert_allclose(p, [[0.25, 0.75], [0.5, 0.5]])
    pi, ref = kl.random_pair(np.random.default_rng(0), 50, 0.0)
    np.testing.assert_array_equal(pi, ref)                  # sigma 0: the same distribution
    pi, ref = kl.random_pair(np.random.default_rng(0), 50, 1.0)
    assert pi.shape == ref.shape == (50,) and kl.exact_kl(pi, ref) > 0
    with pytest.raises(TypeError):
        kl.random_pair(0, 50, 1.0)
    with pytest.raises(ValueError):
        kl.random_pair(np.random.default_rng(0), 1, 1.0)
    with pytest.raises(ValueError):
        kl.softmax([np.nan, 0.0])


def test_markdown_table_accepts_an_escaped_bar():
    assert "| a \\|x\\| |" in display.markdown_table(["a \\|x\\|"], [["1"]]).data


def test_first_updates_reaching_per_seed():
    sr = algos.run_seeds("GRPO", seeds=[0, 1], updates=30)
    level = float(sr.curves[0, 2])                       # seed 0's score at update 20
    per_seed = sr.first_updates_reaching_per_seed(level)
    assert per_seed[0] <= 20
    for seed_curve, hit in zip(sr.curves, per_seed):
        reached = np.flatnonzero(seed_curve >= level)
        assert hit == (None if len(reached) == 0 else int(sr.eval_updates[reached[0]]))
    assert sr.first_updates_reaching_per_seed(2.0) == [None, None]


def test_groups_reaching_gives_each_group_of_seeds_its_own_seed_mean_crossing():
    sr = algos.run_seeds("GRPO", seeds=[0, 1, 2, 3], updates=30)
    level = float(sr.curves[:2].mean(axis=0)[2])          # the first pair's mean at update 20
    groups = sr.groups_reaching(level, 2)
    assert groups[0] == algos.SeedRuns("GRPO", sr.runs[:2]).first_update_reaching(level) <= 20
    assert groups[1] == algos.SeedRuns("GRPO", sr.runs[2:]).first_update_reaching(level)
    assert sr.groups_reaching(level, 4) == [sr.first_update_reaching(level)]
    assert sr.groups_reaching(2.0, 1) == [None] * 4
    for bad in (3, 0, 1.5):
        with pytest.raises(ValueError, match="size"):
            sr.groups_reaching(level, bad)
