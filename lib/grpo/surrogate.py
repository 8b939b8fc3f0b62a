"""The clipped surrogate in torch: the per-step objective that PPO and GRPO share (chapters 6 and
8).

The toy chapters ascend the same objective in closed form with NumPy
(``grpo.toy.algos.clipped_update``, whose ``clip_mask`` marks the same steps as ``clipped``
here). With a neural policy the objective is written as a loss and differentiated by autograd:

    surrogate_t = min(rho_t * A_t, clip(rho_t, 1 - eps_low, 1 + eps_high) * A_t),
    rho_t = exp(logp_t - logp_old_t).

``eps_high`` defaults to ``eps_low`` (PPO's symmetric band); DAPO's clip-higher sets it larger.
How the per-step values are averaged into one loss (per batch, per answer, per token) is the
caller's choice, because that is exactly where GRPO's variants differ.
"""
from __future__ import annotations

import math

import torch

from . import checks


def _check_surrogate_args(logp, logp_old, adv, eps_low, eps_high):
    if not all(isinstance(x, torch.Tensor) for x in (logp, logp_old, adv)):
        raise TypeError("logp, logp_old and adv must be torch tensors")
    if logp.shape != logp_old.shape:
        raise ValueError(f"logp and logp_old must have the same shape, got {tuple(logp.shape)} "
                         f"and {tuple(logp_old.shape)}")
    if adv.shape != logp.shape:            # broadcast only when needed: the common case is equal
        try:
            shape = torch.broadcast_shapes(adv.shape, logp.shape)
        except RuntimeError:
            shape = None
        # e.g. logp (3,) with adv (3, 1) would give a (3, 3) outer product
        if shape != logp.shape:
            raise ValueError(f"adv of shape {tuple(adv.shape)} does not broadcast to logp's "
                             f"{tuple(logp.shape)}")
    checks.non_negative("eps_low", eps_low)
    checks.optional(checks.non_negative, "eps_high", eps_high)
    if eps_low >= 1:
        raise ValueError(f"eps_low must be < 1 (rho cannot fall below 0), got {eps_low}")
    for name, x in (("logp", logp), ("logp_old", logp_old), ("adv", adv)):
        if not _all_finite(x.detach()):
            raise ValueError(f"{name} contains NaN or inf")


def _all_finite(x: torch.Tensor) -> bool:
    """``torch.isfinite(x).all()``, usually in one reduction: a finite sum proves every entry finite
    (NaN or inf anywhere makes the sum NaN or inf); only a non-finite sum (a bad entry, or an
    overflow of finite ones) takes the elementwise check."""
    if x.is_complex():
        return bool(torch.isfinite(x).all())
    return math.isfinite(x.sum()) or bool(torch.isfinite(x).all())


def clipped_surrogate(logp, logp_old, adv, eps_low: float = 0.2, eps_high: float | None = None):
    """Per-step ``min(rho*A, clip(rho, 1-eps_low, 1+eps_high)*A)`` and where the clip engaged.

    Returns ``(surrogate, clipped)``, both shaped like ``logp``. ``clipped`` is True where the flat
    branch won (rho past the band in A's direction), so that step contributes no gradient; a
    step past the band *against* A's direction keeps its gradient (a correction). Maximise the
    surrogate, i.e. minimise its negative mean under the caller's weighting.
    """
    _check_surrogate_args(logp, logp_old, adv, eps_low, eps_high)
    eps_high = eps_low if eps_high is None else eps_high
    rho = torch.exp(logp - logp_old)
    unclipped = rho * adv
    flat = torch.clamp(rho, 1.0 - eps_low, 1.0 + eps_high) * adv
    return torch.minimum(unclipped, flat), flat < unclipped
