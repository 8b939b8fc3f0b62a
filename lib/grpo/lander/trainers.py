"""Chapter 6's trainers: PPO and A2C (one actor-critic trainer with GAE) and GRPO (outcome,
process, and the two baseline controls on GRPO's own batches), with their configs, the run spec,
the tracker that evaluates and keeps the best checkpoint per mode, and the worker pool.

GRPO is PPO minus the critic: both policy steps ascend the same clipped surrogate through
``grpo_loss_grad`` / ``ppo_loss_grad`` on ``grpo.mlp``'s NumPy networks.
"""
from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field, fields
from typing import NamedTuple

import numpy as np
import torch

from .. import checks
from ..mlp import Adam, FlatMLP
from ..objectives import action_logprobs, group_advantages
from .env import (OBS_DIM, TEST_SEED0, TIME_LIMIT, VAL_SEED0, Episodes, Evaluator, StepCollector,
                  entropy_of, episode_outcomes, make_actor, make_critic, make_envs,
                  play_groups, policy_logits, sleep_gate, start_obs, visited_state_entropy)
from .losses import (GROUP_EPS, GRPOLossGrad, PPOLossGrad, baseline_advantages, ended_at_terminal,
                     episode_gae, explained_variance, gae, grpo_loss_grad, normalize_advantages,
                     ppo_loss_grad, process_advantages, ratio_stats, returns_to_go, step_weights,
                     time_baseline)

ALGOS = ("ppo", "a2c", "grpo", "grpo_process", "grpo_value", "grpo_time", "grpo_value_time",
         "grpo_gae")


def gradient_agreement(grads) -> dict:
    """How much M minibatch gradients (an (M, P) array) agree: their mean pairwise cosine, and the
    signal-to-noise ratio |mean g|^2 / mean |g - mean g|^2. Both near 0: the steps mostly cancel."""
    g = np.asarray(grads, dtype=float)
    if g.ndim != 2 or g.shape[0] < 2 or not np.isfinite(g).all():
        raise ValueError(f"grads must be a finite (M >= 2, P) array, got shape {g.shape}")
    unit = g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-30)
    M, mean = len(g), g.mean(0)
    cosine = (np.sum(unit.sum(0) ** 2) - np.sum(unit ** 2)) / (M * (M - 1))
    noise = np.mean(np.sum((g - mean) ** 2, axis=1))
    return {"cosine": float(cosine),
            "snr": float(np.sum(mean ** 2) / noise) if noise > 0 else float("inf")}

def minibatches(rng: np.random.Generator, n: int, epochs: int, size: int):
    """K epochs of minibatch indices over a batch of ``n`` steps: (epoch, indices), each epoch a
    fresh permutation from ``rng`` cut into minibatches of ``size`` (the last may be smaller)."""
    for epoch in range(epochs):
        for mb in np.split(rng.permutation(n), range(size, n, size)):
            yield epoch, mb


class GroupBatch(NamedTuple):
    """One GRPO iteration's steps, flattened over its episodes: what its minibatches slice."""
    obs: np.ndarray          # (T, OBS_DIM)
    act: np.ndarray          # (T,)
    adv: np.ndarray          # per step: its episode's advantage (or a control's baseline's)
    w: np.ndarray            # per step: the paper's 1/L, or 1
    logp_old: np.ndarray     # log pi_old(a|s), fixed for the iteration
    logp_ref: np.ndarray     # log pi_ref(a|s), the KL term's anchor


def group_batch(ep, adv, length_weights: bool, pi, ref) -> GroupBatch:
    """The batch of one iteration's episodes ``ep``: their steps flattened, ``adv`` per step, the
    paper's 1/L weights (or ones), and log pi_old (``pi``) and log pi_ref (``ref``) once."""
    obs, act = np.concatenate(ep.obs), np.concatenate(ep.actions)
    w = step_weights(ep.lengths) if length_weights else np.ones(int(ep.lengths.sum()))
    return GroupBatch(obs, act, adv, w, action_logprobs(pi.forward(obs), act),
                      action_logprobs(ref.forward(obs), act))


# ---------------------------------------------------------------------------------------------
# Trainers
# ---------------------------------------------------------------------------------------------
def _check_shared_fields(cfg) -> None:
    """The fields both lander configs have: the clip in (0, 1); the optimizer's lr, eps and
    gradient-norm clip > 0; the discount in (0, 1] and GAE's lambda in [0, 1]."""
    name = type(cfg).__name__
    checks.number(f"{name}.clip", cfg.clip, minimum=0, maximum=1, low_open=True, high_open=True,
                  rule="in (0, 1)")
    for field_name in ("lr", "adam_eps", "max_grad_norm"):
        checks.number(f"{name}.{field_name}", getattr(cfg, field_name), minimum=0, low_open=True,
                      rule="> 0")
    checks.number(f"{name}.gamma", cfg.gamma, minimum=0, maximum=1, low_open=True,
                  rule="in (0, 1]")
    checks.number(f"{name}.lam", cfg.lam, minimum=0, maximum=1, rule="in [0, 1]")


