"""The lava-leap game: floor invariants, sensors, policy, exact evaluation vs Monte-Carlo."""
import hashlib

import numpy as np
import pytest

from grpo.toy import lava
from grpo.toy.lava import (EXIT, LAVA_ZONE, N_TILES, channels, check_floor, deterministic_policies,
                       exact_score, leap_probs, make_floor, monte_carlo_score, pattern_index,
                       play, play_group, policy_probs, sensors, held_out_floors)


@pytest.fixture(scope="module")
def many_floors():
    rng = np.random.default_rng(123)
    return [make_floor(rng) for _ in range(5000)]


def test_floor_invariants(many_floors):
    ks = set()
    for floor in many_floors:
        assert floor.shape == (N_TILES,) and floor.dtype == bool
        chans = channels(floor)
        ks.add(len(chans))
        assert 3 <= len(chans) <= 7
        assert all(w in (1, 2) for _, w in chans)
        lava_tiles = np.flatnonzero(floor)
        assert lava_tiles.min() >= LAVA_ZONE[0] and lava_tiles.max() <= LAVA_ZONE[1]
        for (s1, w1), (s2, _) in zip(chans, chans[1:]):
            assert s2 - (s1 + w1) >= 2, "neighbouring channels need >= 2 safe tiles between"
        widths = [w for _, w in chans]
        assert 32 - sum(widths) - 2 * (len(chans) - 1) >= 0, "spare never negative"
    assert ks == {3, 4, 5, 6, 7}


def test_floor_distribution_matches_the_rules(many_floors):
    ks = np.array([len(channels(f)) for f in many_floors])
    widths = np.array([w for f in many_floors for _, w in channels(f)])
    # k uniform on {3..7}, widths fair: loose 5-sigma bands
    for k in range(3, 8):
        assert abs((ks == k).mean() - 0.2) < 5 * np.sqrt(0.2 * 0.8 / len(ks))
    assert abs((widths == 2).mean() - 0.5) < 5 * np.sqrt(0.25 / len(widths))
    # the first channel starts at 5 + gap[0]: tile 5 is lava on some floors
    assert any(f[5] for f in many_floors)
    assert any(f[36] for f in many_floors)


def test_sensors_at_the_edge_of_the_floor():
    floor = np.zeros(N_TILES, dtype=bool)
    floor[[36, 37]] = True          # not a legal floor for make_floor, but legal input here
    assert sensors(floor, 35).tolist() == [1, 1, 0, 1]
    assert sensors(floor, 36).tolist() == [1, 0, 0, 1]
    assert sensors(floor, 37).tolist() == [0, 0, 0, 1]   # 38 safe, 39 safe, 40 past the end
    assert sensors(floor, 39).tolist() == [0, 0, 0, 1]   # all three past the end read safe
    floor[39] = True
    assert sensors(floor, 36).tolist() == [1, 0, 1, 1]
    assert sensors(floor, 38).tolist() == [1, 0, 0, 1]
    # pattern_index agrees with sensors on every tile
    idx = pattern_index(floor)
    for pos in range(N_TILES):
        s = sensors(floor, pos)
        assert idx[pos] == 4 * s[0] + 2 * s[1] + s[2]
    with pytest.raises(ValueError, match="pos"):
        sensors(floor, 40)


def test_policy_is_softmax_and_takes_stacks():
    W = np.array([[1.0, -1.0], [0.5, 0.0], [0.0, 2.0], [0.3, 0.1]])
    S = lava.PATTERNS
    p = policy_probs(W, S)
    logits = S @ W
    expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(p, expected, rtol=1e-12)
    np.testing.assert_allclose(policy_probs(W, S[3]), expected[3])
    assert policy_probs(W, S[None, None]).shape == (1, 1, 8, 2)
    np.testing.assert_allclose(policy_probs(np.zeros((4, 2)), S), 0.5)
    # max-shift: huge logits stay finite
    assert np.isfinite(policy_probs(np.full((4, 2), 1e4) * [1, -1], S)).all()
    np.testing.assert_allclose(leap_probs(W), expected[:, 1])


