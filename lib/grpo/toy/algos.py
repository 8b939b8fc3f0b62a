"""The training algorithms of chapters 2-4: REINFORCE, PPO with a critic, and GRPO.

Plain NumPy. Each algorithm is one flat function (``train_reinforce``, ``train_ppo``,
``train_grpo``) that reads top to bottom with its hyperparameters in its signature. The pieces
they share live here once:

* ``grad_log_pi``: the closed-form gradient of log pi(a|s) for the softmax policy,
* ``policy_gradient``: the mean of weight * grad log pi over a batch of steps (REINFORCE's update),
* ``clipped_update``: PPO's clipped surrogate, used unchanged by PPO and by GRPO (where it
  engages: ``grpo.objectives.clip_mask``),
* ``grpo_advantages``: the group-normalised advantage, GRPO's replacement for the critic (it
  lives in ``grpo.objectives``, shared with the lander and the language model),
* ``fit_critic``: PPO's linear critic, fitted by least squares,

Playing a group (``lava.play_steps``: G runs of one floor, flattened into the step arrays the
updates consume) belongs to the game, in ``lava``.

The shared protocol (chapters 2-4): 300 updates; each update draws a fresh floor from the
training seed's generator and plays it G = 8 times; lr 0.5; W starts at 0; every 10 updates the
policy is scored exactly on the 200 test floors.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from grpo import checks
from grpo.toy import lava
from .lava import N_SENSORS, play_steps
from grpo.objectives import clip_mask, grpo_advantages

# ---------------------------------------------------------------------------------------------
# Input checks (every public function validates what it is given)
# ---------------------------------------------------------------------------------------------


def _check_batch(W, S, moves, **per_step):
    """Validate W, sensor rows S (N, 4) and moves (N,), plus any per-step arrays given by name."""
    W, S, moves = _check_steps(W, S, moves)
    if not per_step:
        return W, S, moves
    return (W, S, moves, *(_check_per_step(k, x, len(S)) for k, x in per_step.items()))


def _check_steps(W, S, moves):
    W = lava.check_weights(W)
    S = np.asarray(S, dtype=float)
    moves = np.asarray(moves)
    if S.ndim != 2 or S.shape[1] != N_SENSORS:
        raise ValueError(f"S must be a stack of sensor rows of shape (N, 4), got {S.shape}")
    if len(S) == 0:
        raise ValueError("the batch is empty: there are no steps to learn from")
    if not np.isfinite(S).all():
        raise ValueError("S contains NaN or inf")
    if moves.shape != (len(S),):
        raise ValueError(f"moves must have shape (N,) = ({len(S)},) to match S, got {moves.shape}")
    if not ((moves == lava.STEP) | (moves == lava.LEAP)).all():
        raise ValueError("moves hold only 0 (STEP) or 1 (LEAP)")
    return W, S, moves.astype(np.int64)


def _check_per_step(name, x, n):
    x = np.asarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"{name} must have one value per step, shape ({n},), got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or inf")
    return x


def _check_update_args(W, S, moves, adv, lr, eps, passes, trace, divisors):
    """All of ``clipped_update``'s input checks; returns the arrays it works on."""
    W, S, moves = _check_batch(W, S, moves)
    adv = _check_per_step("adv", adv, len(S))
    checks.positive("lr", lr)
    checks.non_negative("eps", eps)
    checks.integer("passes", passes, minimum=1)
    if trace is not None and not isinstance(trace, list):
        raise ValueError("trace must be a list (it receives one PassTrace per pass) or None")
    if divisors is None:
        divisors = np.full(len(S), len(S))
    divisors = _check_per_step("divisors", divisors, len(S))
    if (divisors <= 0).any():
        raise ValueError("divisors must be > 0")
    return W, S, moves, adv, divisors