@dataclass(frozen=True)
class ActorCriticConfig:
    """PPO with rl-zoo's LunarLander settings (lr 3e-4 constant, as there); A2C is the same trainer
    with A2C_CONFIG's values."""
    n_envs: int = 16
    n_steps: int = 1024          # per env per rollout
    gamma: float = 0.999         # episodes last hundreds of steps: a long horizon
    lam: float = 0.98
    epochs: int = 4
    minibatch: int = 64
    clip: float = 0.2
    lr: float = 3e-4
    adam_eps: float = 1e-5
    max_grad_norm: float = 0.5
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    normalize_adv: bool = True   # per minibatch, as SB3
    measure_gradients: bool = False   # log the first epoch's minibatch-gradient agreement (actor)

    def __post_init__(self):
        name = type(self).__name__
        for field_name in ("n_envs", "n_steps", "epochs", "minibatch"):
            checks.integer(f"{name}.{field_name}", getattr(self, field_name), minimum=1)
        _check_shared_fields(self)
        for field_name in ("vf_coef", "ent_coef"):
            checks.number(f"{name}.{field_name}", getattr(self, field_name), minimum=0, rule=">= 0")
        for field_name in ("normalize_adv", "measure_gradients"):
            checks.boolean(f"{name}.{field_name}", getattr(self, field_name))

    @property
    def algo(self) -> str:
        """The label the results carry: "a2c" when each rollout gets one on-policy step (one epoch,
        one minibatch: the ratio is 1 and the clip never engages), else "ppo"."""
        return "a2c" if self.epochs == 1 and self.minibatch >= self.n_envs * self.n_steps else "ppo"


# rl-zoo's A2C numbers for LunarLander (8 envs x 5 steps, gamma 0.995, lambda 1, entropy 1e-5,
# lr 8.3e-4), with two differences: rl-zoo decays the lr linearly to 0 over the run (lin_0.00083)
# and SB3's A2C uses RMSprop; here the lr stays constant and the optimiser is Adam.
A2C_CONFIG = ActorCriticConfig(n_envs=8, n_steps=5, gamma=0.995, lam=1.0, epochs=1, minibatch=40,
                               lr=8.3e-4, ent_coef=1e-5, normalize_adv=False)


@dataclass(frozen=True)
class LanderGRPOConfig:
    """Outcome GRPO as the published port ran it; ``process=True`` swaps in per-step credit."""
    group_size: int = 16         # G episodes per prompt
    prompts: int = 4             # B prompts per iteration: 64 episodes
    # the update's settings are PPO's (rl-zoo's), as the published port kept them
    epochs: int = ActorCriticConfig.epochs
    minibatch: int = ActorCriticConfig.minibatch
    clip: float = ActorCriticConfig.clip
    lr: float = ActorCriticConfig.lr
    adam_eps: float = ActorCriticConfig.adam_eps
    max_grad_norm: float = ActorCriticConfig.max_grad_norm
    beta: float = 0.04           # k3 KL to the reference policy
    ref_every: int = 10          # iterations between reference refreshes
    process: bool = False
    # "group": GRPO | "value": a learned V(s) | "time": the group's mean by step | "value_time": a
    # learned V(s, t) | "gae": GAE(gamma, lam) from a learned V(s), as PPO's credit
    baseline: str = "group"
    gamma: float = 0.999         # "gae" only
    lam: float = 0.98            # "gae" only
    # learned baselines: the critic fits target / value_scale, V = output x it
    value_scale: float = 1.0
    # outcome GRPO: divide by the group's std (False: Dr. GRPO's R - mean)
    scale_by_std: bool = True
    length_weights: bool = True  # the paper's 1/|o_i| as 1/L per step (False: every step weighs 1)
    measure_gradients: bool = False   # log the first epoch's minibatch-gradient agreement

    def __post_init__(self):
        name = type(self).__name__
        checks.integer(f"{name}.group_size", self.group_size, minimum=2)
        for field_name in ("prompts", "epochs", "minibatch", "ref_every"):
            checks.integer(f"{name}.{field_name}", getattr(self, field_name), minimum=1)
        _check_shared_fields(self)
        checks.number(f"{name}.beta", self.beta, minimum=0, rule=">= 0")
        checks.number(f"{name}.value_scale", self.value_scale, minimum=0, low_open=True, rule="> 0")
        for field_name in ("process", "scale_by_std", "length_weights", "measure_gradients"):
            checks.boolean(f"{name}.{field_name}", getattr(self, field_name))
        checks.choice(f"{name}.baseline", self.baseline,
                      ("group", "value", "time", "value_time", "gae"))
        if self.process and self.baseline != "group":
            raise ValueError(f"{name}: process GRPO sums its own per-step credit; baseline must be "
                             f"'group', got {self.baseline!r}")

    @property
    def algo(self) -> str:
        """The label the results carry, read off the config: what actually runs."""
        return "grpo_process" if self.process else {"group": "grpo", "value": "grpo_value",
                                                     "time": "grpo_time",
                                                    "value_time": "grpo_value_time",
                                                     "gae": "grpo_gae"}[self.baseline]


