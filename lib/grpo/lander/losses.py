"""Chapter 6's losses and the credit they weigh: GRPO's group advantages (outcome and process), the
controls' baselines, PPO's GAE, and the GRPO and PPO losses with their closed-form gradients in the
logits.

Outcome GRPO z-scores the G returns of a group (``grpo.objectives.group_advantages`` with eps 1e-4)
and broadcasts the result to every step of the episode; process GRPO normalises the per-step
rewards over the whole group and sums them to the episode's end (``process_advantages``). Both
trainers' policy step ascends the clipped surrogate of ``grpo.surrogate.clipped_surrogate``
(``lander_grpo_loss``) through its closed-form slope (``surrogate_slope``). The gradients are
written out (``grpo_loss_grad``, ``ppo_loss_grad``) because autograd's per-op overhead dominates on
minibatches of 64; the tests check them against autograd.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kl import kl_k3
from ..objectives import action_logprobs, clip_mask, group_advantages, log_softmax
from ..surrogate import clipped_surrogate
from .env import N_ACTIONS

GROUP_EPS = 1e-4     # the study's z-score guard (the toy's grpo_advantages default is 1e-8)


def outcome_advantages(returns, group_size: int) -> np.ndarray:
    """Per episode: (R - mean_g R) / (std_g R + 1e-4) within its group of ``group_size`` episodes.

    Episodes come grouped: [prompt 0 x G, prompt 1 x G, ...]. Uses
    ``grpo.objectives.group_advantages``.
    """
    R = np.asarray(returns, dtype=float)
    if group_size < 2 or R.ndim != 1 or len(R) == 0 or len(R) % group_size:
        raise ValueError(f"need G >= 2 and a whole number (>= 1) of groups, got G={group_size}, "
                         f"{R.shape}")
    return group_advantages(R.reshape(-1, group_size), eps=GROUP_EPS).ravel()


def returns_to_go(rewards) -> list:
    """Per episode, each step's undiscounted return from that step to the episode's end."""
    return [np.cumsum(np.asarray(r, float)[::-1])[::-1] for r in rewards]


def time_baseline(to_go, group_size: int) -> np.ndarray:
    """Per step, the mean return-to-go of its group's episodes at the same step index (an episode
    that has ended counts 0): a baseline that depends on time, not on the state."""
    if group_size < 2 or not to_go or len(to_go) % group_size:
        raise ValueError(f"need G >= 2 and a whole number (>= 1) of groups, got G={group_size}, "
                         f"{len(to_go)}")
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
        raise ValueError(f"a group needs G >= 2 episodes of >= 1 step, got lengths "
                         f"{list(map(len, rewards))}")
    flat = np.concatenate([np.asarray(r, float) for r in rewards])
    if not np.isfinite(flat).all():
        raise ValueError("rewards contain NaN or inf")
    if np.all(flat == flat[0]):
        return [np.zeros(len(r)) for r in rewards]
    mu, sd = flat.mean(), flat.std()
    return [np.cumsum(((np.asarray(r, float) - mu) / (sd + eps))[::-1])[::-1] for r in rewards]


def ended_at_terminal(ep) -> np.ndarray:
    """Per episode: True when it ended in a terminal state (landed or crashed: a last reward of
    exactly +100 or -100), False when the time limit cut it."""
    return np.array([float(r[-1]) in (100.0, -100.0) for r in ep.rewards])


def episode_gae(rewards, values, terminal, last_values, gamma: float, lam: float):
    """GAE(gamma, lambda) over complete episodes of different lengths (``gae`` per episode).
    ``values``: V at every step, episodes concatenated; an episode that ended in a terminal state
    is worth 0 after its last step, one the time limit cut is bootstrapped from ``last_values``
    (V of the state it was cut in). Returns (advantages, value targets), concatenated."""
    n_steps = sum(map(len, rewards))
    if not (len(rewards) == len(terminal) == len(last_values)) or len(values) != n_steps:
        raise ValueError("need one terminal flag and last value per episode and one value per "
                         f"step, got {len(rewards)} episodes, {len(terminal)}, {len(last_values)}, "
                         f"{len(values)} values for {n_steps} steps")
    adv, start = [], 0
    for r, done, last_v in zip(rewards, terminal, last_values):
        v = np.asarray(values[start:start + len(r)], float)[:, None]
        dones = np.zeros((len(r), 1))
        dones[-1] = done
        r_col = np.asarray(r, float)[:, None]
        adv.append(gae(r_col, v, dones, np.array([last_v]), gamma, lam)[0][:, 0])
        start += len(r)
    adv = np.concatenate(adv)
    return adv, adv + np.asarray(values, float)


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
    adv = np.zeros(np.shape(rewards))                  # float, whatever the rewards' dtype
    next_adv, next_v = 0.0, last_values
    for t in reversed(range(T)):
        alive = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_v * alive - values[t]
        next_adv = delta + gamma * lam * alive * next_adv
        adv[t] = next_adv
        next_v = values[t]
    return adv, adv + values


def lander_grpo_loss(logp, logp_old, logp_ref, adv, w, clip: float, beta: float):
    """-mean(w * (surrogate - beta * k3)): the GRPO objective as a loss; also returns
    (clipped, k3)."""
    surr, clipped = clipped_surrogate(logp, logp_old, adv, clip)
    k3 = kl_k3(logp, logp_ref)
    return -(w * (surr - beta * k3)).mean(), clipped, k3


def surrogate_slope(logp, logp_old, adv, clip: float):
    """d surrogate / d logp per step: rho*A where the clip leaves the step alone, 0 where it engaged
    (``grpo.objectives.clip_mask``, the same steps as ``clipped_surrogate``'s mask); also the
    mask."""
    rho = np.exp(logp - logp_old)
    clipped = clip_mask(rho, adv, clip)
    return np.where(clipped, 0, rho * adv), clipped


def _check_rows(logits, actions, *per_step):
    n = len(actions)
    if np.shape(logits) != (n, N_ACTIONS) or any(np.shape(x) != (n,) for x in per_step):
        raise ValueError(f"logits must be ({n}, {N_ACTIONS}) and every per-step array ({n},), got "
                         f"{np.shape(logits)} and {[np.shape(x) for x in per_step]}")
    a = np.asarray(actions)
    if a.dtype.kind not in "iu" or (n and (a.min() < 0 or a.max() >= N_ACTIONS)):
        raise ValueError(f"actions must be ints in [0, {N_ACTIONS}), got {a[:8]}")


def _logits_grad(logp_all, actions, d_logp) -> np.ndarray:
    """Chain rule through log-softmax: d logp_a / d logits = onehot(a) - softmax(logits)."""
    d = -np.exp(logp_all) * d_logp[:, None]
    d[np.arange(len(actions)), actions] += d_logp
    return d


class GRPOLossGrad(NamedTuple):
    """What ``grpo_loss_grad`` returns for one minibatch."""
    d_logits: np.ndarray     # d loss / d logits, (M, N_ACTIONS)
    clipped: np.ndarray      # per step: whether the clip took the slope away
    k3: float                # the minibatch's k3 estimate of KL(pi_theta || pi_ref)


def grpo_loss_grad(logits, actions, logp_old, logp_ref, adv, w, clip: float,
                   beta: float) -> GRPOLossGrad:
    """``lander_grpo_loss``'s gradient with respect to the logits, in closed form (the tests check
    it against autograd); k3's slope in logp is 1 - exp(logp_ref - logp)."""
    _check_rows(logits, actions, logp_old, logp_ref, adv, w)
    logp_all = log_softmax(logits)
    logp = logp_all[np.arange(len(actions)), actions]
    slope, clipped = surrogate_slope(logp, logp_old, adv, clip)
    d_logp = -w * (slope - beta * (1 - np.exp(logp_ref - logp))) / len(actions)
    return GRPOLossGrad(_logits_grad(logp_all, actions, d_logp), clipped, kl_k3(logp, logp_ref))


