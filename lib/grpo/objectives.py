"""The pieces of GRPO's objective that every chapter shares, in NumPy: the group-relative
advantage, where the clip engages, and a log-softmax.

* ``grpo_advantages(scores, eps)``: A_i = (r_i - mean r) / (std r + eps) for one group; an
  all-equal group gives exactly 0 (chapter 4): the one home of GRPO's z-score;
* ``group_advantages(rewards, advantage, eps)``: a (B, G) batch of groups, each its
  ``grpo_advantages`` ("zscore"), or one of the baselines the book compares ("center", "rloo",
  "raw", TRL's "trl"), NumPy or torch in, the same out (the lander and the language model call
  it): what differs from ``grpo_advantages`` is the batch and the choice of baseline;
* ``clip_mask(rho, adv, eps)``: where PPO's ``min(rho*A, clip(rho, 1-eps, 1+eps)*A)`` takes the
  flat branch, so that step gets no gradient (chapters 3-4; ``grpo.surrogate`` is its torch twin);
* ``log_softmax(logits)``: row-wise, max-shifted (chapter 6's closed-form gradients), and
  ``action_logprobs(logits, actions)``, the log-probability of each row's chosen action.

The toy (``grpo.toy.algos``), the lander and the language model import them from here.
"""
from __future__ import annotations

import numpy as np

from . import checks


def grpo_advantages(scores, eps: float = 1e-8) -> np.ndarray:
    """A_i = (r_i - mean r) / (std r + eps), population std, for one group of G >= 2 scores.

    A group whose scores are all equal carries no signal: every advantage is exactly 0.
    ``eps`` only guards the division: the toy's scores lie in [0, 1] (1e-8); LunarLander's returns
    span hundreds, and its port uses the published study's 1e-4 (chapter 6).
    """
    r = _check_group_scores(scores, eps)
    if np.all(r == r[0]):
        return np.zeros_like(r)        # exactly 0: r - r.mean() can be off by rounding, / eps
    return (r - r.mean()) / (r.std() + eps)


GROUP_ADVANTAGES = ("zscore", "center", "rloo", "raw", "trl")
TRL_STD_EPS = 1e-4        # what TRL 1.16 adds to a group's std (scale_rewards="group")


def group_advantages(rewards, advantage: str = "zscore", eps: float = 1e-8):
    """(B, G) rewards, one row a group, -> (B, G) advantages, one per sample.

    "zscore": (r - mean) / (std + eps), population std: ``grpo_advantages`` on each group.
    "center": r - mean (Dr. GRPO). "rloo": r_i minus the mean of the group's *other* G - 1
    rewards, the leave-one-out baseline of RLOO (Ahmadian et al. 2024), G / (G - 1) times
    "center". "raw": r itself (no baseline: an all-right group still pushes every sample up).
    "trl": (r - mean) / (unbiased std + 1e-4), as TRL's GRPOTrainer computes it (``eps`` is not
    used): sqrt((G - 1) / G) times "zscore" where the std is large against 1e-4.
    Every kind but "raw" gives exactly 0 on a group whose rewards are all equal.

    A torch tensor comes back as a tensor of its dtype and device, computed in float64 NumPy.
    """
    checks.choice("advantage", advantage, GROUP_ADVANTAGES)
    checks.positive("eps", eps)
    like = rewards if type(rewards).__module__.startswith("torch") else None
    r = (rewards.detach().cpu().double().numpy() if like is not None
         else np.asarray(rewards, dtype=float))
    checks.reward_groups("rewards", r.shape, bool(np.isfinite(r).all()))
    if advantage == "raw":
        adv = r
    elif advantage == "zscore":                                 # chapter 4's, group by group
        adv = np.stack([grpo_advantages(group, eps) for group in r])
    else:
        centered = r - r.mean(1, keepdims=True)
        if advantage == "trl":
            centered = centered / (r.std(1, ddof=1, keepdims=True) + TRL_STD_EPS)
        elif advantage == "rloo":                               # r_i - (sum r - r_i) / (G - 1)
            centered = centered * r.shape[1] / (r.shape[1] - 1)
        # exactly 0: r - r.mean() can be off by rounding, and the std division would blow it up
        adv = np.where((r == r[:, :1]).all(1, keepdims=True), 0.0, centered)
    if like is None:
        return adv
    import torch
    return torch.as_tensor(adv, dtype=like.dtype, device=like.device)


def _check_group_scores(scores, eps=1e-8):
    r = np.asarray(scores, dtype=float)
    if r.ndim != 1:
        raise ValueError(f"scores must be one group, shape (G,), got {r.shape}")
    if len(r) < 2:
        raise ValueError(f"a group needs G >= 2 scores to compare, got G = {len(r)}")
    if not np.isfinite(r).all():
        raise ValueError("scores contain NaN or inf")
    checks.positive("eps", eps)
    return r


def clip_mask(rho, adv, eps: float) -> np.ndarray:
    """Where ``min(rho*A, clip(rho, 1-eps, 1+eps)*A)`` takes the flat, clipped branch.

    That is rho > 1+eps with A > 0 (already pushed up far enough) or rho < 1-eps with A < 0
    (already pushed down far enough). A *correction*, rho outside the band against A's direction,
    keeps the unclipped branch and its gradient.
    """
    rho, adv = _check_clip_args(rho, adv, eps)
    high, low = rho.dtype.type(1 + eps), rho.dtype.type(1 - eps)  # in rho's precision, as torch
    return ((adv > 0) & (rho > high)) | ((adv < 0) & (rho < low))


def _check_clip_args(rho, adv, eps):
    rho, adv = (x if x.dtype.kind == "f" else x.astype(float) for x in map(np.asarray, (rho, adv)))
    if rho.shape != adv.shape:
        raise ValueError(f"rho and adv must have the same shape, got {rho.shape} and {adv.shape}")
    checks.non_negative("eps", eps)
    return rho, adv


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over each row, shifted by the row's max so exp never overflows."""
    z = logits - logits.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def action_logprobs(logits: np.ndarray, actions) -> np.ndarray:
    """log pi(a_t | s_t) for each row's chosen action: ``log_softmax(logits)[t, actions[t]]``."""
    return log_softmax(logits)[np.arange(len(actions)), actions]


__all__ = ["grpo_advantages", "group_advantages", "GROUP_ADVANTAGES", "TRL_STD_EPS", "clip_mask",
           "log_softmax", "action_logprobs"]