# ---------------------------------------------------------------------------------------------
# The gradient of log pi, and the plain policy gradient (REINFORCE)
# ---------------------------------------------------------------------------------------------
def grad_log_pi(W, S, moves) -> np.ndarray:
    """d log pi(a|s) / dW = outer(s, onehot(a) - pi(.|s)), one (4, 2) matrix per step.

    ``S`` is one sensor row (4,) with one move, or a stack (N, 4) with N moves; returns (4, 2) or
    (N, 4, 2). Only the rows of W whose sensor reads 1 get a gradient; in each, the taken move's
    column goes up by 1 - pi(a|s) and the other goes down by as much.
    """
    single = np.ndim(S) == 1
    W, S, moves = _check_batch(W, np.atleast_2d(S), np.atleast_1d(moves))
    pi = lava.policy_probs(W, S)                       # (N, 2)
    onehot = np.eye(2)[moves]                          # (N, 2)
    g = S[:, :, None] * (onehot - pi)[:, None, :]      # (N, 4, 2): outer(s, onehot(a) - pi)
    g = g + 0.0                                        # rows whose sensor is 0: -0.0 -> 0.0
    return g[0] if single else g


def policy_gradient(W, S, moves, weights) -> np.ndarray:
    """The mean over the N steps of weight * grad log pi(a|s): a (4, 2) ascent direction.

    REINFORCE uses each step's run score as its weight: W += lr * policy_gradient(W, S, moves,
    score). With an advantage as the weight it is the plain advantage-weighted policy gradient.
    """
    W, S, moves, weights = _check_batch(W, S, moves, weights=weights)
    coef = weights / len(S)
    onehot = np.eye(2)[moves]
    # sum_n coef_n * grad_log_pi(W, s_n, a_n) as one (4, N) @ (N, 2) product
    return S.T @ (coef[:, None] * (onehot - lava.policy_probs(W, S)))


# ---------------------------------------------------------------------------------------------
# The clipped update (PPO and GRPO)
# ---------------------------------------------------------------------------------------------
@dataclass
class PassTrace:
    """What one pass of ``clipped_update`` saw and did (a list of these is the update's trace)."""
    pass_no: int              # 1, 2, ...
    W: np.ndarray             # (4, 2) the weights this pass started from
    pi: np.ndarray            # (N, 2) pi(.|s) under W
    pi_old: np.ndarray        # (N,) pi_old(a|s): the policy that played, frozen
    rho: np.ndarray           # (N,) pi(a|s) / pi_old(a|s)
    clipped: np.ndarray       # (N,) bool: the clipped branch won, so the step gets no gradient
    coef: np.ndarray          # (N,) A * rho / d (d = N by default), or 0 where clipped
    grad: np.ndarray          # (4, 2) sum over steps of coef * grad log pi
    W_after: np.ndarray       # (4, 2) W + lr * grad


def clipped_update(W, S, moves, adv, lr: float, eps: float = 0.2, passes: int = 4,
                   trace: list | None = None, divisors=None) -> np.ndarray:
    """PPO's clipped surrogate, ascended ``passes`` times over one batch; returns the new W.

    Each step contributes ``min(rho*A, clip(rho, 1-eps, 1+eps)*A)`` with
    ``rho = pi(a|s) / pi_old(a|s)`` and pi_old the policy that played (the W passed in, frozen).
    Its gradient is ``A * rho * grad log pi(a|s)`` unless the clipped branch wins, then 0. Each
    pass: ``W += lr * sum_n coef_n * grad log pi_n`` with ``coef_n = A_n * rho_n / d_n``, where
    ``d_n = N``, the mean over the batch's N steps, unless ``divisors`` gives other d (see
    ``step_divisors``). On pass 1 rho is exactly 1. ``trace``, if a list, receives one
    ``PassTrace`` per pass.
    """
    W, S, moves, adv, d = _check_update_args(W, S, moves, adv, lr, eps, passes, trace, divisors)
    steps = np.arange(len(S))
    onehot = np.eye(2)[moves]
    pi_old = lava.policy_probs(W, S)[steps, moves]          # frozen: the policy that played
    for k in range(int(passes)):
        pi = lava.policy_probs(W, S)
        rho = pi[steps, moves] / pi_old                     # exactly 1.0 on pass 1
        clipped = clip_mask(rho, adv, eps)
        coef = np.where(clipped, 0.0, adv * rho / d)        # d/dW of rho*A is A*rho*grad log pi
        grad = S.T @ (coef[:, None] * (onehot - pi))        # sum_n coef_n * grad_log_pi_n
        W_new = W + lr * grad
        if trace is not None:
            trace.append(PassTrace(k + 1, W, pi, pi_old, rho, clipped, coef, grad, W_new))
        W = W_new
    return W


