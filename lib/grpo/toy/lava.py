"""The lava-leap game: floors, sensors, the softmax policy, play, and exact evaluation.

A floor is a boolean array of 40 tiles (True = lava). The bot starts on tile 0 and wants tile 39.
Its only feedback is the score ``min(final_tile, 39) / 39``, given once when the run ends.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

N_TILES = 40
EXIT = 39                  # the exit dock; reaching it (or beyond) ends the run with score 1
LAVA_ZONE = (5, 36)        # every lava tile lies in this closed range
STEP, LEAP = 0, 1
MOVES = ("STEP", "LEAP")
N_SENSORS = 4              # lava at pos+1, pos+2, pos+3, and a constant 1.0 bias
TEST_FLOOR_SEED = 20_250_401
N_TEST_FLOORS = 200

# The 8 sensor situations, indexed by 4*lava(+1) + 2*lava(+2) + lava(+3), each with its bias 1.0.
PATTERNS = np.array([[(i >> 2) & 1, (i >> 1) & 1, i & 1, 1] for i in range(8)], dtype=float)
# A name per pattern, the three tiles ahead read left to right: "L.." is lava directly ahead.
PATTERN_NAMES = tuple("".join("L" if b else "." for b in row[:3].astype(int)) for row in PATTERNS)


# ---------------------------------------------------------------------------------------------
# Floors and sensors
# ---------------------------------------------------------------------------------------------
def check_rng(rng) -> np.random.Generator:
    """Every random draw takes an explicit ``np.random.Generator`` (a seed int is a TypeError)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a np.random.Generator (np.random.default_rng(seed)), "
                        f"got {type(rng).__name__}")
    return rng


def make_floor(rng: np.random.Generator, all_wide: bool = False) -> np.ndarray:
    """Draw one floor: 3-7 lava channels, 1 or 2 tiles wide, >= 2 safe tiles apart.

    ``all_wide`` makes every channel two tiles wide (a "Try this" variant of chapter 4).
    """
    check_rng(rng)
    k = int(rng.integers(3, 8))                    # channels, uniform on {3..7}
    widths = np.full(k, 2) if all_wide else rng.integers(1, 3, size=k)   # 1 or 2 tiles wide
    spare = 32 - int(widths.sum()) - 2 * (k - 1)   # safe tiles for the k+1 gaps
    gaps = rng.multinomial(spare, np.full(k + 1, 1.0 / (k + 1)))
    floor = np.zeros(N_TILES, dtype=bool)
    start = LAVA_ZONE[0] + gaps[0]
    for i, w in enumerate(widths):
        floor[start:start + w] = True
        if i + 1 < k:
            start = start + w + 2 + gaps[i + 1]
    return floor