DEFAULT_CONFIGS = {"ppo": ActorCriticConfig(), "a2c": A2C_CONFIG, "grpo": LanderGRPOConfig(),
                   "grpo_process": LanderGRPOConfig(process=True),
                   "grpo_value": LanderGRPOConfig(baseline="value"),
                   "grpo_time": LanderGRPOConfig(baseline="time"),
                   "grpo_value_time": LanderGRPOConfig(baseline="value_time"),
                   "grpo_gae": LanderGRPOConfig(baseline="gae")}
LEARNED_BASELINES = ("value", "value_time", "gae")     # the GRPO controls that train a critic


@dataclass(frozen=True)
class RunSpec:
    """What to run: algorithm, seed, env-step budget and the evaluation protocol."""
    algo: str
    seed: int
    total_steps: int
    eval_every: int = 100_000    # env steps between periodic evaluations
    val_episodes: int = 20
    test_episodes: int = 50
    config: object = field(default=None)
    # stop once a validation argmax mean reaches this (benches: time to land)
    stop_at: float | None = None

    def __post_init__(self):
        checks.choice("RunSpec.algo", self.algo, ALGOS)
        checks.integer("RunSpec.seed", self.seed, minimum=0)
        for field_name in ("total_steps", "eval_every", "val_episodes", "test_episodes"):
            checks.integer(f"RunSpec.{field_name}", getattr(self, field_name), minimum=1)
        checks.optional(checks.number, "RunSpec.stop_at", self.stop_at)
        cfg = self.resolved_config()
        if not isinstance(cfg, (ActorCriticConfig, LanderGRPOConfig)):
            raise ValueError(f"RunSpec.config must be an ActorCriticConfig or a LanderGRPOConfig, "
                             f"got {type(cfg).__name__}")
        # the label is what the config runs, never a second opinion
        if cfg.algo != self.algo:
            raise ValueError(f"RunSpec.algo is {self.algo!r}, but its config runs {cfg.algo!r}: "
                             f"use algo={cfg.algo!r}")

    def resolved_config(self):
        if self.config is not None:
            return self.config
        return DEFAULT_CONFIGS[self.algo]


class _Tracker:
    """Env-step counter, periodic evaluation, the best checkpoint per mode and the curves."""

    def __init__(self, spec: RunSpec, progress=None):
        self.spec, self.steps, self.progress = spec, 0, progress
        self.validate = Evaluator(range(VAL_SEED0, VAL_SEED0 + spec.val_episodes),
                                  rng_seed=spec.seed)
        self.next_eval = 0
        self.best = {"det": -np.inf, "sampled": -np.inf}       # best validation return per mode,
        self.best_state = {"det": None, "sampled": None}       # and the weights that scored it
        self.curve = {"env_steps": [], "det": [], "sampled": [],
                      # CPU-s of training so far, evaluations left out (benches only)
                      "train_cpu_s": []}
        self.cpu0, self.eval_cpu = time.process_time(), 0.0
        self.snapshots = []                # (env steps, actor weights) at every evaluation
        # (env steps, the critic's flat weights), where there is one
        self.critic_snapshots = []
        self.train_returns = {"env_steps": [], "return": []}

    def add(self, n_steps: int, episode_returns) -> None:
        self.steps += n_steps
        for r in episode_returns:
            self.train_returns["env_steps"].append(self.steps)
            self.train_returns["return"].append(float(r))
        if self.progress is not None:
            self.progress.update(n_steps)

    def maybe_evaluate(self, actor, critic=None, force: bool = False) -> None:
        if self.steps < self.next_eval and not force:
            return
        self.next_eval = self.steps + self.spec.eval_every
        t = time.process_time()
        self.curve["train_cpu_s"].append(t - self.cpu0 - self.eval_cpu)
        ev = self.validate(actor)
        det, samp = float(ev["det"].mean()), float(ev["sampled"].mean())
        self.curve["env_steps"].append(self.steps)
        self.curve["det"].append(det)
        self.curve["sampled"].append(samp)
        self.snapshots.append((self.steps, copy.deepcopy(actor.state_dict())))
        # a FlatMLP: its weights are one array
        if critic is not None:
            self.critic_snapshots.append((self.steps, critic.flat.copy()))
        for mode, score in (("det", det), ("sampled", samp)):   # each mode picks its own checkpoint
            if score > self.best[mode]:
                self.best[mode], self.best_state[mode] = score, copy.deepcopy(actor.state_dict())
        self.eval_cpu += time.process_time() - t

    @property
    def done(self) -> bool:
        det, stop = self.curve["det"], self.spec.stop_at
        return self.steps >= self.spec.total_steps or (stop is not None and bool(det)
                                                       and det[-1] >= stop)