# ---------------------------------------------------------------------------------------------
# Advantages and the critic
# ---------------------------------------------------------------------------------------------
def _check_critic(v):
    v = np.asarray(v, dtype=float)
    if v.shape != (N_SENSORS,) or not np.isfinite(v).all():
        raise ValueError(f"v must be a finite vector of shape (4,), got {v.shape}")
    return v


def critic_values(v, S) -> np.ndarray:
    """The linear critic's forecast V(s) = v . s for each sensor row."""
    v, S = _check_critic(v), lava.check_sensor_rows(S)
    return S @ v


def fit_critic(v, S, targets, lr: float = 0.5, passes: int = 4) -> np.ndarray:
    """``passes`` gradient steps of least squares, mean (v.s - target)^2 / 2, from v; returns v."""
    v, S, targets, passes = _check_fit_args(v, S, targets, lr, passes)
    for _ in range(passes):
        v = v - lr * ((S @ v - targets) @ S) / len(S)
    if not np.isfinite(v).all() or np.abs(v).max() > CRITIC_BLOWUP:
        raise ValueError(f"the critic diverged (|v| reached {np.abs(v).max():.3g}): critic_lr {lr} "
                         f"is too large for these sensor rows")
    return v


def _check_fit_args(v, S, targets, lr, passes):
    v = _check_critic(v)
    _, S, _, targets = _check_batch(np.zeros((N_SENSORS, 2)), S,
                                    np.zeros(len(np.atleast_1d(S)), int), targets=targets)
    checks.positive("lr", lr)
    return v, S, targets, checks.integer("passes", passes, minimum=1)


CRITIC_BLOWUP = 1e6   # a least-squares fit of scores in [0, 1] on 0/1 sensors never gets near it


# ---------------------------------------------------------------------------------------------
# The protocol: one frozen config per algorithm
# ---------------------------------------------------------------------------------------------
AVERAGING = ("batch_steps", "per_answer", "constant")


@dataclass(frozen=True)
class ReinforceConfig:
    """The shared protocol (chapters 2-4): ``updates`` fresh floors, each played G times."""
    updates: int = 300
    G: int = 8
    lr: float = 0.5
    eval_every: int = 10

    def __post_init__(self):
        _check_config(self)


@dataclass(frozen=True)
class ToyPPOConfig(ReinforceConfig):
    """PPO's protocol: the clipped update, a linear critic, and optional per-batch A normalising."""
    eps: float = 0.2
    passes: int = 4
    critic_lr: float = 0.5
    critic_passes: int = 4
    adv_norm: bool = False          # standard PPO normalises A over each batch (experiment B)


@dataclass(frozen=True)
class ToyGRPOConfig(ReinforceConfig):
    """GRPO's protocol: the clipped update, group advantages, and how the update averages steps."""
    eps: float = 0.2
    passes: int = 4
    averaging: str = "batch_steps"  # see ``step_divisors`` (experiment A)


def _check_config(c):
    checks.integer("updates", c.updates, minimum=1)
    checks.integer("G", c.G, minimum=1)
    if isinstance(c, ToyGRPOConfig) and c.G < 2:
        raise ValueError(f"GRPO compares runs within a group: G must be >= 2, got {c.G}")
    checks.positive("lr", c.lr)
    checks.integer("eval_every", c.eval_every, minimum=1)
    if isinstance(c, (ToyPPOConfig, ToyGRPOConfig)):
        checks.non_negative("eps", c.eps)
        checks.integer("passes", c.passes, minimum=1)
    if isinstance(c, ToyPPOConfig):
        checks.positive("critic_lr", c.critic_lr)
        checks.integer("critic_passes", c.critic_passes, minimum=1)
        checks.boolean("adv_norm", c.adv_norm)
    if isinstance(c, ToyGRPOConfig):
        checks.choice("averaging", c.averaging, AVERAGING)


def _config(kind, config, changes):
    """``config`` (a ``kind``) with ``changes`` applied: ``train_grpo(0, lr=0.25)``."""
    if not isinstance(config, kind):
        raise TypeError(f"config must be a {kind.__name__}, got {type(config).__name__}")
    unknown = set(changes) - {f.name for f in fields(kind)}
    if unknown:
        raise TypeError(f"{kind.__name__} has no field(s) {sorted(unknown)}")
    return replace(config, **changes)