def test_play_records_a_consistent_run():
    rng = np.random.default_rng(0)
    floor = held_out_floors()[0]
    for run in play_group(floor, np.zeros((4, 2)), 50, rng):
        assert len(run.sensors) == len(run.moves) == len(run.path) - 1
        steps = np.diff(run.path)
        assert set(steps[run.moves == 0]) <= {1} and set(steps[run.moves == 1]) <= {2, 3}
        assert not floor[run.path[:-1]].any(), "only the final tile can be lava"
        end = run.final_tile
        assert end >= EXIT or floor[end]
        assert run.score == min(end, EXIT) / EXIT
        for pos, s in zip(run.path[:-1], run.sensors):
            np.testing.assert_array_equal(s, sensors(floor, pos))


def test_play_is_reproducible_from_the_seed():
    floor = held_out_floors()[3]
    a = play(floor, np.zeros((4, 2)), np.random.default_rng(7))
    b = play(floor, np.zeros((4, 2)), np.random.default_rng(7))
    np.testing.assert_array_equal(a.path, b.path)


def test_exact_matches_monte_carlo():
    floors = held_out_floors()[:40]
    W = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.3, -0.2]])
    W[0] = [-1.0, 1.5]                  # leaning towards "leap if lava ahead"
    exact = exact_score(floors, W)
    mc = monte_carlo_score(floors, W, 4000, np.random.default_rng(1))
    # 4000 runs per floor: standard error <= 0.5/sqrt(4000) ~ 0.008 per floor; means much tighter
    assert np.abs(exact.score - mc.score).max() < 0.035
    assert abs(exact.mean_score - mc.score.mean()) < 0.004
    assert abs(exact.exit_rate - mc.exit.mean()) < 0.004


def test_exact_by_hand_on_a_one_channel_floor():
    floor = np.zeros(N_TILES, dtype=bool)
    floor[20:22] = True                 # one two-tile channel
    always_step = np.zeros(8)
    ev = exact_score(floor, always_step)
    assert ev.score == pytest.approx(20 / 39) and ev.exit == 0.0
    leap_iff_lava_ahead = np.zeros(8)
    leap_iff_lava_ahead[[4, 5, 6, 7]] = 1
    ev = exact_score(floor, leap_iff_lava_ahead)
    assert ev.exit == pytest.approx(0.5)            # the 50/50 crossing
    assert ev.score == pytest.approx(0.5 + 0.5 * 21 / 39)


def test_exact_shapes_and_policy_forms():
    floors = held_out_floors()[:5]
    W = np.zeros((4, 2))
    assert exact_score(floors, W).score.shape == (5,)
    assert exact_score(floors[0], W).score.shape == ()
    assert exact_score(floors, np.full(8, 0.5)).score.shape == (5,)
    assert exact_score(floors, deterministic_policies()).score.shape == (256, 5)
    np.testing.assert_allclose(exact_score(floors, W).score,
                               exact_score(floors, np.full(8, 0.5)).score)


def test_enumeration_covers_all_256_policies():
    D = deterministic_policies()
    assert D.shape == (256, 8)
    assert set(np.unique(D)) == {0.0, 1.0}
    assert len({tuple(row) for row in D}) == 256


def test_test_floors_are_fixed_and_read_only():
    F = held_out_floors()
    assert F.shape == (200, N_TILES)
    assert held_out_floors() is F
    with pytest.raises(ValueError):
        F[0, 10] = True
    # pinned: a change to make_floor or to the seed changes every chapter's numbers
    digest = hashlib.sha256(np.ascontiguousarray(F).tobytes()).hexdigest()
    assert digest == "38e664e6cb237a2d63a14b7e0c4abb76591a599756eb1dd849fac4b333d54128"


