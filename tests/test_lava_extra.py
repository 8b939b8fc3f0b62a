"""lava.make_wide_floor: make_floor's rules with every channel two tiles wide."""
import numpy as np
import pytest

from grpo.toy import lava


def test_wide_floors_follow_the_rules_with_every_channel_two_wide():
    rng = np.random.default_rng(0)
    ks = set()
    for _ in range(3000):
        floor = lava.make_wide_floor(rng)
        assert floor.shape == (lava.N_TILES,) and floor.dtype == bool
        chans = lava.channels(floor)
        ks.add(len(chans))
        assert all(w == 2 for _, w in chans)
        tiles = np.flatnonzero(floor)
        assert tiles.min() >= lava.LAVA_ZONE[0] and tiles.max() <= lava.LAVA_ZONE[1]
        for (s1, w1), (s2, _) in zip(chans, chans[1:]):
            assert s2 - (s1 + w1) >= 2
    assert ks == {3, 4, 5, 6, 7}


def test_on_wide_floors_the_best_exit_probability_is_two_to_the_minus_k():
    rng = np.random.default_rng(1)
    floors = np.stack([lava.make_wide_floor(rng) for _ in range(300)])
    best = lava.ceiling(floors)
    k = np.array([len(lava.channels(f)) for f in floors])
    exact = lava.exact_score(floors, best.policy)
    np.testing.assert_allclose(exact.exit, 0.5 ** k, rtol=1e-12)
    assert best.score < lava.ceiling().score


def test_best_moves_is_leap_if_and_only_if_lava_directly_ahead():
    best = lava.best_moves()
    assert len(best) == 8
    named = dict(zip(lava.PATTERN_NAMES, best))
    assert named["L.."] == named["LL."] == "LEAP"
    assert named["..L"] == named[".L."] == named[".LL"] == "STEP"
    assert named["L.L"] == named["LLL"] == "either"      # these patterns never occur
    # a deterministic policy that follows every agreed entry scores the ceiling
    table = np.array([1.0 if m == "LEAP" else 0.0 for m in best])
    assert lava.exact_score(lava.held_out_floors(), table).mean_score == \
        pytest.approx(lava.ceiling().score, abs=1e-12)