def step_divisors(run, G: int, averaging: str = "batch_steps") -> np.ndarray:
    """Each step's divisor d_n in the update ``sum_n A_n rho_n grad log pi_n / d_n``, three ways:

    * ``"batch_steps"``: d = N, the mean over all N steps of the group (the book's and the
      post's choice);
    * ``"per_answer"``: d = G |o_i|, the mean within each run, then over the G runs
      (DeepSeekMath eq. 3);
    * ``"constant"``: d = G * 39, a fixed normaliser, the longest possible run (Dr. GRPO).
    """
    run, G = _check_runs(run, G)
    if averaging == "batch_steps":
        return np.full(len(run), len(run))
    if averaging == "per_answer":
        return G * np.bincount(run, minlength=G)[run]
    if averaging == "constant":
        return np.full(len(run), G * lava.EXIT)
    raise ValueError(f"averaging must be one of {AVERAGING}, got {averaging!r}")


def _check_runs(run, G):
    run = np.asarray(run)
    G = checks.integer("G", G, minimum=1)
    if run.ndim != 1 or len(run) == 0 or not np.issubdtype(run.dtype, np.integer) \
            or run.min() < 0 or run.max() >= G:
        raise ValueError(f"run must be a non-empty vector of run indices in 0..{G - 1}")
    return run, G


# ---------------------------------------------------------------------------------------------
# Training: one flat function per algorithm
# ---------------------------------------------------------------------------------------------
@dataclass
class TrainResult:
    """One training run: the test-score curve, the final policy, and per-update statistics."""
    algo: str
    seed: int
    config: ReinforceConfig     # the protocol it ran (a ToyPPOConfig or ToyGRPOConfig for those)
    eval_updates: np.ndarray    # (E,) update index of each evaluation: 0, 10, ..., updates
    eval_score: np.ndarray      # (E,) exact mean score on the evaluation floors (default: test)
    eval_exit: np.ndarray       # (E,) exact exit rate on the evaluation floors
    eval_W: np.ndarray          # (E, 4, 2) the policy weights at each evaluation
    W: np.ndarray               # (4, 2) the final policy weights
    v: np.ndarray | None        # (4,) the final critic (PPO only)
    n_steps: np.ndarray         # (U,) steps in each update's batch
    train_score: np.ndarray     # (U,) mean score of each update's group
    abs_adv: np.ndarray         # (U,) mean |weight| per step (REINFORCE: the score; else |A|)
    clipped: np.ndarray         # (U,) clipped step-passes in each update (0 for REINFORCE)

    @property
    def hparams(self) -> dict:
        """The config as a plain dict (what chapters write to the registry)."""
        return asdict(self.config)

    @property
    def final_score(self) -> float:
        return float(self.eval_score[-1])

    @property
    def final_exit(self) -> float:
        return float(self.eval_exit[-1])

    @property
    def mean_abs_adv(self) -> float:
        """Mean |A| per step over the whole run."""
        return float((self.abs_adv * self.n_steps).sum() / self.n_steps.sum())

    @property
    def clip_engaged_updates(self) -> int:
        """In how many updates at least one step-pass was clipped."""
        return int((self.clipped > 0).sum())

    @property
    def clip_step_pass_fraction(self) -> float:
        """Clipped step-passes over all step-passes (steps x passes) of the run."""
        passes = getattr(self.config, "passes", 1)
        return float(self.clipped.sum() / (self.n_steps.sum() * passes))


def _seeded(seed) -> np.random.Generator:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(int(seed))


def _finish(algo, seed, config, snapshots, W, v, log, eval_floors=None) -> TrainResult:
    """Score every snapshot exactly on the evaluation floors in one batched call; pack the run."""
    floors = lava.held_out_floors() if eval_floors is None else np.atleast_2d(
        lava.check_floor(eval_floors, batch=True))
    updates = sorted(snapshots)
    tables = np.stack([lava.leap_probs(snapshots[u]) for u in updates])    # (E, 8)
    ev = lava.exact_score(floors, tables)
    return TrainResult(algo, int(seed), config, np.array(updates), ev.mean_score, ev.exit_rate,
                       np.stack([snapshots[u] for u in updates]), W, v, *(np.array(log[k]) for k in
                                ("n_steps", "train_score", "abs_adv", "clipped")))


def _new_log():
    return {"n_steps": [], "train_score": [], "abs_adv": [], "clipped": []}