def make_floors(n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` floors as an (n, 40) boolean array."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1 (the number of floors), got {n!r}")
    check_rng(rng)
    return np.stack([make_floor(rng) for _ in range(n)])


@lru_cache(maxsize=1)
def _held_out_floors() -> np.ndarray:
    floors = make_floors(N_TEST_FLOORS, np.random.default_rng(TEST_FLOOR_SEED))
    floors.setflags(write=False)
    return floors


def held_out_floors() -> np.ndarray:
    """The 200 held-out test floors shared by every chapter (read-only, never trained on)."""
    return _held_out_floors()


def channels(floor: np.ndarray) -> list[tuple[int, int]]:
    """The lava channels of one floor as (first tile, width) pairs."""
    floor = check_floor(floor)
    edges = np.diff(np.concatenate([[0], floor.astype(int), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(s), int(e - s)) for s, e in zip(starts, ends)]


def sensors(floor: np.ndarray, pos: int) -> np.ndarray:
    """The bot's 4 readings on tile ``pos``: lava at
    pos+1, pos+2, pos+3 (past 39 reads safe), 1.0."""
    floor = check_floor(floor)
    if isinstance(pos, bool) or not isinstance(pos, (int, np.integer)):
        raise TypeError(f"pos must be an integer tile, got {pos!r}")
    if not 0 <= pos < N_TILES:
        raise ValueError(f"pos must be a tile in 0..{N_TILES - 1}, got {pos}")
    ahead = [bool(floor[t]) if t < N_TILES else False for t in (pos + 1, pos + 2, pos + 3)]
    return np.array([*ahead, True], dtype=float)


def pattern_index(floors: np.ndarray) -> np.ndarray:
    """Sensor pattern (0..7) on every tile: same shape as ``floors``."""
    floors = check_floor(floors, batch=True)
    padded = np.concatenate([floors, np.zeros(floors.shape[:-1] + (3,), dtype=bool)], axis=-1)
    a, b, c = (padded[..., i:i + N_TILES].astype(np.int64) for i in (1, 2, 3))
    return 4 * a + 2 * b + c


def pattern_name(s) -> str:
    """The pattern name ("L..", ...) of one sensor row (4,)."""
    s = np.asarray(s, dtype=float)
    if s.shape != (N_SENSORS,) or not np.isin(s[:3], (0, 1)).all():
        raise ValueError(f"a sensor row is (4,) with 0/1 readings, got {s.tolist()}")
    return PATTERN_NAMES[int(4 * s[0] + 2 * s[1] + s[2])]


def pattern_counts(floors) -> np.ndarray:
    """How often each of the 8 sensor patterns occurs on the safe tiles of ``floors`` (8,)."""
    floors = check_floor(floors, batch=True)
    return np.bincount(pattern_index(floors)[~floors].ravel(), minlength=len(PATTERNS))


def check_floor(floor, batch: bool = False) -> np.ndarray:
    """Validate a floor (40,) or, with ``batch``, a stack of floors (..., 40); return it as bool."""
    arr = np.asarray(floor)
    if arr.ndim == 0 or arr.shape[-1] != N_TILES or (not batch and arr.ndim != 1):
        want = "(..., 40)" if batch else "(40,)"
        raise ValueError(f"a floor must have shape {want}, got {arr.shape}")
    if arr.size == 0:
        raise ValueError("the floor set is empty")
    if arr.dtype != bool:
        if not np.isin(arr, (0, 1)).all():
            raise ValueError("a floor holds only 0/1 or False/True (True = lava)")
        arr = arr.astype(bool)
    if arr[..., 0].any():
        raise ValueError("tile 0 is the start and cannot be lava")
    return arr


# ---------------------------------------------------------------------------------------------
# The policy: pi(.|s) = softmax(s @ W)
# ---------------------------------------------------------------------------------------------
def check_weights(W) -> np.ndarray:
    W = np.asarray(W, dtype=float)
    if W.shape != (N_SENSORS, 2):
        raise ValueError(f"W must have shape (4, 2): one row per sensor, one column per move; "
                         f"got {W.shape}")
    if not np.isfinite(W).all():
        raise ValueError("W contains NaN or inf")
    return W


def policy_probs(W, S) -> np.ndarray:
    """pi(.|s) = softmax(s @ W), max-shifted; ``S`` is one sensor row (4,) or a stack (..., 4)."""
    W, S = check_weights(W), check_sensor_rows(S)
    logits = S @ W
    logits = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(axis=-1, keepdims=True)


def check_sensor_rows(S) -> np.ndarray:
    """Validate sensor rows (4,) or (..., 4), finite; return them as floats."""
    S = np.asarray(S, dtype=float)
    if S.ndim == 0 or S.shape[-1] != N_SENSORS:
        raise ValueError(f"sensor rows must have shape (..., 4), got {S.shape}")
    if not np.isfinite(S).all():
        raise ValueError("sensor rows contain NaN or inf")
    return S


def leap_probs(W) -> np.ndarray:
    """The LEAP probability in each of the 8 sensor patterns: the whole policy as a table."""
    return policy_probs(W, PATTERNS)[:, LEAP]


# ---------------------------------------------------------------------------------------------
# Playing
# ---------------------------------------------------------------------------------------------
@dataclass
class Run:
    """One run: the sensor rows seen, the moves taken, the tiles visited, and the score."""
    sensors: np.ndarray     # (T, 4)
    moves: np.ndarray       # (T,) STEP=0 / LEAP=1
    path: np.ndarray        # (T+1,) tiles, from 0 to the final tile (which may be past 39)
    score: float

    @property
    def final_tile(self) -> int:
        return int(self.path[-1])

    @property
    def exited(self) -> bool:
        return self.final_tile >= EXIT


@dataclass
class Steps:
    """A group of G runs of one floor, flattened: one row per step, in run order."""
    S: np.ndarray             # (N, 4) sensor rows
    moves: np.ndarray         # (N,) STEP=0 / LEAP=1
    run: np.ndarray           # (N,) which run (0..G-1) each step belongs to
    scores: np.ndarray        # (G,) each run's score
    final_tiles: np.ndarray   # (G,) where each run ended (>= 39: exited)
    tiles: np.ndarray         # (N,) the tile each step was taken from

    @property
    def G(self) -> int:
        return len(self.scores)

    @property
    def N(self) -> int:
        return len(self.moves)

    def as_runs(self) -> list[Run]:
        """The group as one ``Run`` per run (for reading one run, or drawing it)."""
        cuts = np.cumsum(np.bincount(self.run, minlength=self.G))[:-1]
        return [Run(sensors=S, moves=m, path=np.r_[t, end], score=float(score))
                for S, m, t, end, score in zip(np.split(self.S, cuts), np.split(self.moves, cuts),
                                               np.split(self.tiles, cuts), self.final_tiles,
                                               self.scores)]


def steps_from_runs(runs) -> Steps:
    """Flatten a list of ``Run`` into ``Steps`` (the inverse of ``Steps.as_runs``)."""
    if len(runs) == 0:
        raise ValueError("the group is empty")
    return Steps(S=np.concatenate([r.sensors for r in runs]),
                 moves=np.concatenate([r.moves for r in runs]),
                 run=np.concatenate([np.full(len(r.moves), i) for i, r in enumerate(runs)]),
                 scores=np.array([r.score for r in runs]),
                 final_tiles=np.array([r.final_tile for r in runs]),
                 tiles=np.concatenate([r.path[:-1] for r in runs]))


def play_steps(floor, policy, G: int, rng: np.random.Generator) -> Steps:
    """Play ``floor`` G times with one policy; return the group flattened into steps.

    ``policy`` is the weight matrix W (4, 2) or a LEAP-probability table (8,). Each run draws
    its 39 pairs of coins (policy, leap) up front, so the random stream does not depend on how
    long earlier runs lasted. This loop is the training's hot spot (see bench/).
    """
    floor, table = _check_play_args(floor, policy, G, rng)
    pattern = pattern_index(floor)                          # (40,) sensor pattern on every tile
    p_leap = table[0][pattern].tolist()                     # LEAP probability on every tile
    is_lava = floor.tolist()
    # one flat list of floats: (policy coin, leap coin) pairs, 39 pairs per run, run after run
    coins = rng.random(int(G) * EXIT * 2).tolist()
    tiles, moves, run, final = [], [], [], []
    for g in range(int(G)):
        pos = 0
        for k in range(2 * EXIT * g, 2 * EXIT * (g + 1), 2):
            u_policy, u_leap = coins[k], coins[k + 1]
            tiles.append(pos)
            run.append(g)
            if u_policy < p_leap[pos]:                      # LEAP: 2 or 3 tiles, a fair coin
                moves.append(LEAP)
                pos += 2 if u_leap < 0.5 else 3
            else:                                           # STEP: 1 tile
                moves.append(STEP)
                pos += 1
            if pos >= EXIT or is_lava[pos]:                 # the dock, or lava: the run ends
                break
        final.append(pos)
    tiles, final = np.array(tiles, dtype=np.int64), np.array(final, dtype=np.int64)
    return Steps(S=PATTERNS[pattern[tiles]], moves=np.array(moves, dtype=np.int64),
                 run=np.array(run, dtype=np.int64), scores=np.minimum(final, EXIT) / EXIT,
                 final_tiles=final, tiles=tiles)


# play_steps keeps the coins in one flat list of floats on purpose: a nested list would be one
# tracked object per step, and Python's garbage collector slows down badly when a notebook's
# heap is large (see bench/).
def _check_play_args(floor, policy, G, rng):
    floor = check_floor(floor)
    if isinstance(G, bool) or not isinstance(G, (int, np.integer)) or G < 1:
        raise ValueError(f"G must be a positive integer, got {G!r}")
    check_rng(rng)
    table = _policy_table(policy)
    if len(table) != 1:
        raise ValueError("play one policy at a time: W (4, 2) or a LEAP table (8,)")
    return floor, table


def play_group(floor, policy, G: int, rng: np.random.Generator) -> list[Run]:
    """Play ``floor`` G times with the same policy (GRPO's group), one ``Run`` per run."""
    return play_steps(floor, policy, G, rng).as_runs()


def play(floor, policy, rng: np.random.Generator) -> Run:
    """Play one run of ``floor`` with ``policy`` (weights W, or a LEAP table (8,))."""
    return play_group(floor, policy, 1, rng)[0]


# ---------------------------------------------------------------------------------------------
# Exact evaluation
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Evaluation:
    """Expected score and exit probability per floor (and per policy, for a batch of policies).

    The floor axis is always kept, last: ``score_by_floor`` is (F,) or (P, F), also for one floor
    (F = 1), so ``mean_score`` averages over floors only, never over policies. ``score`` and
    ``exit`` drop that axis when one floor (40,) was evaluated.
    """
    score_by_floor: np.ndarray
    exit_by_floor: np.ndarray
    single_floor: bool = False

    @property
    def score(self) -> np.ndarray:
        return self.score_by_floor[..., 0] if self.single_floor else self.score_by_floor

    @property
    def exit(self) -> np.ndarray:
        return self.exit_by_floor[..., 0] if self.single_floor else self.exit_by_floor

    @property
    def mean_score(self):
        return self.score_by_floor.mean(axis=-1)

    @property
    def exit_rate(self):
        return self.exit_by_floor.mean(axis=-1)


def exact_score(floors, policy) -> Evaluation:
    """Exact expected score and exit probability of a stochastic policy, on one or many floors.

    ``policy`` is a weight matrix W (4, 2), a LEAP-probability table (8,) over sensor patterns,
    or a batch of tables (P, 8). The only randomness in a run is coin flips, so one sweep backwards
    over the tiles (dynamic programming) computes the expectation: the value of tile t is
    ``(1-q) * V[t+1] + q * (V[t+2] + V[t+3]) / 2``, with q the LEAP probability on t, V = t/39 on
    lava and V = 1 at or past 39. Returns arrays of shape (F,) or (P, F).
    """
    floors = check_floor(floors, batch=True)
    single_floor = floors.ndim == 1
    floors = np.atleast_2d(floors)
    q_tile = _policy_table(policy)[:, pattern_index(floors)]      # (P, F, 40) LEAP prob per tile
    score, exit_prob = tile_values(floors, q_tile)
    if np.ndim(policy) != 2 or np.shape(policy) == (N_SENSORS, 2):
        score, exit_prob = score[0], exit_prob[0]                  # one policy: drop the P axis
    return Evaluation(score, exit_prob, single_floor)


def omniscient_score(floors) -> Evaluation:
    """The best expected score of a bot that knows its tile and the whole floor (an upper bound).

    The same backward sweep as ``exact_score``, taking the better move on every tile; the exit
    probability reported is that of the score-maximising choices.
    """
    floors = check_floor(floors, batch=True)
    single_floor = floors.ndim == 1
    score, exit_prob = tile_values(np.atleast_2d(floors), None)
    return Evaluation(score[0], exit_prob[0], single_floor)


def tile_values(floors, q_tile):
    """Expected score and exit probability from tile 0, filling tiles 38 down to 0.

    Dynamic programming over the tiles. ``q_tile`` (P, F, 40) holds the LEAP probability on every
    tile; ``None`` takes the better move on every tile instead. Lava tiles are worth t/39 and exit
    0; tiles 39..42 are worth 1.
    """
    floors, q_tile = _check_tile_values_args(floors, q_tile)
    P = 1 if q_tile is None else q_tile.shape[0]
    value = np.ones((P, len(floors), N_TILES + 3))
    exit_ = np.ones((P, len(floors), N_TILES + 3))
    for t in range(EXIT - 1, -1, -1):
        v_step, v_leap = value[..., t + 1], 0.5 * (value[..., t + 2] + value[..., t + 3])
        e_step, e_leap = exit_[..., t + 1], 0.5 * (exit_[..., t + 2] + exit_[..., t + 3])
        if q_tile is None:
            q = (v_leap > v_step).astype(float)
        else:
            q = q_tile[..., t]
        value[..., t] = np.where(floors[:, t], t / EXIT, (1 - q) * v_step + q * v_leap)
        exit_[..., t] = np.where(floors[:, t], 0.0, (1 - q) * e_step + q * e_leap)
    return value[..., 0], exit_[..., 0]


def _check_tile_values_args(floors, q_tile):
    floors = np.atleast_2d(check_floor(floors, batch=True))
    if q_tile is None:
        return floors, None
    q = np.asarray(q_tile)
    if q.ndim != 3 or q.shape[1:] != floors.shape:
        raise ValueError(f"q_tile must have shape (P, {len(floors)}, 40), got {q.shape}")
    if not np.issubdtype(q.dtype, np.number) or np.issubdtype(q.dtype, np.complexfloating):
        raise TypeError(f"q_tile holds LEAP probabilities (real numbers), got dtype {q.dtype}")
    q = q.astype(float)
    if not np.isfinite(q).all() or (q < 0).any() or (q > 1).any():
        raise ValueError("q_tile holds LEAP probabilities in [0, 1] (no NaN or inf)")
    return floors, q


def _policy_table(policy) -> np.ndarray:
    arr = np.asarray(policy, dtype=float)
    if arr.shape == (N_SENSORS, 2):
        return leap_probs(arr)[None]
    if arr.ndim in (1, 2) and arr.shape[-1] == len(PATTERNS):
        if not np.isfinite(arr).all() or (arr < 0).any() or (arr > 1).any():
            raise ValueError("a LEAP-probability table holds probabilities in [0, 1]")
        return np.atleast_2d(arr)
    raise ValueError(f"policy must have shape (4, 2) (weights W) or (8,) / (P, 8) (LEAP tables), "
                     f"got {arr.shape}")


def deterministic_policies() -> np.ndarray:
    """All 2**8 = 256 deterministic policies as LEAP tables (256, 8): bit j of i = leap on j."""
    i = np.arange(2 ** len(PATTERNS))[:, None]
    return ((i >> np.arange(len(PATTERNS))) & 1).astype(float)


def monte_carlo_score(floors, policy, n_runs: int, rng: np.random.Generator) -> Evaluation:
    """Mean score and exit rate per floor from ``n_runs`` sampled runs (a check on exact_score)."""
    floors = check_floor(floors, batch=True)
    single_floor = floors.ndim == 1
    if isinstance(n_runs, bool) or not isinstance(n_runs, (int, np.integer)) or n_runs < 1:
        raise ValueError(f"n_runs must be a positive integer, got {n_runs!r}")
    check_rng(rng)
    groups = [play_steps(f, policy, n_runs, rng) for f in np.atleast_2d(floors)]
    return Evaluation(np.array([g.scores.mean() for g in groups]),
                      np.array([(g.final_tiles >= EXIT).mean() for g in groups]), single_floor)


@dataclass
class Ceiling:
    """The best deterministic policy on a floor set: its score, exit rate and LEAP table."""
    score: float
    exit_rate: float
    policy: np.ndarray          # (8,) LEAP table of the first of the tied best policies
    n_tied: int


def ceiling(floors=None) -> Ceiling:
    """Score all 256 deterministic policies exactly and return the best (default: test floors).

    No stochastic policy can beat it: a stochastic policy's expected score is a mixture of
    deterministic ones' on each tile, so the best deterministic policy is optimal.
    """
    floors = held_out_floors() if floors is None else floors
    ev = exact_score(floors, deterministic_policies())
    scores = ev.mean_score
    best = np.flatnonzero(np.isclose(scores, scores.max(), rtol=0, atol=1e-12))
    return Ceiling(score=float(scores[best[0]]), exit_rate=float(ev.exit_rate[best[0]]),
                   policy=deterministic_policies()[best[0]], n_tied=len(best))


def make_wide_floor(rng: np.random.Generator) -> np.ndarray:
    """``make_floor`` with every channel two tiles wide: each crossing is then a 50/50 leap that
    no policy can improve, so the best exit probability on a floor with k channels is 2**-k."""
    return make_floor(rng, all_wide=True)


def best_moves(floors=None) -> tuple[str, ...]:
    """The best move in each of the 8 sensor patterns, read off all tied best policies.

    "LEAP" or "STEP" where every tied best deterministic policy agrees, "either" where they
    differ (the choice never changes the score on ``floors``; default: the test floors).
    """
    floors = held_out_floors() if floors is None else floors
    scores = exact_score(floors, deterministic_policies()).mean_score
    tied = deterministic_policies()[np.isclose(scores, scores.max(), rtol=0, atol=1e-12)]
    return tuple("either" if len(set(col)) > 1 else MOVES[int(col[0])] for col in tied.T)