class RolloutBatch(NamedTuple):
    """One actor-critic rollout, flattened over its steps: what its minibatches slice."""
    obs: np.ndarray          # (T*N, OBS_DIM)
    act: np.ndarray          # (T*N,)
    adv: np.ndarray          # GAE(gamma, lam) advantages
    ret: np.ndarray          # the critic's targets, advantage + V(s)
    logp_old: np.ndarray     # log pi_old(a|s), fixed for the update
    logits_old: np.ndarray   # pi_old's logits (the diagnostics' entropy)
    values: np.ndarray       # the critic's V(s) before the update (the explained variance)


def rollout_batch(s, pi, vf, gamma: float, lam: float) -> RolloutBatch:
    """The batch of one rollout ``s`` (``StepCollector.collect``): GAE from the critic ``vf``
    (``gae_targets``), flattened, and log pi_old from the actor ``pi`` once."""
    values, adv, ret = gae_targets(s, vf, gamma, lam)
    obs, act = s.obs.reshape(-1, OBS_DIM), s.actions.reshape(-1)
    logits_old = pi.forward(obs)
    return RolloutBatch(obs, act, adv.reshape(-1), ret.reshape(-1),
                        action_logprobs(logits_old, act), logits_old, values.reshape(-1))


class PPODiagnostics:
    """What chapter 6 logs about PPO and A2C, attached from outside the loop
    ``train_actor_critic`` prints (it only watches): per minibatch step, the clip fraction and
    Stable-Baselines3's ratio statistics; per rollout, SB3's diagnostics (``PPO_DIAGNOSTICS``: the
    clip fraction and approx-KL to pi_old over its steps, the critic's explained variance, the
    policy's entropy) and, with ``cfg.measure_gradients``, the first epoch's minibatch-gradient
    agreement (``gradient_agreement``)."""

    def __init__(self, cfg: ActorCriticConfig):
        self.cfg, self.clip_fracs, self.iterations = cfg, [], 0
        self.agreement = {"env_steps": [], "grad_cosine": [], "grad_snr": []}
        self.diag = {k: [] for k in PPO_DIAGNOSTICS}
        self.grads, self.ratios = [], []

    def minibatch(self, epoch: int, mb, logits, batch: RolloutBatch, pi, loss: PPOLossGrad):
        """After the backward passes on minibatch ``mb`` of ``batch``, before the step."""
        self.ratios.append(ratio_stats(logits, batch.act[mb], batch.logp_old[mb], self.cfg.clip))
        if self.cfg.measure_gradients and epoch == 0:
            self.grads.append(pi.grad.copy())
        self.clip_fracs.append(float(loss.clipped.mean()))

    def end_iteration(self, steps: int, batch: RolloutBatch) -> None:
        if len(self.grads) >= 2:
            agree = gradient_agreement(self.grads)
            for k, v in (("env_steps", steps), ("grad_cosine", agree["cosine"]),
                         ("grad_snr", agree["snr"])):
                self.agreement[k].append(v)
        study_clip, approx_kl = np.mean(self.ratios, axis=0)
        for k, v in (("env_steps", steps), ("clip_fraction_study", study_clip),
                     ("approx_kl", approx_kl),
                     ("explained_variance", explained_variance(batch.values, batch.ret)),
                     ("entropy", float(entropy_of(batch.logits_old).mean()))):
            self.diag[k].append(float(v))
        self.grads, self.ratios, self.iterations = [], [], self.iterations + 1

    def summary(self) -> dict:
        return {"clip_fraction_median": float(np.median(self.clip_fracs)),
                "iterations": self.iterations, "adam_steps": len(self.clip_fracs),
                "gradient_agreement": self.agreement, "diagnostics": self.diag,
                **{f"{k}_median": float(np.nanmedian(self.diag[k])) for k in PPO_DIAGNOSTICS[1:]}}


