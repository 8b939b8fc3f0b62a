"""GRPO ported to Gymnasium's LunarLander-v3, beside PPO and A2C (chapter 6).

The port, as in the published study: a *prompt* is a reset seed (it fixes the terrain and the first
push), a *group* is G complete episodes flown from that seed with actions sampled from pi_old, and an
episode's *answer score* is its undiscounted return. Outcome GRPO z-scores the G returns
(``grpo.algos.grpo_advantages`` with eps 1e-4) and broadcasts the result to every step of the episode;
process GRPO normalises the per-step rewards over the whole group and sums them to the episode's end
(``process_advantages``). PPO and A2C share one actor-critic trainer with GAE. Both trainers'
policy step ascends the clipped surrogate of ``grpo.surrogate.clipped_surrogate`` (``grpo_loss``)
through its closed-form slope (``surrogate_slope``): GRPO is PPO minus the critic. The gradients
are written out (``grpo_loss_grad``, ``ppo_loss_grad``, ``grpo.mlp``) because autograd's per-op
overhead dominates on minibatches of 64; the tests check them against autograd.

Rollouts step plain ``gym.make`` environments in lock-step with one batched policy forward and
Gumbel-max sampling on the NumPy logits. An episode that ends is reset in the same step, so no
reset transition (Gymnasium's NEXT_STEP autoreset) can enter a batch. Training envs use
``render_mode=None`` (with "rgb_array", Box2D flame particles pile up and stepping slows ~5x).

Seeds: training prompts come from [0, 1e6), periodic evaluation (checkpoint choice) from
[1e6, 1e6 + 1e3), the final held-out test from [2e6, ...). Run ``python -m grpo.lander --help``.
"""
from __future__ import annotations

import argparse
import copy
import json
import time
from dataclasses import asdict, dataclass, field

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .algos import clip_mask, grpo_advantages
from .kl import kl_k3
from .mlp import Adam, FlatMLP
from .pool import parallel_map
from .surrogate import clipped_surrogate

ENV_ID = "LunarLander-v3"
OBS_DIM, N_ACTIONS = 8, 4
SOLVED = 200.0                         # the task counts as solved at a mean return >= 200
TRAIN_SEEDS = (0, 1_000_000)           # prompts are drawn from here
VAL_SEED0 = 1_000_000                  # periodic evaluation, picks the best checkpoint
TEST_SEED0 = 2_000_000                 # final held-out evaluation
ALGOS = ("ppo", "a2c", "grpo", "grpo_process", "grpo_value", "grpo_time")
BASELINES = {"grpo": "group", "grpo_process": "group", "grpo_value": "value", "grpo_time": "time"}
MAIN_ENGINE = 2                        # actions: 0 nothing, 1 left engine, 2 main engine, 3 right engine


# ---------------------------------------------------------------------------------------------
# Environment and networks
# ---------------------------------------------------------------------------------------------
def make_env(render_mode: str | None = None) -> gym.Env:
    """One LunarLander-v3 with discrete actions (1000-step time limit)."""
    return gym.make(ENV_ID, render_mode=render_mode)


class MLP(nn.Sequential):
    """``nn.Sequential(Linear, Tanh, Linear, Tanh, Linear)`` whose forward calls the same three
    ``F.linear`` and two ``torch.tanh`` directly: bit-identical, without five module calls per pass."""

    def __init__(self, *layers):
        super().__init__(*layers)
        self._linears = tuple(layers[::2])

    def forward(self, x):
        (w1, b1), (w2, b2), (w3, b3) = ((m.weight, m.bias) for m in self._linears)
        return F.linear(torch.tanh(F.linear(torch.tanh(F.linear(x, w1, b1)), w2, b2)), w3, b3)


def mlp(n_out: int, out_gain: float, generator: torch.Generator) -> nn.Sequential:
    """8 -> 64 -> 64 -> n_out, tanh, orthogonal init (hidden gain sqrt 2, as SB3 and CleanRL)."""
    net = MLP(nn.Linear(OBS_DIM, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, n_out))
    for layer, gain in zip(net[::2], (2 ** 0.5, 2 ** 0.5, out_gain)):
        nn.init.orthogonal_(layer.weight, gain, generator=generator)
        nn.init.zeros_(layer.bias)
    return net


def make_actor(seed: int) -> nn.Sequential:
    """The policy: 4 action logits (4,996 parameters); small last layer, so it starts near uniform."""
    return mlp(N_ACTIONS, 0.01, torch.Generator().manual_seed(seed))


def make_critic(seed: int) -> nn.Sequential:
    """PPO's and A2C's value function V(s), 8 -> 64 -> 64 -> 1."""
    return mlp(1, 1.0, torch.Generator().manual_seed(seed + 10_000))


def check_obs(obs) -> np.ndarray:
    obs = np.asarray(obs, dtype=np.float32)
    if obs.ndim != 2 or obs.shape[1] != OBS_DIM:
        raise ValueError(f"observations must have shape (n, {OBS_DIM}), got {obs.shape}")
    return obs


@torch.inference_mode()
def policy_logits(actor: nn.Module, obs) -> np.ndarray:
    """Action logits for a batch of observations, shape (n, 4), as NumPy."""
    return actor(torch.from_numpy(check_obs(obs))).numpy()


def sample_actions(logits: np.ndarray, rng: np.random.Generator, greedy: bool = False) -> np.ndarray:
    """argmax(logits + Gumbel noise) is a sample from softmax(logits); ``greedy`` drops the noise."""
    if greedy:
        return logits.argmax(1)
    return (logits - np.log(-np.log(rng.random(logits.shape)))).argmax(1)