def _log(log, g, adv, trace):
    """One update's statistics: its steps, its group's mean score, mean |A|, clipped step-passes."""
    log["n_steps"].append(g.N)
    log["train_score"].append(g.scores.mean())
    log["abs_adv"].append(np.abs(adv).mean())
    log["clipped"].append(sum(int(p.clipped.sum()) for p in trace))


def train_reinforce(seed: int, config: ReinforceConfig = ReinforceConfig(),
                    make_floor=lava.make_floor, eval_floors=None, **changes) -> TrainResult:
    """REINFORCE: every step of every run is weighted by its run's raw score.

    W += lr * mean over the N steps of score * grad log pi(a|s). ``changes`` override fields of
    ``config`` (``train_reinforce(0, lr=0.25)``); ``eval_floors`` default to the 200 test floors.
    """
    c, rng = _config(ReinforceConfig, config, changes), _seeded(seed)
    W = np.zeros((N_SENSORS, 2))                        # the coin-flip policy
    snapshots, log = {}, _new_log()
    for u in range(c.updates):
        if u % c.eval_every == 0:
            snapshots[u] = W
        floor = make_floor(rng)                         # a fresh training floor
        g = play_steps(floor, W, c.G, rng)              # G runs, flattened into N steps
        score = g.scores[g.run]                         # each step gets its run's raw score
        W = W + c.lr * policy_gradient(W, g.S, g.moves, score)
        _log(log, g, score, [])
    snapshots[c.updates] = W
    return _finish("REINFORCE", seed, c, snapshots, W, None, log, eval_floors)


def train_ppo(seed: int, config: ToyPPOConfig = ToyPPOConfig(), make_floor=lava.make_floor,
              eval_floors=None, **changes) -> TrainResult:
    """PPO with a linear critic V(s) = v.s: A = score - V(s), the clipped update, then fit V."""
    c, rng = _config(ToyPPOConfig, config, changes), _seeded(seed)
    W = np.zeros((N_SENSORS, 2))
    v = np.zeros(N_SENSORS)                             # the critic starts at zero
    snapshots, log = {}, _new_log()
    for u in range(c.updates):
        if u % c.eval_every == 0:
            snapshots[u] = W
        floor = make_floor(rng)
        g = play_steps(floor, W, c.G, rng)
        score = g.scores[g.run]                         # each step's target: its run's score
        adv = score - critic_values(v, g.S)             # A = score - V(s)
        if c.adv_norm:                                  # standard PPO: normalise A per batch
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        trace = []
        W = clipped_update(W, g.S, g.moves, adv, c.lr, c.eps, c.passes, trace)
        v = fit_critic(v, g.S, score, c.critic_lr, c.critic_passes)
        _log(log, g, adv, trace)
    snapshots[c.updates] = W
    return _finish("PPO", seed, c, snapshots, W, v, log, eval_floors)


def train_grpo(seed: int, config: ToyGRPOConfig = ToyGRPOConfig(), make_floor=lava.make_floor,
               eval_floors=None, **changes) -> TrainResult:
    """GRPO: PPO minus the critic. A run's advantage is its score against its own group's.

    No KL term (beta = 0): the toy starts as a coin flip, with nothing worth protecting.
    """
    c, rng = _config(ToyGRPOConfig, config, changes), _seeded(seed)
    W = np.zeros((N_SENSORS, 2))
    snapshots, log = {}, _new_log()
    for u in range(c.updates):
        if u % c.eval_every == 0:
            snapshots[u] = W
        floor = make_floor(rng)
        g = play_steps(floor, W, c.G, rng)              # one floor, G runs: the group
        adv = grpo_advantages(g.scores)[g.run]          # every step of run i shares A_i
        trace = []
        W = clipped_update(W, g.S, g.moves, adv, c.lr, c.eps, c.passes, trace,
                           step_divisors(g.run, c.G, c.averaging))   # the same update as PPO's
        _log(log, g, adv, trace)
    snapshots[c.updates] = W
    return _finish("GRPO", seed, c, snapshots, W, None, log, eval_floors)


TRAINERS = {"REINFORCE": train_reinforce, "PPO": train_ppo, "GRPO": train_grpo}