def train_actor_critic(spec: RunSpec, progress=None) -> ActorCriticResult:
    """PPO (and A2C with A2C_CONFIG): rollouts of n_envs x n_steps, GAE, clipped update with a
    critic. The diagnostics attach through ``PPODiagnostics``."""
    cfg = spec.resolved_config()
    rng = np.random.default_rng(spec.seed)
    actor = make_actor(spec.seed)
    pi, vf = FlatMLP(actor), FlatMLP(make_critic(spec.seed))   # NumPy on the modules' weights
    opt = Adam([pi, vf], lr=cfg.lr, eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm)
    collector, track = StepCollector(cfg.n_envs, rng), _Tracker(spec, progress)
    diagnostics = PPODiagnostics(cfg)
    while not track.done:
        track.maybe_evaluate(actor, vf)
        # 1. rollout with the current policy (it is pi_old for this update)
        s = collector.collect(actor, cfg.n_steps)
        track.add(s.rewards.size, s.episode_returns)
        # 2. GAE from the critic, flattened; log pi_old computed once
        b = rollout_batch(s, pi, vf, cfg.gamma, cfg.lam)
        # 3. K epochs of minibatch steps on the clipped surrogate + value loss - entropy bonus
        for epoch, mb in minibatches(rng, len(b.act), cfg.epochs, cfg.minibatch):
            a = normalize_advantages(b.adv[mb]) if cfg.normalize_adv else b.adv[mb]   # as SB3
            logits = pi.forward(b.obs[mb])
            loss = ppo_loss_grad(logits, b.act[mb], b.logp_old[mb], a, cfg.clip, cfg.ent_coef)
            pi.backward(loss.d_logits)
            v = vf.forward(b.obs[mb])[:, 0]        # + vf_coef * mean((V - target)^2)
            vf.backward((2 * cfg.vf_coef / len(mb) * (v - b.ret[mb]))[:, None])
            diagnostics.minibatch(epoch, mb, logits, b, pi, loss)
            opt.step()                             # joint gradient-norm clip, then Adam
        diagnostics.end_iteration(track.steps, b)
    track.maybe_evaluate(actor, vf, force=True)
    return _finish(spec, cfg, actor, track, diagnostics.summary())


def gae_targets(s, vf, gamma: float, lam: float):
    """PPO's credit for one rollout ``s`` (``StepCollector.collect``): the critic ``vf``'s V(s_t),
    the GAE(gamma, lam) advantages and the critic's targets, each (T, N). A time limit is not a
    terminal state, so a truncated episode's last reward gains gamma * V(its last obs), in place."""
    T, N = s.actions.shape
    values = vf.forward(s.obs.reshape(-1, OBS_DIM))[:, 0].reshape(T, N)
    last_v = vf.forward(s.next_obs)[:, 0]
    if s.truncated:
        final_v = vf.forward(np.stack([o for _, _, o in s.truncated]))[:, 0]
        for (t, i, _), v in zip(s.truncated, final_v):
            s.rewards[t, i] += gamma * v
    adv, ret = gae(s.rewards, values, s.dones, last_v, gamma, lam)
    return values, adv, ret


def critic_inputs(cfg: LanderGRPOConfig, ep) -> np.ndarray:
    """What a GRPO control's critic sees at every step: the observation, and for V(s, t) the step's
    time, t / TIME_LIMIT (so the time limit is part of the state and needs no bootstrap)."""
    obs = np.concatenate(ep.obs)
    if cfg.baseline != "value_time":
        return obs
    t = np.concatenate([np.arange(n) for n in ep.lengths]) / TIME_LIMIT
    return np.column_stack([obs, t])


def lander_critic_values(vf, x, scale: float = 1.0) -> np.ndarray:
    """A GRPO control's V at inputs ``x``: the critic's output times ``scale`` (it fits target /
    scale, so targets in the hundreds stay O(1) for the network)."""
    return vf.forward(x)[:, 0] * scale


def episode_advantages(cfg: LanderGRPOConfig, ep, vf=None):
    """Per-step advantages of one batch of groups: outcome GRPO's z-scored return broadcast to every
    step (or R - mean without ``scale_by_std``), process GRPO's summed normalised rewards, or a
    control's: the return-to-go minus a baseline (a learned V(s) or V(s, t) ``vf``, or the group's
    mean by step), or GAE(gamma, lam) from a learned V(s), scaled by the batch's std. Also the
    targets the critic fits (or None)."""
    if cfg.process:
        G = cfg.group_size
        return np.concatenate([a for g in range(cfg.prompts)
                               for a in process_advantages(ep.rewards[g * G:(g + 1) * G])]), None
    if cfg.baseline == "group":       # z-scored, or centred only (Dr. GRPO's no_std ablation)
        groups = ep.returns.reshape(-1, cfg.group_size)
        adv = group_advantages(groups, "zscore" if cfg.scale_by_std else "center", GROUP_EPS)
        return np.repeat(adv.ravel(), ep.lengths), None
    if cfg.baseline == "gae":
        values = lander_critic_values(vf, critic_inputs(cfg, ep), cfg.value_scale)
        last_values = lander_critic_values(vf, np.stack(ep.last_obs), cfg.value_scale)
        adv, targets = episode_gae(ep.rewards, values, ended_at_terminal(ep), last_values,
                                   cfg.gamma, cfg.lam)
        return baseline_advantages(adv, np.zeros_like(adv)), targets
    to_go = np.concatenate(returns_to_go(ep.rewards))
    if vf is not None:
        values = lander_critic_values(vf, critic_inputs(cfg, ep), cfg.value_scale)
        return baseline_advantages(to_go, values), to_go
    return baseline_advantages(to_go,
                               time_baseline(returns_to_go(ep.rewards), cfg.group_size)), None