def entropy_of(logits) -> np.ndarray:
    """Entropy (nats) of softmax(logits) per row; ln 4 = 1.386 is uniform over the 4 actions."""
    logp = log_softmax(np.asarray(logits, dtype=float))
    return -(np.exp(logp) * logp).sum(1)


def start_obs(seeds) -> np.ndarray:
    """The first observation after ``reset(seed)`` for each seed, shape (n, 8)."""
    env = make_env()
    return np.stack([env.reset(seed=int(s))[0] for s in seeds])


# ---------------------------------------------------------------------------------------------
# Rollouts
# ---------------------------------------------------------------------------------------------
@dataclass
class Episodes:
    """Complete episodes: per episode an (L, 8) obs array, L actions, L rewards and the last obs."""
    obs: list
    actions: list
    rewards: list
    last_obs: list = field(default_factory=list)   # the observation each episode ended in

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(a) for a in self.actions])

    @property
    def returns(self) -> np.ndarray:
        return np.array([float(np.sum(r)) for r in self.rewards])


def play_episodes(envs, seeds, actor, rng, greedy: bool = False, frames: list | None = None) -> Episodes:
    """Fly one complete episode per seed, all in lock-step with one batched forward per step.

    ``envs`` needs at least ``len(seeds)`` environments. ``frames``, if given, collects
    ``envs[0].render()`` after every step (make envs[0] with render_mode="rgb_array").
    """
    n = len(seeds)
    if n > len(envs):
        raise ValueError(f"{n} seeds need at least {n} envs, got {len(envs)}")
    obs = np.stack([envs[i].reset(seed=int(s))[0] for i, s in enumerate(seeds)])
    ep_obs, ep_act, ep_rew = ([[] for _ in range(n)] for _ in range(3))
    if frames is not None:
        frames.append(envs[0].render())
    active = np.ones(n, bool)
    while active.any():
        idx = np.flatnonzero(active)
        actions = sample_actions(policy_logits(actor, obs[idx]), rng, greedy)
        for i, a in zip(idx.tolist(), actions.tolist()):      # Python ints step faster
            ep_obs[i].append(obs[i].copy())
            ep_act[i].append(a)
            obs[i], r, terminated, truncated, _ = envs[i].step(a)
            ep_rew[i].append(r)
            if frames is not None and i == 0:
                frames.append(envs[0].render())
            if terminated or truncated:
                active[i] = False
    return Episodes([np.array(o, np.float32) for o in ep_obs], [np.array(a, np.int64) for a in ep_act],
                    [np.array(r, float) for r in ep_rew], [o.copy() for o in obs])


def episode_outcomes(ep: Episodes) -> dict:
    """How episodes ended, and what they cost. Gymnasium sets the last reward to exactly +100 when
    the lander comes to rest and to exactly -100 when it crashes or flies off; any other last
    reward means the 1000-step limit cut the episode (timed out, e.g. hovering, or resting on its
    legs with an engine still firing: ``legs_down`` counts episodes that end with both legs in
    contact, obs[6] and obs[7])."""
    if not ep.rewards or len(ep.last_obs) != len(ep.rewards):
        raise ValueError(f"episode_outcomes needs at least one episode and each one's last obs, got "
                         f"{len(ep.rewards)} episodes and {len(ep.last_obs)} last obs")
    last = np.array([float(r[-1]) for r in ep.rewards])
    landed, crashed = last == 100.0, last == -100.0
    legs = np.array([o[6] > 0.5 and o[7] > 0.5 for o in ep.last_obs])
    return {"landed": float(landed.mean()), "crashed": float(crashed.mean()),
            "timed_out": float((~landed & ~crashed).mean()), "legs_down": float(legs.mean()),
            "length": float(ep.lengths.mean()),
            "main_engine": float(np.mean([(a == MAIN_ENGINE).sum() for a in ep.actions])),
            "return_mean_minus_std": float(ep.returns.mean() - ep.returns.std())}


def visited_state_entropy(actor, ep: Episodes) -> float:
    """The policy's mean entropy (nats) over every state its episodes visited, not just the start."""
    if not ep.obs:
        raise ValueError("visited_state_entropy needs at least one episode")
    return float(entropy_of(policy_logits(actor, np.concatenate(ep.obs))).mean())


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
    return {"cosine": float(cosine), "snr": float(np.sum(mean ** 2) / noise) if noise > 0 else float("inf")}


@dataclass
class Steps:
    """n_steps x n_envs transitions from running envs; truncated episodes' last obs kept for bootstrap."""
    obs: np.ndarray          # (T, N, 8)
    actions: np.ndarray      # (T, N)
    rewards: np.ndarray      # (T, N)
    dones: np.ndarray        # (T, N): the episode ended at this step (terminated or truncated)
    truncated: list          # (t, i, final obs) where the time limit cut an episode
    next_obs: np.ndarray     # (N, 8): where the envs stand after the last step
    episode_returns: list    # returns of the episodes that ended during these steps