def normalize_advantages(adv) -> np.ndarray:
    """SB3's per-minibatch advantage normalisation, (a - mean) / (sample std + 1e-8); a single step
    is left as it is (its sample std is undefined)."""
    adv = np.asarray(adv, dtype=float)
    return adv if len(adv) < 2 else (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)


class PPOLossGrad(NamedTuple):
    """What ``ppo_loss_grad`` returns for one minibatch."""
    d_logits: np.ndarray     # d loss / d logits, (M, N_ACTIONS)
    clipped: np.ndarray      # per step: whether the clip took the slope away


def ppo_loss_grad(logits, actions, logp_old, adv, clip: float, ent_coef: float) -> PPOLossGrad:
    """The gradient of PPO's policy loss -mean(surrogate) - ent_coef * mean(entropy) with respect to
    the logits (closed form, checked against autograd); entropy's slope is -p * (log p + H)."""
    _check_rows(logits, actions, logp_old, adv)
    logp_all = log_softmax(logits)
    logp = logp_all[np.arange(len(actions)), actions]
    slope, clipped = surrogate_slope(logp, logp_old, adv, clip)
    p = np.exp(logp_all)
    entropy = -(p * logp_all).sum(1, keepdims=True)
    d = _logits_grad(logp_all, actions, -slope / len(actions))
    return PPOLossGrad(d + ent_coef / len(actions) * p * (logp_all + entropy), clipped)


def ratio_stats(logits, actions, logp_old, clip: float) -> tuple[float, float]:
    """How far a minibatch step's policy is from pi_old, as Stable-Baselines3 and CleanRL log it:
    the fraction of steps with |rho - 1| > clip (whether or not the clipped branch won), and
    approx-KL mean((rho - 1) - log rho), k3 of pi_theta against pi_old."""
    _check_rows(logits, actions, logp_old)
    log_ratio = action_logprobs(logits, actions) - logp_old
    return (float(np.mean(np.abs(np.expm1(log_ratio)) > clip)),
            float(np.mean(np.expm1(log_ratio) - log_ratio)))


def explained_variance(predicted, target) -> float:
    """1 - Var(target - predicted) / Var(target): 1 is a perfect value net, 0 no better than the
    mean, below 0 worse; NaN when the targets do not vary."""
    predicted, target = np.asarray(predicted, float), np.asarray(target, float)
    if predicted.shape != target.shape or predicted.ndim != 1:
        raise ValueError(f"predicted and target must be equal 1-D arrays, got {predicted.shape} "
                         f"and {target.shape}")
    var = target.var()
    return float(1 - (target - predicted).var() / var) if var > 0 else float("nan")