DIAGNOSTICS = ("env_steps", "group_std", "degenerate", "near_degenerate", "kl_median", "kl_max",
               "clip_fraction", "clip_fraction_study", "approx_kl", "explained_variance",
               "start_entropy", "grad_cosine", "grad_snr")
PPO_DIAGNOSTICS = ("env_steps", "clip_fraction_study", "approx_kl", "explained_variance", "entropy")


@dataclass
class IterationLog:
    """What one GRPO iteration measured, for ``log_diagnostics``: its batch of groups ``ep``, the
    control critic's explained variance on it (NaN: no critic), and per minibatch step the clip
    fraction, SB3's ``ratio_stats``, the last epoch's k3 and the first epoch's gradient (when
    measured)."""
    ep: Episodes
    value_ev: float = float("nan")
    clip_fracs: list = field(default_factory=list)
    ratios: list = field(default_factory=list)
    kls: list = field(default_factory=list)
    grads: list = field(default_factory=list)


def log_diagnostics(diag: dict, steps: int, cfg: LanderGRPOConfig, log: IterationLog,
                    actor) -> None:
    """One iteration's GRPO diagnostics: group return spread, degenerate groups, the k3 KL of the
    last epoch, the clip fraction (steps where the clipped branch won) and SB3's (|rho - 1| > clip)
    and approx-KL to pi_old over every minibatch step, the V(s) control's explained variance, the
    policy's entropy at the prompts' start states, and (when measured) the first epoch's
    minibatch-gradient agreement."""
    ep = log.ep
    stds = ep.returns.reshape(cfg.prompts, cfg.group_size).std(1)
    kl = np.concatenate(log.kls)
    agree = (gradient_agreement(log.grads) if len(log.grads) >= 2
             else {"cosine": np.nan, "snr": np.nan})
    starts = np.stack([o[0] for o in ep.obs[::cfg.group_size]])
    study_clip, approx_kl = np.mean(log.ratios, axis=0) if len(log.ratios) else (np.nan, np.nan)
    row = {"env_steps": steps, "group_std": float(np.mean(stds)),
           "degenerate": float(np.mean(stds < GROUP_EPS)),
           "near_degenerate": float(np.mean(stds < 1.0)),
           "kl_median": float(np.median(kl)), "kl_max": float(kl.max()),
           "clip_fraction": float(np.mean(log.clip_fracs)),
           "clip_fraction_study": float(study_clip),
           "approx_kl": float(approx_kl), "explained_variance": float(log.value_ev),
           "start_entropy": float(entropy_of(policy_logits(actor, starts)).mean()),
           "grad_cosine": agree["cosine"], "grad_snr": agree["snr"]}
    for k in DIAGNOSTICS:
        diag[k].append(row[k])


def summarize_diagnostics(diag: dict, critic: bool) -> dict:
    """A GRPO run's diagnostics (``log_diagnostics``'s lists) as medians and means over its
    iterations; the critic's explained variance only for the controls that learn one."""
    return {"degenerate_fraction": float(np.mean(diag["degenerate"])),
            "near_degenerate_fraction": float(np.mean(diag["near_degenerate"])),
            "kl_median": float(np.median(diag["kl_median"])),
            "clip_fraction_median": float(np.median(diag["clip_fraction"])),
            "clip_fraction_study_median": float(np.median(diag["clip_fraction_study"])),
            "approx_kl_median": float(np.median(diag["approx_kl"])),
            "explained_variance_median": (float(np.nanmedian(diag["explained_variance"]))
                                          if critic else float("nan")),
            "group_return_std_median": float(np.median(diag["group_std"]))}