# ---------------------------------------------------------------------------------------------
# Experiments: several seeds of one algorithm, curves stacked
# ---------------------------------------------------------------------------------------------
@dataclass
class SeedRuns:
    """Several training seeds of one algorithm with the same hyperparameters."""
    algo: str
    runs: list = field(repr=False)

    @property
    def seeds(self) -> list:
        return [r.seed for r in self.runs]

    @property
    def eval_updates(self) -> np.ndarray:
        return self.runs[0].eval_updates

    @property
    def curves(self) -> np.ndarray:
        """(seeds, E) test score at each evaluation."""
        return np.stack([r.eval_score for r in self.runs])

    @property
    def exit_curves(self) -> np.ndarray:
        return np.stack([r.eval_exit for r in self.runs])

    @property
    def final_scores(self) -> np.ndarray:
        return self.curves[:, -1]

    @property
    def final_exits(self) -> np.ndarray:
        return self.exit_curves[:, -1]

    @property
    def mean_abs_adv(self) -> float:
        """Mean |A| per step over every step of every seed."""
        n = np.concatenate([r.n_steps for r in self.runs])
        a = np.concatenate([r.abs_adv for r in self.runs])
        return float((a * n).sum() / n.sum())

    def summary(self, ceiling: float) -> dict:
        """The results-registry keys: final score mean/min/max, exit rate, share of the ceiling."""
        if not (np.isfinite(ceiling) and ceiling > 0):
            raise ValueError(f"ceiling must be a positive score, got {ceiling}")
        f = self.final_scores
        return {"final_score_mean": float(f.mean()), "final_score_min": float(f.min()),
                "final_score_max": float(f.max()),
                "final_exit_rate": float(self.final_exits.mean()),
                "share_of_ceiling": float(f.mean() / ceiling)}

    def first_update_reaching(self, level: float):
        """The first evaluated update at which the seed-mean test score reaches ``level``
        (None if it never does)."""
        hit = np.flatnonzero(self.curves.mean(axis=0) >= level)
        return int(self.eval_updates[hit[0]]) if len(hit) else None

    def first_updates_reaching_per_seed(self, level: float) -> list:
        """For each seed alone, the first evaluated update whose test score reaches ``level``
        (None for a seed that never does)."""
        return [SeedRuns(self.algo, [r]).first_update_reaching(level) for r in self.runs]

    def groups_reaching(self, level: float, size: int) -> list:
        """Cut the seeds, in order, into groups of ``size`` and give each group's seed mean its
        ``first_update_reaching(level)``: how a seed-mean crossing moves from one set of seeds to
        the next (a published figure from ``size`` seeds is one such group)."""
        if not isinstance(size, (int, np.integer)) or size < 1 or len(self.runs) % size:
            raise ValueError(f"size must divide the {len(self.runs)} seeds into equal groups, "
                             f"got {size!r}")
        return [SeedRuns(self.algo, self.runs[k:k + size]).first_update_reaching(level)
                for k in range(0, len(self.runs), size)]


def run_seeds(algo: str, seeds=range(5), **hparams) -> SeedRuns:
    """Train ``algo`` ('REINFORCE', 'PPO' or 'GRPO') once per seed with the same hparams."""
    if algo not in TRAINERS:
        raise ValueError(f"algo must be one of {sorted(TRAINERS)}, got {algo!r}")
    if isinstance(seeds, (int, np.integer, str)):
        raise TypeError(f"seeds is a list of seeds, such as range(5); got {seeds!r}")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds is empty")
    return SeedRuns(algo, [TRAINERS[algo](s, **hparams) for s in seeds])


# ---------------------------------------------------------------------------------------------
# Measuring updates against the truth, and the curves figure
# ---------------------------------------------------------------------------------------------
def exact_gradient(W, floors, h: float = 1e-5) -> np.ndarray:
    """d(exact mean score on ``floors``)/dW by central differences of ``lava.exact_score``.

    The true gradient of the expected score, with no sampling noise: what every sampled update
    is trying to estimate. All 16 perturbed policies are scored in one batched call.
    """
    W = _check_gradient_args(W, h)
    bumps = np.eye(W.size).reshape(W.size, *W.shape) * h            # (8, 4, 2)
    tables = np.stack([lava.leap_probs(W + s * b) for b in bumps for s in (1, -1)])
    scores = lava.exact_score(floors, tables).mean_score.reshape(W.size, 2)
    return ((scores[:, 0] - scores[:, 1]) / (2 * h)).reshape(W.shape)


def _check_gradient_args(W, h):
    checks.positive("h", h)
    return lava.check_weights(W)