class StepCollector:
    """N envs that keep running across calls (PPO, A2C); each new episode starts at a fresh prompt."""

    def __init__(self, n_envs: int, rng: np.random.Generator):
        self.envs, self.rng = [make_env() for _ in range(n_envs)], rng
        self.obs = np.stack([e.reset(seed=self._prompt())[0] for e in self.envs])
        self.running_return = [0.0] * n_envs

    def _prompt(self) -> int:
        return int(self.rng.integers(*TRAIN_SEEDS))

    def collect(self, actor, n_steps: int) -> Steps:
        N = len(self.envs)
        obs, actions = np.zeros((n_steps, N, OBS_DIM), np.float32), np.zeros((n_steps, N), np.int64)
        rewards, dones = np.zeros((n_steps, N)), np.zeros((n_steps, N), bool)
        truncated, finished = [], []
        for t in range(n_steps):
            obs[t] = self.obs
            actions[t] = sample_actions(policy_logits(actor, self.obs), self.rng)
            next_obs, step_rewards = [], []
            for i, (env, a) in enumerate(zip(self.envs, actions[t].tolist())):   # ints step faster
                o, r, term, trunc, _ = env.step(a)
                step_rewards.append(r)
                self.running_return[i] += r
                if term or trunc:          # reset now: the next stored obs is a fresh start
                    dones[t, i] = True
                    if trunc and not term:
                        truncated.append((t, i, o))
                    finished.append(self.running_return[i])
                    self.running_return[i] = 0.0
                    o, _ = env.reset(seed=self._prompt())
                next_obs.append(o)
            rewards[t], self.obs = step_rewards, np.stack(next_obs)
        return Steps(obs, actions, rewards, dones, truncated, self.obs.copy(), finished)


# ---------------------------------------------------------------------------------------------
# Advantages
# ---------------------------------------------------------------------------------------------
GROUP_EPS = 1e-4     # the study's z-score guard (the toy's grpo_advantages default is 1e-8)


def outcome_advantages(returns, group_size: int) -> np.ndarray:
    """Per episode: (R - mean_g R) / (std_g R + 1e-4) within its group of ``group_size`` episodes.

    Episodes come grouped: [prompt 0 x G, prompt 1 x G, ...]. Uses ``grpo.algos.grpo_advantages``.
    """
    R = np.asarray(returns, dtype=float)
    if group_size < 2 or R.ndim != 1 or len(R) == 0 or len(R) % group_size:
        raise ValueError(f"need G >= 2 and a whole number (>= 1) of groups, got G={group_size}, {R.shape}")
    return np.concatenate([grpo_advantages(g, eps=GROUP_EPS) for g in R.reshape(-1, group_size)])


def returns_to_go(rewards) -> list:
    """Per episode, each step's undiscounted return from that step to the episode's end."""
    return [np.cumsum(np.asarray(r, float)[::-1])[::-1] for r in rewards]


def time_baseline(to_go, group_size: int) -> np.ndarray:
    """Per step, the mean return-to-go of its group's episodes at the same step index (an episode
    that has ended counts 0): a baseline that depends on time, not on the state."""
    if group_size < 2 or not to_go or len(to_go) % group_size:
        raise ValueError(f"need G >= 2 and a whole number (>= 1) of groups, got G={group_size}, {len(to_go)}")
    out = []
    for g in range(0, len(to_go), group_size):
        group = to_go[g:g + group_size]
        padded = np.zeros((group_size, max(map(len, group))))
        for i, x in enumerate(group):
            padded[i, :len(x)] = x
        out += [padded.mean(0)[:len(x)] for x in group]
    return np.concatenate(out)


def baseline_advantages(to_go, baseline, eps: float = GROUP_EPS) -> np.ndarray:
    """(G_t - b_t) / (std over the batch + eps): the return-to-go minus a baseline, scaled like
    GRPO's z-score but not re-centred (the baseline does the centring). All equal: zeros."""
    a = np.asarray(to_go, float) - np.asarray(baseline, float)
    if a.ndim != 1 or not np.isfinite(a).all():
        raise ValueError("returns-to-go and baseline must be finite and of one shape (steps,)")
    return np.zeros_like(a) if np.all(a == a[0]) else a / (a.std() + eps)


def process_advantages(rewards, eps: float = GROUP_EPS) -> list:
    """Process supervision for ONE group: per-step rewards normalised over all the group's steps,
    then each step's advantage is the sum of the normalised rewards from it to its episode's end.
    """
    if len(rewards) < 2 or min(map(len, rewards)) < 1:
        raise ValueError(f"a group needs G >= 2 episodes of >= 1 step, got lengths {list(map(len, rewards))}")
    flat = np.concatenate([np.asarray(r, float) for r in rewards])
    if not np.isfinite(flat).all():
        raise ValueError("rewards contain NaN or inf")
    if np.all(flat == flat[0]):
        return [np.zeros(len(r)) for r in rewards]
    mu, sd = flat.mean(), flat.std()
    return [np.cumsum(((np.asarray(r, float) - mu) / (sd + eps))[::-1])[::-1] for r in rewards]


def step_weights(lengths) -> np.ndarray:
    """Per-step weights 1/L_i (the paper's 1/|o_i|), rescaled to mean 1 over all steps."""
    L = np.asarray(lengths)
    if L.ndim != 1 or len(L) == 0 or (L < 1).any():
        raise ValueError(f"lengths must be a non-empty 1-D array of positive ints, got {L}")
    return np.repeat(L.sum() / len(L) / L, L)


def gae(rewards, values, dones, last_values, gamma: float, lam: float):
    """GAE(gamma, lambda) over (T, N) arrays; ``dones[t]`` ends the episode after step t.

    Returns (advantages, value targets = advantages + values).
    """
    T = len(rewards)
    adv = np.zeros_like(rewards)
    next_adv, next_v = 0.0, last_values
    for t in reversed(range(T)):
        alive = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_v * alive - values[t]
        next_adv = delta + gamma * lam * alive * next_adv
        adv[t] = next_adv
        next_v = values[t]
    return adv, adv + values