class GRPOControls:
    """What the chapter's control runs and diagnostics add to plain GRPO, attached from outside the
    loop ``train_lander_grpo`` prints. The controls keep GRPO's batches and update and change only
    the baseline: ``"value"`` a learned V(s), advantage G_t - V(s_t) (lambda = 1, no GAE);
    ``"value_time"`` the same with V(s, t); ``"time"`` the group's mean G_t at the same step index;
    ``"gae"`` PPO's credit, GAE(gamma, lam) from a learned V(s). A learned baseline's critic takes
    its own Adam step on each minibatch. Every run logs ``log_diagnostics``' row per iteration;
    plain GRPO has no critic, and its diagnostics only watch."""

    def __init__(self, spec: RunSpec, cfg: LanderGRPOConfig):
        self.cfg, self.diag, self.adam_steps = cfg, {k: [] for k in DIAGNOSTICS}, 0
        self.critic = (FlatMLP(make_critic(spec.seed, OBS_DIM + (cfg.baseline == "value_time")))
                       if cfg.baseline in LEARNED_BASELINES else None)
        self.critic_opt = None if self.critic is None else Adam(
            [self.critic], lr=cfg.lr, eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm)

    def advantages(self, ep) -> np.ndarray:
        """The batch's per-step advantages (``episode_advantages``: the group's z-score, or the
        control's baseline); keeps what the critic fits and what the diagnostics log."""
        cfg, vf = self.cfg, self.critic
        adv, self.to_go = episode_advantages(cfg, ep, vf)
        self.critic_in = None if vf is None else critic_inputs(cfg, ep)
        self.log = IterationLog(ep, np.nan if vf is None else explained_variance(
            lander_critic_values(vf, self.critic_in, cfg.value_scale), self.to_go))
        return adv

    def minibatch(self, epoch: int, mb, logits, batch: GroupBatch, pi, loss: GRPOLossGrad) -> None:
        """After the actor's backward pass on minibatch ``mb`` of ``batch``, before its step: SB3's
        ratio statistics, the first epoch's gradient (when measured), the clip fraction and the
        last epoch's k3; and the critic's own step on the same minibatch."""
        cfg, log = self.cfg, self.log
        log.ratios.append(ratio_stats(logits, batch.act[mb], batch.logp_old[mb], cfg.clip))
        if cfg.measure_gradients and epoch == 0:
            log.grads.append(pi.grad.copy())
        if self.critic is not None:
            v = self.critic.forward(self.critic_in[mb])[:, 0]
            self.critic.backward((2 / len(mb) * (v - self.to_go[mb] / cfg.value_scale))[:, None])
            self.critic_opt.step()
        log.clip_fracs.append(float(loss.clipped.mean()))
        if epoch == cfg.epochs - 1:
            log.kls.append(loss.k3)

    def end_iteration(self, steps: int, actor) -> None:
        self.adam_steps += len(self.log.clip_fracs)
        log_diagnostics(self.diag, steps, self.cfg, self.log, actor)

    def summary(self, iterations: int) -> dict:
        return {**summarize_diagnostics(self.diag, critic=self.critic is not None),
                "iterations": iterations, "adam_steps": self.adam_steps, "diagnostics": self.diag}


def train_lander_grpo(spec: RunSpec, progress=None) -> GRPOResult:
    """GRPO: B prompts x G episodes, group-relative advantage, clipped update + beta*k3, no critic.
    The controls (another baseline) and the diagnostics attach through ``GRPOControls``."""
    cfg = spec.resolved_config()
    rng = np.random.default_rng(spec.seed)
    actor = make_actor(spec.seed)
    pi = FlatMLP(actor)                        # NumPy forward/backward on the module's own weights
    opt = Adam([pi], lr=cfg.lr, eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm)
    controls = GRPOControls(spec, cfg)
    envs = make_envs(cfg.group_size * cfg.prompts)
    track = _Tracker(spec, progress)
    it = 0
    while not track.done:
        track.maybe_evaluate(actor, controls.critic)
        if it % cfg.ref_every == 0:            # iterative GRPO: the reference follows the actor
            ref = FlatMLP(copy.deepcopy(actor))
        # 1. B prompts (reset seeds), each flown G times with actions sampled from pi_old
        ep = play_groups(envs, cfg.prompts, cfg.group_size, actor, rng)
        track.add(int(ep.lengths.sum()), ep.returns)
        # 2. advantages (no critic: the group's z-score; a control swaps in its baseline), the
        #    paper's 1/L weights, and log pi_old and log pi_ref, once for the whole batch
        b = group_batch(ep, controls.advantages(ep), cfg.length_weights, pi, ref)
        # 3. K epochs of minibatch steps on the same clipped surrogate, minus beta * k3, no critic
        for epoch, mb in minibatches(rng, len(b.act), cfg.epochs, cfg.minibatch):
            logits = pi.forward(b.obs[mb])
            loss = grpo_loss_grad(logits, b.act[mb], b.logp_old[mb], b.logp_ref[mb], b.adv[mb],
                                  b.w[mb], cfg.clip, cfg.beta)
            pi.backward(loss.d_logits)
            controls.minibatch(epoch, mb, logits, b, pi, loss)
            opt.step()                         # gradient-norm clip, then Adam
        controls.end_iteration(track.steps, actor)
        it += 1
    track.maybe_evaluate(actor, controls.critic, force=True)
    return _finish(spec, cfg, actor, track, controls.summary(it))