@pytest.mark.parametrize("W, match", [
    (np.zeros((2, 4)), "shape"),
    (np.zeros((4, 3)), "shape"),
    (np.array([[np.nan, 0]] * 4), "NaN"),
    (np.array([[np.inf, 0]] * 4), "NaN"),
])
def test_bad_weights_raise(W, match):
    with pytest.raises(ValueError, match=match):
        policy_probs(W, lava.PATTERNS)
    with pytest.raises(ValueError, match=match):
        play(held_out_floors()[0], W, np.random.default_rng(0))
    with pytest.raises(ValueError, match=match):
        exact_score(held_out_floors()[:2], W)


@pytest.mark.parametrize("floor", [np.zeros(39, bool), np.zeros(41, bool), np.zeros((40, 2)),
                                   np.full(40, 2), np.r_[True, np.zeros(39, bool)]])
def test_bad_floor_raises(floor):
    with pytest.raises(ValueError, match="floor|tile 0"):
        check_floor(floor)
    with pytest.raises(ValueError):
        play(floor, np.zeros((4, 2)), np.random.default_rng(0))


def test_bad_policy_table_and_sensors_raise():
    with pytest.raises(ValueError, match="policy must have shape"):
        exact_score(held_out_floors()[:2], np.zeros(7))
    with pytest.raises(ValueError, match="probabilities"):
        exact_score(held_out_floors()[:2], np.full(8, 1.5))
    with pytest.raises(ValueError, match="sensor rows"):
        policy_probs(np.zeros((4, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="G"):
        play_group(held_out_floors()[0], np.zeros((4, 2)), 0, np.random.default_rng(0))


def test_omniscient_bound_dominates_every_policy_and_meets_the_ceiling():
    floors = held_out_floors()
    bound = lava.omniscient_score(floors)
    all_det = exact_score(floors, deterministic_policies())
    assert (all_det.score <= bound.score + 1e-12).all()
    rng = np.random.default_rng(5)
    for _ in range(20):
        W = rng.normal(scale=3, size=(4, 2))
        assert (exact_score(floors, W).score <= bound.score + 1e-12).all()
    c = lava.ceiling(floors)
    assert c.score == pytest.approx(bound.mean_score, abs=1e-12)
    assert c.n_tied >= 1 and c.policy.shape == (8,)


def reference_run(floor, W, coins):
    """The rules, played the slow and obvious way: sensors() and policy_probs() on every tile."""
    pos, path, moves = 0, [0], []
    for u_policy, u_leap in coins:
        p = policy_probs(W, sensors(floor, pos))
        move = lava.LEAP if u_policy < p[lava.LEAP] else lava.STEP
        pos += 1 if move == lava.STEP else (2 if u_leap < 0.5 else 3)
        moves.append(move)
        path.append(pos)
        if pos >= EXIT or floor[pos]:
            break
    return path, moves


def test_fast_player_matches_the_rules_played_slowly():
    rng = np.random.default_rng(11)
    for _ in range(150):
        W = rng.normal(scale=2.0, size=(4, 2))
        floor = make_floor(rng)
        seed, G = int(rng.integers(2**31)), int(rng.integers(1, 10))
        coins = np.random.default_rng(seed).random((G, EXIT, 2))
        group = lava.play_steps(floor, W, G, np.random.default_rng(seed))
        assert group.G == G and group.N == len(group.moves)
        for g, run in enumerate(group.as_runs()):
            path, moves = reference_run(floor, W, coins[g])
            assert run.path.tolist() == path and run.moves.tolist() == moves
            assert run.score == min(path[-1], EXIT) / EXIT
        again = lava.steps_from_runs(group.as_runs())      # the two layouts round-trip
        for key in ("S", "moves", "run", "scores", "final_tiles", "tiles"):
            np.testing.assert_array_equal(getattr(again, key), getattr(group, key))