def grpo_loss(logp, logp_old, logp_ref, adv, w, clip: float, beta: float):
    """-mean(w * (surrogate - beta * k3)): the GRPO objective as a loss; also returns (clipped, k3)."""
    surr, clipped = clipped_surrogate(logp, logp_old, adv, clip)
    k3 = kl_k3(logp, logp_ref)
    return -(w * (surr - beta * k3)).mean(), clipped, k3


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over each row, shifted by the row's max so exp never overflows."""
    z = logits - logits.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def surrogate_slope(logp, logp_old, adv, clip: float):
    """d surrogate / d logp per step: rho*A where the clip leaves the step alone, 0 where it engaged
    (``grpo.algos.clip_mask``, the same steps as ``clipped_surrogate``'s mask); also the mask."""
    rho = np.exp(logp - logp_old)
    clipped = clip_mask(rho, adv, clip)
    return np.where(clipped, 0, rho * adv), clipped


def _check_rows(logits, actions, *per_step):
    n = len(actions)
    if np.shape(logits) != (n, N_ACTIONS) or any(np.shape(x) != (n,) for x in per_step):
        raise ValueError(f"logits must be ({n}, {N_ACTIONS}) and every per-step array ({n},), got "
                         f"{np.shape(logits)} and {[np.shape(x) for x in per_step]}")


def _logits_grad(logp_all, actions, d_logp) -> np.ndarray:
    """Chain rule through log-softmax: d logp_a / d logits = onehot(a) - softmax(logits)."""
    d = -np.exp(logp_all) * d_logp[:, None]
    d[np.arange(len(actions)), actions] += d_logp
    return d


def grpo_loss_grad(logits, actions, logp_old, logp_ref, adv, w, clip: float, beta: float):
    """``grpo_loss``'s gradient with respect to the logits, in closed form (the tests check it against
    autograd); k3's slope in logp is 1 - exp(logp_ref - logp). Returns (d loss/d logits, clipped, k3)."""
    _check_rows(logits, actions, logp_old, logp_ref, adv, w)
    logp_all = log_softmax(logits)
    logp = logp_all[np.arange(len(actions)), actions]
    slope, clipped = surrogate_slope(logp, logp_old, adv, clip)
    d_logp = -w * (slope - beta * (1 - np.exp(logp_ref - logp))) / len(actions)
    return _logits_grad(logp_all, actions, d_logp), clipped, kl_k3(logp, logp_ref)


def ppo_loss_grad(logits, actions, logp_old, adv, clip: float, ent_coef: float):
    """The gradient of PPO's policy loss -mean(surrogate) - ent_coef * mean(entropy) with respect to
    the logits (closed form, checked against autograd); entropy's slope is -p * (log p + H).
    Returns (d loss / d logits, clipped)."""
    _check_rows(logits, actions, logp_old, adv)
    logp_all = log_softmax(logits)
    slope, clipped = surrogate_slope(logp_all[np.arange(len(actions)), actions], logp_old, adv, clip)
    p = np.exp(logp_all)
    entropy = -(p * logp_all).sum(1, keepdims=True)
    d = _logits_grad(logp_all, actions, -slope / len(actions))
    return d + ent_coef / len(actions) * p * (logp_all + entropy), clipped


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------
class Evaluator:
    """Held-out evaluation: argmax and sampled returns on fixed seeds (same seeds for every algo)."""

    def __init__(self, seeds, rng_seed: int = 0):
        self.seeds = [int(s) for s in seeds]
        self.envs = [make_env() for _ in self.seeds]
        self.rng_seed = rng_seed

    def play(self, actor, greedy: bool) -> Episodes:
        """Every seed flown once, by argmax (``greedy``) or by sampling from a fixed generator."""
        rng = None if greedy else np.random.default_rng(self.rng_seed)
        return play_episodes(self.envs, self.seeds, actor, rng, greedy=greedy)

    def __call__(self, actor) -> dict:
        return {"det": self.play(actor, True).returns, "sampled": self.play(actor, False).returns}


def fly(actor, seed: int, greedy: bool, rng_seed: int = 0, scale: int = 3):
    """Fly one episode from ``reset(seed)`` in a rendering env; returns (frames, return).

    ``frames`` is (L + 1, 400 // scale, 600 // scale, 3) uint8: every ``scale``-th pixel.
    """
    frames = []
    ep = play_episodes([make_env("rgb_array")], [seed], actor, np.random.default_rng(rng_seed),
                       greedy, frames=frames)
    return np.stack(frames)[:, ::scale, ::scale], float(ep.returns[0])


# ---------------------------------------------------------------------------------------------
# Trainers
# ---------------------------------------------------------------------------------------------
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


# rl-zoo's A2C numbers for LunarLander (8 envs x 5 steps, gamma 0.995, lambda 1, entropy 1e-5,
# lr 8.3e-4), with two differences: rl-zoo decays the lr linearly to 0 over the run (lin_0.00083)
# and SB3's A2C uses RMSprop; here the lr stays constant and the optimiser is Adam.
A2C_CONFIG = ActorCriticConfig(n_envs=8, n_steps=5, gamma=0.995, lam=1.0, epochs=1, minibatch=40,
                               lr=8.3e-4, ent_coef=1e-5, normalize_adv=False)