@dataclass
class LanderResult:
    """What ``train`` returns for every algorithm. The weights are ``state_dict``s; the held-out
    returns are per episode on the test seeds; ``curve`` is the validation curve (``env_steps``,
    ``det``, ``sampled``, ``train_cpu_s``). A stored run (``main_runs.load_stored``) leaves
    ``train_returns`` and ``critic_snapshots`` as ``None``: they are not stored."""
    algo: str
    seed: int
    env_steps: int
    config: dict                   # the resolved config, as ``asdict``
    curve: dict
    train_returns: dict | None     # every training episode's return, by env step
    test_det: list                 # the argmax-chosen checkpoint, flown by argmax
    test_sampled: list             # the sampled-chosen checkpoint, sampled
    final_det: list                # the final policy, by argmax
    final_sampled: list            # the final policy, sampled
    outcomes: dict                 # how each of the four flights ended (``episode_outcomes``)
    start_entropy: float
    visited_state_entropy: float
    sleep_gate: dict
    det_state: dict
    sampled_state: dict
    final_state: dict
    snapshots: list                # (env steps, actor state_dict) at every evaluation
    critic_snapshots: list | None
    iterations: int
    adam_steps: int
    diagnostics: dict              # per-update logs, one list per ``DIAGNOSTICS`` name
    clip_fraction_median: float
    clip_fraction_study_median: float
    approx_kl_median: float
    explained_variance_median: float

    def as_dict(self) -> dict:
        """The fields by name, values as they are (no copy: ``dataclasses.asdict`` would copy
        every weight tensor)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class ActorCriticResult(LanderResult):
    """PPO's and A2C's result: the shared fields, and what the critic's family adds."""
    entropy_median: float
    gradient_agreement: dict       # the first epoch's minibatch-gradient probe


@dataclass
class GRPOResult(LanderResult):
    """GRPO's result (and its controls'): the shared fields, and GRPO's own logs."""
    degenerate_fraction: float
    near_degenerate_fraction: float
    kl_median: float
    group_return_std_median: float


def is_grpo(algo: str) -> bool:
    """Whether ``algo`` is GRPO or one of its controls (no critic in the update), not PPO or A2C."""
    checks.choice("algo", algo, ALGOS)
    return algo.startswith("grpo")


def result_type(algo: str) -> type:
    """The class of ``train``'s result for ``algo``: ``GRPOResult`` or ``ActorCriticResult``."""
    return GRPOResult if is_grpo(algo) else ActorCriticResult


def result_from_fields(values: dict) -> LanderResult:
    """A result from its fields by name (a stored record, say); a missing or unknown field is a
    ``ValueError`` naming it."""
    if not isinstance(values, dict) or "algo" not in values:
        raise ValueError("values must be a dict of a result's fields, with 'algo'")
    cls = result_type(values["algo"])
    names = {f.name for f in fields(cls)}
    if set(values) != names:
        raise ValueError(f"values must hold exactly {cls.__name__}'s fields: missing "
                         f"{sorted(names - set(values))}, unknown {sorted(set(values) - names)}")
    return cls(**values)


def _finish(spec, cfg, actor, track, extra) -> LanderResult:
    """The held-out test: the argmax-chosen checkpoint flown by argmax, the sampled-chosen one
    sampled, and the final policy both ways; how each ended; entropies of the final policy."""
    test = Evaluator(range(TEST_SEED0, TEST_SEED0 + spec.test_episodes), rng_seed=spec.seed)
    chosen = {mode: make_actor(spec.seed) for mode in ("det", "sampled")}
    for mode, net in chosen.items():
        net.load_state_dict(track.best_state[mode])
    flights = {"det": test.play(chosen["det"], True),
               "sampled": test.play(chosen["sampled"], False), "final_det": test.play(actor, True),
               "final_sampled": test.play(actor, False)}
    out = {"algo": spec.algo, "seed": spec.seed, "env_steps": track.steps,
           "config": asdict(cfg), "curve": track.curve, "train_returns": track.train_returns,
           **{(f"test_{k}" if k in ("det", "sampled") else k): ep.returns.tolist()
              for k, ep in flights.items()},
           "outcomes": {k: episode_outcomes(ep) for k, ep in flights.items()},
           "start_entropy": float(entropy_of(policy_logits(actor, start_obs(test.seeds))).mean()),
           "visited_state_entropy": visited_state_entropy(actor, flights["final_sampled"]),
           "sleep_gate": sleep_gate(actor, flights["final_sampled"]),
           "det_state": chosen["det"].state_dict(), "sampled_state": chosen["sampled"].state_dict(),
           "final_state": copy.deepcopy(actor.state_dict()), "snapshots": track.snapshots,
           "critic_snapshots": track.critic_snapshots}
    return result_type(spec.algo)(**out, **extra)


def train(spec: RunSpec, progress=None) -> LanderResult:
    """Run one (algo, seed) to ``spec.total_steps`` env steps; see ``ALGOS``. The result is an
    ``ActorCriticResult`` or a ``GRPOResult`` (``result_type``)."""
    torch.set_num_threads(1)
    if not isinstance(spec, RunSpec):     # a RunSpec checked itself when it was made
        raise ValueError(f"spec must be a RunSpec, got {type(spec).__name__}")
    trainer = train_lander_grpo if is_grpo(spec.algo) else train_actor_critic
    return trainer(spec, progress)

