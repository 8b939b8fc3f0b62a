"""LunarLander-v3 for chapter 6: the environment, the networks, rollouts and evaluation.

Rollouts step plain ``gym.make`` environments in lock-step with one batched policy forward and
Gumbel-max sampling on the NumPy logits. An episode that ends is reset in the same step, so no
reset transition (Gymnasium's NEXT_STEP autoreset) can enter a batch. Training envs use
``render_mode=None`` (with "rgb_array" and no render call, Box2D flame particles pile up and
stepping slows several-fold).

Seeds: training prompts come from [0, 1e6), periodic evaluation (checkpoint choice) from
[1e6, 1e6 + 1e3), the final held-out test from [2e6, ...).

Precision: the networks compute in float64 (``DTYPE``), so that no CPU's kernel choice (MKL's,
ATen's, NumPy's or OpenBLAS's SIMD path) can reach a sampled action: the kernels then differ by
about 1e-16, where in float32 their 1e-7 differences flip an action within a few hundred updates.
The environment's observations are float32 (Box2D's), stored as they come.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .. import checks
from ..objectives import log_softmax
from ..seeding import seeded_generator

DTYPE = torch.float64          # the networks' precision (see the module docstring)

ENV_ID = "LunarLander-v3"
OBS_DIM, N_ACTIONS = 8, 4
SOLVED = 200.0                         # the task counts as solved at a mean return >= 200
TRAIN_SEEDS = (0, 1_000_000)           # prompts are drawn from here
VAL_SEED0 = 1_000_000                  # periodic evaluation, picks the best checkpoint
TEST_SEED0 = 2_000_000                 # final held-out evaluation
MAIN_ENGINE = 2                        # actions: 0 nothing, 1 left, 2 main, 3 right engine
NO_ENGINE = 0
TIME_LIMIT = 1000                      # LunarLander-v3's steps per episode
SLEEP_STEPS = 25                       # Box2D: asleep after 25 still frames; an engine wakes it


# ---------------------------------------------------------------------------------------------
# Environment and networks
# ---------------------------------------------------------------------------------------------
def make_env(render_mode: str | None = None) -> gym.Env:
    """One LunarLander-v3 with discrete actions (1000-step time limit)."""
    return gym.make(ENV_ID, render_mode=render_mode)


def make_envs(n: int) -> list:
    """``n`` independent LunarLander-v3 environments (``make_env``), one per episode flown at
    once."""
    return [make_env() for _ in range(checks.integer("n", n, minimum=1))]


class MLP(nn.Sequential):
    """``nn.Sequential(Linear, Tanh, Linear, Tanh, Linear)`` whose forward calls the same three
    ``F.linear`` and two ``torch.tanh`` directly: bit-identical, without five module calls per
    pass."""

    def __init__(self, *layers):
        super().__init__(*layers)
        self._linears = tuple(layers[::2])

    def forward(self, x):
        (w1, b1), (w2, b2), (w3, b3) = ((m.weight, m.bias) for m in self._linears)
        return F.linear(torch.tanh(F.linear(torch.tanh(F.linear(x, w1, b1)), w2, b2)), w3, b3)


def mlp(n_out: int, out_gain: float, generator: torch.Generator,
        n_in: int = OBS_DIM) -> nn.Sequential:
    """8 -> 64 -> 64 -> n_out, tanh, orthogonal init (hidden gain sqrt 2, as SB3 and CleanRL)."""
    net = MLP(nn.Linear(n_in, 64, dtype=DTYPE), nn.Tanh(), nn.Linear(64, 64, dtype=DTYPE),
              nn.Tanh(), nn.Linear(64, n_out, dtype=DTYPE))
    for layer, gain in zip(net[::2], (2 ** 0.5, 2 ** 0.5, out_gain)):
        nn.init.orthogonal_(layer.weight, gain, generator=generator)
        nn.init.zeros_(layer.bias)
    return net


def make_actor(seed: int) -> nn.Sequential:
    """The policy: 4 action logits (4,996 parameters);
    small last layer, so it starts near uniform."""
    return mlp(N_ACTIONS, 0.01, seeded_generator(seed))


def make_critic(seed: int, n_in: int = OBS_DIM) -> nn.Sequential:
    """PPO's and A2C's value function V(s), 8 -> 64 -> 64 -> 1 (``n_in`` 9: V(s, t), with time)."""
    return mlp(1, 1.0, seeded_generator(seed + 10_000), n_in)


def check_obs(obs) -> np.ndarray:
    obs = np.asarray(obs, dtype=np.float64)
    if obs.ndim != 2 or obs.shape[1] != OBS_DIM:
        raise ValueError(f"observations must have shape (n, {OBS_DIM}), got {obs.shape}")
    return obs


@torch.inference_mode()
def policy_logits(actor: nn.Module, obs) -> np.ndarray:
    """Action logits for a batch of observations, shape (n, 4), as NumPy."""
    return actor(torch.from_numpy(check_obs(obs))).numpy()


def sample_actions(logits: np.ndarray, rng: np.random.Generator,
                   greedy: bool = False) -> np.ndarray:
    """argmax(logits + Gumbel noise) is a sample from
    softmax(logits); ``greedy`` drops the noise."""
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


def play_episodes(envs, seeds, actor, rng, greedy: bool = False,
                  frames: list | None = None) -> Episodes:
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
    return Episodes([np.array(o, np.float32) for o in ep_obs],
                    [np.array(a, np.int64) for a in ep_act], [np.array(r, float) for r in ep_rew],
                    [o.copy() for o in obs])


def play_groups(envs, prompts: int, group_size: int, actor, rng) -> Episodes:
    """GRPO's rollout: ``prompts`` reset seeds drawn from the training range, each flown
    ``group_size`` times with actions sampled from ``actor`` (episodes k*G to k*G + G - 1 are prompt
    k's group)."""
    seeds = rng.integers(*TRAIN_SEEDS, size=prompts)
    return play_episodes(envs, np.repeat(seeds, group_size), actor, rng)


def episode_outcomes(ep: Episodes) -> dict:
    """How episodes ended, and what they cost. Gymnasium sets the last reward to exactly +100 when
    the lander comes to rest and to exactly -100 when it crashes or flies off; any other last
    reward means the 1000-step limit cut the episode (timed out, e.g. hovering, or resting on its
    legs with an engine still firing: ``legs_down`` counts episodes that end with both legs in
    contact, obs[6] and obs[7])."""
    if not ep.rewards or len(ep.last_obs) != len(ep.rewards):
        raise ValueError("episode_outcomes needs at least one episode and each one's last obs, "
                         f"got {len(ep.rewards)} episodes and {len(ep.last_obs)} last obs")
    last = np.array([float(r[-1]) for r in ep.rewards])
    landed, crashed = last == 100.0, last == -100.0
    legs = np.array([o[6] > 0.5 and o[7] > 0.5 for o in ep.last_obs])
    return {"landed": float(landed.mean()), "crashed": float(crashed.mean()),
            "timed_out": float((~landed & ~crashed).mean()), "legs_down": float(legs.mean()),
            "length": float(ep.lengths.mean()),
            "main_engine": float(np.mean([(a == MAIN_ENGINE).sum() for a in ep.actions])),
            "return_mean_minus_std": float(ep.returns.mean() - ep.returns.std())}


def visited_state_entropy(actor, ep: Episodes) -> float:
    """The policy's mean entropy (nats) over every state
    its episodes visited, not just the start."""
    if not ep.obs:
        raise ValueError("visited_state_entropy needs at least one episode")
    return float(entropy_of(policy_logits(actor, np.concatenate(ep.obs))).mean())


def sleep_gate(actor, ep: Episodes) -> dict:
    """What the +100 asks of a policy once it is down. Gymnasium pays it only when the Box2D body
    falls asleep, which takes SLEEP_STEPS frames in a row with no engine firing (any engine wakes
    it). At every visited state with both legs in contact: the policy's entropy, its probability
    of firing no engine p, and p ** SLEEP_STEPS, the chance of that many quiet steps in a row if p
    held (an upper bound on coming to rest from there: the body must be still as well)."""
    if not ep.obs:
        raise ValueError("sleep_gate needs at least one episode")
    states = np.concatenate(ep.obs)
    down = states[(states[:, 6] > 0.5) & (states[:, 7] > 0.5)]
    if not len(down):
        return {"legs_down_states": 0, "entropy": float("nan"), "p_no_engine": float("nan"),
                "p_quiet_run": float("nan")}
    logits = policy_logits(actor, down)
    p = np.exp(log_softmax(np.asarray(logits, dtype=float)))[:, NO_ENGINE]
    return {"legs_down_states": int(len(down)), "entropy": float(entropy_of(logits).mean()),
            "p_no_engine": float(p.mean()), "p_quiet_run": float(np.mean(p ** SLEEP_STEPS))}




@dataclass
class LanderSteps:
    """n_steps x n_envs transitions from running envs;
    truncated episodes' last obs kept for bootstrap."""
    obs: np.ndarray          # (T, N, 8)
    actions: np.ndarray      # (T, N)
    rewards: np.ndarray      # (T, N)
    dones: np.ndarray        # (T, N): the episode ended at this step (terminated or truncated)
    truncated: list          # (t, i, final obs) where the time limit cut an episode
    next_obs: np.ndarray     # (N, 8): where the envs stand after the last step
    episode_returns: list    # returns of the episodes that ended during these steps


class StepCollector:
    """N envs that keep running across calls (PPO, A2C);
    each new episode starts at a fresh prompt."""

    def __init__(self, n_envs: int, rng: np.random.Generator):
        self.envs, self.rng = make_envs(n_envs), rng
        self.obs = np.stack([e.reset(seed=self._prompt())[0] for e in self.envs])
        self.running_return = [0.0] * n_envs

    def _prompt(self) -> int:
        return int(self.rng.integers(*TRAIN_SEEDS))

    def collect(self, actor, n_steps: int) -> LanderSteps:
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
        return LanderSteps(obs, actions, rewards, dones, truncated, self.obs.copy(), finished)


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------
class Evaluator:
    """Held-out evaluation: argmax and sampled returns on
    fixed seeds (same seeds for every algo)."""

    def __init__(self, seeds, rng_seed: int = 0):
        self.seeds = [int(s) for s in seeds]
        self.envs = make_envs(len(self.seeds))
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


def load_actor(state_dict) -> nn.Sequential:
    actor = make_actor(0)
    actor.load_state_dict(state_dict)
    return actor