@dataclass(frozen=True)
class GRPOConfig:
    """Outcome GRPO as the published port ran it; ``process=True`` swaps in per-step credit."""
    group_size: int = 16         # G episodes per prompt
    prompts: int = 4             # B prompts per iteration: 64 episodes
    epochs: int = 4
    minibatch: int = 64
    clip: float = 0.2
    lr: float = 3e-4
    adam_eps: float = 1e-5
    max_grad_norm: float = 0.5
    beta: float = 0.04           # k3 KL to the reference policy
    ref_every: int = 10          # iterations between reference refreshes
    process: bool = False
    baseline: str = "group"      # "group": GRPO | "value": a learned V(s) | "time": the group's mean by step
    measure_gradients: bool = False   # log the first epoch's minibatch-gradient agreement


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
    stop_at: float | None = None  # stop once a validation argmax mean reaches this (benches: time to land)

    def resolved_config(self):
        if self.config is not None:
            return self.config
        return {"ppo": ActorCriticConfig(), "a2c": A2C_CONFIG, "grpo": GRPOConfig(),
                "grpo_process": GRPOConfig(process=True), "grpo_value": GRPOConfig(baseline="value"),
                "grpo_time": GRPOConfig(baseline="time")}[self.algo]


def _check_spec(spec: RunSpec) -> None:
    if spec.algo not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS}, got {spec.algo!r}")
    cfg = spec.resolved_config()
    if not (spec.total_steps > 0 and spec.eval_every > 0 and spec.val_episodes > 0
            and spec.test_episodes > 0 and cfg.lr > 0 and cfg.epochs > 0 and cfg.minibatch > 0):
        raise ValueError(f"steps, episodes, lr, epochs and minibatch must be > 0: {spec}")
    if spec.stop_at is not None and not np.isfinite(spec.stop_at):
        raise ValueError(f"stop_at must be a finite return or None, got {spec.stop_at}")
    if isinstance(cfg, GRPOConfig) and (cfg.group_size < 2 or cfg.prompts < 1):
        raise ValueError(f"GRPO needs G >= 2 and B >= 1, got G={cfg.group_size}, B={cfg.prompts}")
    # the label must say what runs: the trainer reads the config, the results carry the label
    grpo = spec.algo.startswith("grpo")
    wanted = GRPOConfig if grpo else ActorCriticConfig
    if not isinstance(cfg, wanted):
        raise ValueError(f"algo {spec.algo!r} needs a config of type {wanted.__name__}, "
                         f"got {type(cfg).__name__}")
    if grpo and cfg.baseline not in ("group", "value", "time"):
        raise ValueError(f"GRPOConfig.baseline must be 'group', 'value' or 'time', got {cfg.baseline!r}")
    if grpo and cfg.baseline != BASELINES[spec.algo]:
        right = next(a for a, b in BASELINES.items() if b == cfg.baseline and a != "grpo_process")
        raise ValueError(f"algo {spec.algo!r} runs baseline {BASELINES[spec.algo]!r}, but the config says "
                         f"{cfg.baseline!r}: use algo={right!r}")
    if grpo and cfg.process != (spec.algo == "grpo_process"):
        raise ValueError(f"algo {spec.algo!r} with a GRPOConfig(process={cfg.process}) would run "
                         f"{'process' if cfg.process else 'outcome'} GRPO under the wrong label: use "
                         f"algo={'grpo_process' if cfg.process else 'grpo'!r}")
    checks = [("clip", cfg.clip, 0 < cfg.clip < 1, "in (0, 1)"),
              ("adam_eps", cfg.adam_eps, cfg.adam_eps > 0, "> 0"),
              ("max_grad_norm", cfg.max_grad_norm, cfg.max_grad_norm > 0, "> 0")]
    if grpo:
        checks += [("beta", cfg.beta, cfg.beta >= 0, ">= 0"),
                   ("ref_every", cfg.ref_every, cfg.ref_every >= 1, ">= 1")]
    else:
        checks += [("gamma", cfg.gamma, 0 < cfg.gamma <= 1, "in (0, 1]"),
                   ("lam", cfg.lam, 0 <= cfg.lam <= 1, "in [0, 1]"),
                   ("n_envs", cfg.n_envs, cfg.n_envs >= 1, ">= 1"),
                   ("n_steps", cfg.n_steps, cfg.n_steps >= 1, ">= 1"),
                   ("vf_coef", cfg.vf_coef, cfg.vf_coef >= 0, ">= 0"),
                   ("ent_coef", cfg.ent_coef, cfg.ent_coef >= 0, ">= 0")]
    for name, value, ok, rule in checks:
        if not (ok and np.isfinite(value)):
            raise ValueError(f"{type(cfg).__name__}.{name} must be {rule}, got {value!r}")


class _Tracker:
    """Env-step counter, periodic evaluation, the best checkpoint per mode and the curves."""

    def __init__(self, spec: RunSpec, progress=None):
        self.spec, self.steps, self.progress = spec, 0, progress
        self.validate = Evaluator(range(VAL_SEED0, VAL_SEED0 + spec.val_episodes), rng_seed=spec.seed)
        self.next_eval = 0
        self.best = {"det": -np.inf, "sampled": -np.inf}       # best validation return per mode,
        self.best_state = {"det": None, "sampled": None}       # and the weights that scored it
        self.curve = {"env_steps": [], "det": [], "sampled": [],
                      "train_cpu_s": []}   # CPU-s of training so far, evaluations left out (benches only)
        self.cpu0, self.eval_cpu = time.process_time(), 0.0
        self.snapshots = []                # (env steps, actor weights) at every evaluation
        self.train_returns = {"env_steps": [], "return": []}

    def add(self, n_steps: int, episode_returns) -> None:
        self.steps += n_steps
        for r in episode_returns:
            self.train_returns["env_steps"].append(self.steps)
            self.train_returns["return"].append(float(r))
        if self.progress is not None:
            self.progress.update(n_steps)

    def maybe_evaluate(self, actor, force: bool = False) -> None:
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
        for mode, score in (("det", det), ("sampled", samp)):   # each mode picks its own checkpoint
            if score > self.best[mode]:
                self.best[mode], self.best_state[mode] = score, copy.deepcopy(actor.state_dict())
        self.eval_cpu += time.process_time() - t

    @property
    def done(self) -> bool:
        det, stop = self.curve["det"], self.spec.stop_at
        return self.steps >= self.spec.total_steps or (stop is not None and bool(det) and det[-1] >= stop)


def train_actor_critic(spec: RunSpec, progress=None) -> dict:
    """PPO (and A2C with A2C_CONFIG): rollouts of n_envs x n_steps, GAE, clipped update with a critic."""
    cfg = spec.resolved_config()
    _check_spec(spec)
    rng = np.random.default_rng(spec.seed)
    actor, critic = make_actor(spec.seed), make_critic(spec.seed)
    pi, vf = FlatMLP(actor), FlatMLP(critic)    # NumPy forward/backward on the modules' own weights
    opt = Adam([pi, vf], lr=cfg.lr, eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm)
    collector, track = StepCollector(cfg.n_envs, rng), _Tracker(spec, progress)
    clip_fracs, iterations, agreement = [], 0, {"env_steps": [], "grad_cosine": [], "grad_snr": []}
    while not track.done:
        track.maybe_evaluate(actor)
        # 1. rollout with the current policy (it is pi_old for this update)
        s = collector.collect(actor, cfg.n_steps)
        track.add(s.rewards.size, s.episode_returns)
        T, N = s.actions.shape
        values = vf.forward(s.obs.reshape(-1, OBS_DIM))[:, 0].reshape(T, N)
        last_v = vf.forward(s.next_obs)[:, 0]
        if s.truncated:                # the time limit is not a terminal state: bootstrap V(last obs)
            final_v = vf.forward(np.stack([o for _, _, o in s.truncated]))[:, 0]
            for (t, i, _), v in zip(s.truncated, final_v):
                s.rewards[t, i] += cfg.gamma * v
        adv, ret = gae(s.rewards, values, s.dones, last_v, cfg.gamma, cfg.lam)
        # 2. flatten; log pi_old computed once
        b_obs, b_act = s.obs.reshape(-1, OBS_DIM), s.actions.reshape(-1)
        b_adv, b_ret = adv.reshape(-1).astype(np.float32), ret.reshape(-1).astype(np.float32)
        b_logp_old = log_softmax(pi.forward(b_obs))[np.arange(T * N), b_act]
        # 3. K epochs of minibatch steps on the clipped surrogate + value loss - entropy bonus
        grads = []
        for epoch in range(cfg.epochs):
            order = rng.permutation(T * N)
            for mb in np.split(order, range(cfg.minibatch, T * N, cfg.minibatch)):
                a = b_adv[mb]
                if cfg.normalize_adv and len(mb) > 1:
                    a = (a - a.mean()) / (a.std(ddof=1) + 1e-8)
                d_logits, clipped = ppo_loss_grad(pi.forward(b_obs[mb]), b_act[mb], b_logp_old[mb], a,
                                                  cfg.clip, cfg.ent_coef)
                pi.backward(d_logits)
                v = vf.forward(b_obs[mb])[:, 0]    # + vf_coef * mean((V - target)^2)
                vf.backward((2 * cfg.vf_coef / len(mb) * (v - b_ret[mb]))[:, None])
                if cfg.measure_gradients and epoch == 0:
                    grads.append(pi.grad.copy())
                opt.step()                         # joint gradient-norm clip, then Adam
                clip_fracs.append(float(clipped.mean()))
        if len(grads) >= 2:
            agree = gradient_agreement(grads)
            for k, v in (("env_steps", track.steps), ("grad_cosine", agree["cosine"]),
                         ("grad_snr", agree["snr"])):
                agreement[k].append(v)
        iterations += 1
    track.maybe_evaluate(actor, force=True)
    return _finish(spec, cfg, actor, track, {"clip_fraction_median": float(np.median(clip_fracs)),
                                             "iterations": iterations, "adam_steps": len(clip_fracs),
                                             "gradient_agreement": agreement})


def train_grpo(spec: RunSpec, progress=None) -> dict:
    """GRPO: B prompts x G episodes, group-relative advantage, clipped update + beta*k3, no critic.
    The controls keep the same batches and update and change only the baseline: ``"value"`` a
    learned V(s), advantage G_t - V(s_t) (lambda = 1, no GAE); ``"time"`` the group's mean G_t at
    the same step index."""
    cfg = spec.resolved_config()
    _check_spec(spec)
    rng = np.random.default_rng(spec.seed)
    actor = make_actor(spec.seed)
    pi = FlatMLP(actor)                        # NumPy forward/backward on the module's own weights
    opt = Adam([pi], lr=cfg.lr, eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm)
    vf = FlatMLP(make_critic(spec.seed)) if cfg.baseline == "value" else None
    if vf is not None:
        critic_opt = Adam([vf], lr=cfg.lr, eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm)
    envs, track = [make_env() for _ in range(cfg.group_size * cfg.prompts)], _Tracker(spec, progress)
    diag = {k: [] for k in ("env_steps", "group_std", "degenerate", "near_degenerate", "kl_median",
                            "kl_max", "clip_fraction", "start_entropy", "grad_cosine", "grad_snr")}
    it = adam_steps = 0
    while not track.done:
        track.maybe_evaluate(actor)
        if it % cfg.ref_every == 0:            # iterative GRPO: the reference follows the actor
            ref = FlatMLP(copy.deepcopy(actor))
        # 1. B prompts (reset seeds), each flown G times with actions sampled from pi_old
        prompts = rng.integers(*TRAIN_SEEDS, size=cfg.prompts)
        seeds = np.repeat(prompts, cfg.group_size)
        ep = play_episodes(envs, seeds, actor, rng)
        track.add(int(ep.lengths.sum()), ep.returns)
        b_obs = np.concatenate(ep.obs)
        # 2. advantages: one number per episode broadcast to its steps, or per-step process credit
        if cfg.process:
            G = cfg.group_size
            adv = np.concatenate([a for g in range(cfg.prompts)
                                  for a in process_advantages(ep.rewards[g * G:(g + 1) * G])])
        elif cfg.baseline == "group":
            adv = np.repeat(outcome_advantages(ep.returns, cfg.group_size), ep.lengths)
        else:                                  # the controls: return-to-go minus V(s_t), or the time mean
            to_go = returns_to_go(ep.rewards)
            if vf is not None:
                base = vf.forward(b_obs)[:, 0].astype(float)
                b_to_go = np.concatenate(to_go).astype(np.float32)
            else:
                base = time_baseline(to_go, cfg.group_size)
            adv = baseline_advantages(np.concatenate(to_go), base)
        w = step_weights(ep.lengths)
        # 3. flatten; log pi_old and log pi_ref computed once
        b_act, rows = np.concatenate(ep.actions), np.arange(len(b_obs))
        b_adv, b_w = adv.astype(np.float32), w.astype(np.float32)
        b_logp_old = log_softmax(pi.forward(b_obs))[rows, b_act]
        b_logp_ref = log_softmax(ref.forward(b_obs))[rows, b_act]
        starts = b_obs[np.concatenate([[0], np.cumsum(ep.lengths)[:-1]])[::cfg.group_size]]
        # 4. K epochs of minibatch steps on the same clipped surrogate, minus beta * k3, no critic
        clip_fracs, kls, grads = [], [], []
        for epoch in range(cfg.epochs):
            order = rng.permutation(len(b_act))
            for mb in np.split(order, range(cfg.minibatch, len(b_act), cfg.minibatch)):
                d_logits, clipped, k3 = grpo_loss_grad(pi.forward(b_obs[mb]), b_act[mb], b_logp_old[mb],
                                                       b_logp_ref[mb], b_adv[mb], b_w[mb], cfg.clip, cfg.beta)
                pi.backward(d_logits)
                if cfg.measure_gradients and epoch == 0:
                    grads.append(pi.grad.copy())
                opt.step()                     # gradient-norm clip, then Adam
                if vf is not None:             # the control's V(s), fitted to G_t on the same minibatch
                    vf.backward((2 / len(mb) * (vf.forward(b_obs[mb])[:, 0] - b_to_go[mb]))[:, None])
                    critic_opt.step()
                clip_fracs.append(float(clipped.mean()))
                if epoch == cfg.epochs - 1:
                    kls.append(k3)
        adam_steps += len(clip_fracs)
        stds = ep.returns.reshape(cfg.prompts, cfg.group_size).std(1)
        kl = np.concatenate(kls)
        agree = gradient_agreement(grads) if len(grads) >= 2 else {"cosine": np.nan, "snr": np.nan}
        for k, v in (("env_steps", track.steps), ("group_std", float(np.mean(stds))),
                     ("degenerate", float(np.mean(stds < GROUP_EPS))),
                     ("near_degenerate", float(np.mean(stds < 1.0))),
                     ("kl_median", float(np.median(kl))), ("kl_max", float(kl.max())),
                     ("clip_fraction", float(np.mean(clip_fracs))),
                     ("start_entropy", float(entropy_of(policy_logits(actor, starts)).mean())),
                     ("grad_cosine", agree["cosine"]), ("grad_snr", agree["snr"])):
            diag[k].append(v)
        it += 1
    track.maybe_evaluate(actor, force=True)
    summary = {"degenerate_fraction": float(np.mean(diag["degenerate"])),
               "near_degenerate_fraction": float(np.mean(diag["near_degenerate"])),
               "kl_median": float(np.median(diag["kl_median"])),
               "clip_fraction_median": float(np.median(diag["clip_fraction"])),
               "group_return_std_median": float(np.median(diag["group_std"])),
               "iterations": it, "adam_steps": adam_steps, "diagnostics": diag}
    return _finish(spec, cfg, actor, track, summary)


def _finish(spec, cfg, actor, track, extra) -> dict:
    """The held-out test: the argmax-chosen checkpoint flown by argmax, the sampled-chosen one
    sampled, and the final policy both ways; how each ended; entropies of the final policy."""
    test = Evaluator(range(TEST_SEED0, TEST_SEED0 + spec.test_episodes), rng_seed=spec.seed)
    chosen = {mode: make_actor(spec.seed) for mode in ("det", "sampled")}
    for mode, net in chosen.items():
        net.load_state_dict(track.best_state[mode])
    flights = {"det": test.play(chosen["det"], True), "sampled": test.play(chosen["sampled"], False),
               "final_det": test.play(actor, True), "final_sampled": test.play(actor, False)}
    out = {"algo": spec.algo, "seed": spec.seed, "env_steps": track.steps,
           "config": asdict(cfg), "curve": track.curve, "train_returns": track.train_returns,
           **{(f"test_{k}" if k in ("det", "sampled") else k): ep.returns.tolist()
              for k, ep in flights.items()},
           "outcomes": {k: episode_outcomes(ep) for k, ep in flights.items()},
           "start_entropy": float(entropy_of(policy_logits(actor, start_obs(test.seeds))).mean()),
           "visited_state_entropy": visited_state_entropy(actor, flights["final_sampled"]),
           "det_state": chosen["det"].state_dict(), "sampled_state": chosen["sampled"].state_dict(),
           "final_state": copy.deepcopy(actor.state_dict()), "snapshots": track.snapshots}
    out.update(extra)
    return out


def train(spec: RunSpec, progress=None) -> dict:
    """Run one (algo, seed) to ``spec.total_steps`` env steps; see ``ALGOS``."""
    torch.set_num_threads(1)
    _check_spec(spec)
    trainer = train_grpo if spec.algo.startswith("grpo") else train_actor_critic
    return trainer(spec, progress)


def run_all(specs, workers: int = 2) -> list:
    """Train every spec in ``workers`` spawned processes, one torch thread each; results in spec order.

    Each run is seeded by its spec alone, so the results do not depend on process scheduling. A
    progress bar counts finished runs (off under the book's ``TQDM_DISABLE``).
    """
    return parallel_map(train, specs, workers, desc="lander runs")


def summarize(runs) -> dict:
    """The registry entry of one algorithm from its per-seed runs (returns on the held-out seeds)."""
    runs = list(runs)
    if not runs:
        raise ValueError("summarize needs at least one run, got none")
    if len({r["algo"] for r in runs}) > 1:
        raise ValueError(f"summarize takes one algorithm's runs, got {sorted({r['algo'] for r in runs})}")
    out = {}
    for mode in ("det", "sampled", "final_det", "final_sampled"):   # det, sampled: the mode's own checkpoint
        key = f"test_{mode}" if mode in ("det", "sampled") else mode
        ret = np.array([r[key] for r in runs])
        out.update({f"{mode}_return_mean": float(ret.mean()), f"{mode}_return_per_seed": ret.mean(1).tolist(),
                    f"{mode}_return_mean_minus_std": float(ret.mean() - ret.std()),
                    f"{mode}_solved_fraction": float((ret >= SOLVED).mean())})
    ends = ("landed", "crashed", "timed_out", "legs_down", "length", "main_engine")
    out["outcomes"] = {mode: {k: float(np.mean([r["outcomes"][mode][k] for r in runs])) for k in ends}
                       for mode in runs[0]["outcomes"]}
    out.update({"start_entropy_mean": float(np.mean([r["start_entropy"] for r in runs])),
                "visited_state_entropy_mean": float(np.mean([r["visited_state_entropy"] for r in runs])),
                "iterations": [r["iterations"] for r in runs],
                "adam_steps": [r.get("adam_steps") for r in runs],
                "env_steps": int(round(np.mean([r["env_steps"] for r in runs]))),
                "env_steps_per_seed": [int(r["env_steps"]) for r in runs]})
    agree = [r["gradient_agreement"] if "gradient_agreement" in r else r["diagnostics"] for r in runs]
    for k in ("grad_cosine", "grad_snr"):   # medians over every update that measured them
        v = np.concatenate([np.asarray(a.get(k, []), float) for a in agree])
        if np.isfinite(v).any():
            out[f"{k}_median"] = float(np.nanmedian(v))
    for k in ("degenerate_fraction", "near_degenerate_fraction", "kl_median", "clip_fraction_median",
              "group_return_std_median"):
        if k in runs[0] and runs[0]["algo"].startswith("grpo"):
            out[k] = float(np.mean([r[k] for r in runs]))
    return out


def load_actor(state_dict) -> nn.Sequential:
    actor = make_actor(0)
    actor.load_state_dict(state_dict)
    return actor


# ---------------------------------------------------------------------------------------------
# Command line: the full published scale (5 seeds x 2M steps) with a progress bar
# ---------------------------------------------------------------------------------------------
def main(argv=None) -> None:
    from tqdm.auto import tqdm
    p = argparse.ArgumentParser(prog="python -m grpo.lander", description=__doc__.split("\n")[0])
    p.add_argument("--algo", choices=ALGOS, required=True)
    p.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1")
    p.add_argument("--steps", type=int, default=2_000_000, help="env steps per seed")
    p.add_argument("--eval-every", type=int, default=100_000)
    p.add_argument("--out", default=None, help="JSON file for the per-seed results")
    a = p.parse_args(argv)
    runs = []
    for seed in range(a.seeds):
        t0 = time.time()
        with tqdm(total=a.steps, desc=f"{a.algo} seed {seed}", unit="step", unit_scale=True) as bar:
            r = train(RunSpec(a.algo, seed, a.steps, eval_every=a.eval_every), progress=bar)
        r = {k: v for k, v in r.items() if not k.endswith("_state") and k != "snapshots"}
        print(f"{a.algo} seed {seed}: test argmax {np.mean(r['test_det']):.1f}, "
              f"sampled {np.mean(r['test_sampled']):.1f} ({time.time() - t0:.0f} s)")
        runs.append(r)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(runs, f)


if __name__ == "__main__":
    main()
