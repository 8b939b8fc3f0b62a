"""Per-sample KL estimators k1, k2, k3 (Schulman's "Approximating KL divergence") and exact KL.

For a sampled action ``a ~ pi_theta`` write ``u = log pi_ref(a) - log pi_theta(a)`` (so the ratio
``x = pi_ref(a) / pi_theta(a) = exp(u)``). The three one-sample estimates of KL(pi_theta || pi_ref):

    k1 = -u                     unbiased, negative whenever x > 1
    k2 = u**2 / 2               biased, >= 0
    k3 = exp(u) - u - 1         unbiased, >= 0 sample by sample (GRPO's per-token KL)

Every estimator takes the two log-probabilities of the *sampled* actions, ``logp`` (under the
policy being penalised, pi_theta) and ``logp_ref``, as NumPy arrays or torch tensors of the same
shape, and returns the same type and shape. torch inputs stay differentiable.

Numerics of k3. It is computed as ``expm1(u) - u``: near u = 0 the naive ``exp(u) - u - 1`` loses
everything to cancellation (at u = 1e-8 it returns 0 or 1.1e-16 instead of 5e-17), while expm1
keeps the absolute error near eps * |u|. For large negative u (pi_ref far below pi_theta) it
returns -u - 1 accurately. For large positive u it overflows to +inf (u > ~709 in float64, ~88 in
float32) and never to NaN; its gradient with respect to ``logp`` is then -inf too. Pass
``max_log_ratio`` to clamp u from above first (the penalty then stops growing, and its gradient is
zero, beyond that log-ratio).

Inputs: ``logp`` must be finite (a sampled action has positive probability under the policy that
sampled it); ``logp_ref`` may be -inf (an action the reference rules out: every estimator is +inf).
NaN, +inf, mismatched shapes or mixed NumPy/torch inputs raise ValueError.
"""
from __future__ import annotations

import sys

import numpy as np

PROB_SUM_ATOL = 1e-6   # how far from 1 a distribution's total may be (float64 inputs)


def _torch():
    """torch if it has been imported (a torch tensor cannot exist before that), else None."""
    return sys.modules.get("torch")


def _is_tensor(x) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def _as_pair(logp, logp_ref):
    """Validate a (logp, logp_ref) pair; return them as
    two arrays or two tensors, and the backend."""
    if _is_tensor(logp) != _is_tensor(logp_ref):
        raise ValueError("logp and logp_ref must both be NumPy arrays or both be torch tensors, "
                         f"got {type(logp).__name__} and {type(logp_ref).__name__}")
    if _is_tensor(logp):
        torch = _torch()
        if not (logp.is_floating_point() and logp_ref.is_floating_point()):
            raise ValueError("logp and logp_ref must be floating-point tensors")
        xp, isnan, isinf = torch, torch.isnan, torch.isinf
        detached = (logp.detach(), logp_ref.detach())
    else:
        logp = np.asarray(logp, dtype=float)
        logp_ref = np.asarray(logp_ref, dtype=float)
        xp, isnan, isinf = np, np.isnan, np.isinf
        detached = (logp, logp_ref)
    if tuple(logp.shape) != tuple(logp_ref.shape):
        raise ValueError(f"logp and logp_ref must have the same shape, got {tuple(logp.shape)} "
                         f"and {tuple(logp_ref.shape)}")
    lp, lr = detached
    if bool(isnan(lp).any()) or bool(isnan(lr).any()):
        raise ValueError("logp and logp_ref must not contain NaN")
    if bool(isinf(lp).any()):
        raise ValueError("logp must be finite: a sampled action has positive probability under "
                         "the policy that is penalised")
    if bool((lr == float("inf")).any()):
        raise ValueError("logp_ref must not be +inf (it is a log-probability)")
    return logp, logp_ref, xp


def log_ratio(logp, logp_ref):
    """u = logp_ref - logp = log(pi_ref(a) / pi_theta(a)), validated (same type out as in)."""
    logp, logp_ref, _ = _as_pair(logp, logp_ref)
    return logp_ref - logp


def kl_k1(logp, logp_ref):
    """k1 = -log x = logp - logp_ref: unbiased for KL(pi_theta || pi_ref), but can be negative."""
    return -log_ratio(logp, logp_ref)


def kl_k2(logp, logp_ref):
    """k2 = (log x)**2 / 2: non-negative, low variance, biased (exact only to second order)."""
    u = log_ratio(logp, logp_ref)
    return 0.5 * u * u


def kl_k3(logp, logp_ref, max_log_ratio: float | None = None):
    """k3 = x - log x - 1 = expm1(u) - u with u = logp_ref - logp: unbiased and >= 0 per sample.

    ``max_log_ratio``: if given, u is clamped to at most this value before k3 is computed.
    """
    u = _clamp_log_ratio(log_ratio(logp, logp_ref), max_log_ratio)
    # u = -inf -> -1 + inf = inf; u large -> expm1 overflows to inf, inf - u = inf; never NaN
    if _is_tensor(u):
        return _torch().expm1(u) - u
    with np.errstate(over="ignore"):
        return np.expm1(u) - u


def _clamp_log_ratio(u, max_log_ratio):
    """u clamped to at most ``max_log_ratio`` (a positive finite number), or u unchanged if None."""
    if max_log_ratio is None:
        return u
    if not np.isfinite(max_log_ratio) or max_log_ratio <= 0:
        raise ValueError(f"max_log_ratio must be a positive finite number, got {max_log_ratio}")
    return u.clamp(max=max_log_ratio) if _is_tensor(u) else np.minimum(u, max_log_ratio)


def check_distribution(p, name: str = "p"):
    """Validate categorical distribution(s) along the last axis; return p as an array or tensor."""
    if _is_tensor(p):
        if not p.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor")
        v = p.detach()
        tol = PROB_SUM_ATOL if v.dtype == _torch().float64 else 1e-4
        finite, nonneg = bool(_torch().isfinite(v).all()), bool((v >= 0).all())
        sums = v.sum(-1) if v.ndim else v
        bad_sum = v.ndim >= 1 and bool(((sums - 1).abs() > tol).any())
    else:
        p = np.asarray(p, dtype=float)
        tol = PROB_SUM_ATOL
        finite = bool(np.isfinite(p).all())
        nonneg = bool((p >= 0).all()) if finite else True
        bad_sum = p.ndim >= 1 and finite and bool((np.abs(p.sum(-1) - 1) > tol).any())
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"{name} must have at least one category along its last axis, "
                         f"got shape {tuple(p.shape)}")
    if not finite:
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if not nonneg:
        raise ValueError(f"{name} must be non-negative")
    if bad_sum:
        raise ValueError(f"{name} must sum to 1 along its last axis (within {tol:g})")
    return p


def exact_kl(p, q):
    """KL(p || q) = sum_a p(a) log(p(a)/q(a)) over the last axis, for categorical p and q.

    Terms with p(a) = 0 are 0; p(a) > 0 with q(a) = 0 gives +inf. NumPy in, NumPy out; torch in,
    torch out (differentiable). Both must be distributions of the same shape.
    """
    if _is_tensor(p) != _is_tensor(q):
        raise ValueError("p and q must both be NumPy arrays or both be torch tensors")
    p, q = check_distribution(p, "p"), check_distribution(q, "q")
    if tuple(p.shape) != tuple(q.shape):
        raise ValueError(f"p and q must have the same shape, got {tuple(p.shape)} and "
                         f"{tuple(q.shape)}")
    if _is_tensor(p):
        xlogy = _torch().special.xlogy
        return (xlogy(p, p) - xlogy(p, q)).sum(-1)
    with np.errstate(divide="ignore"):
        terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q)), 0.0)
    return terms.sum(-1)


def expected_estimator_grad(estimator, logits, logp_ref, sample_probs=None):
    """E_{a ~ sample_probs}[ d estimator(log pi_theta(a), logp_ref(a)) / d logits ], by enumeration.

    The expected gradient a per-sample KL estimate contributes when it is used directly as a loss
    and back-propagated (the sampled actions held fixed). ``logits`` (shape (V,), float64 torch
    tensor) define pi_theta = softmax(logits); ``logp_ref`` is the reference log-probability of
    every action (shape (V,)); ``sample_probs`` is the sampling distribution, pi_theta by default
    (pass pi_theta_old's probabilities for the off-policy case). Returns a tensor of shape (V,).
    """
    torch, sample_probs = _check_grad_args(logits, logp_ref, sample_probs)
    z = logits.detach().clone().requires_grad_(True)
    logp = torch.log_softmax(z, dim=-1)
    w = logp.detach().exp() if sample_probs is None else sample_probs
    (grad,) = torch.autograd.grad((w.detach() * estimator(logp, logp_ref.detach())).sum(), z)
    return grad


def _check_grad_args(logits, logp_ref, sample_probs):
    torch = _torch()
    if torch is None or not _is_tensor(logits):
        raise ValueError("logits must be a torch tensor")
    if logits.ndim != 1 or logits.shape[0] < 2:
        raise ValueError(f"logits must have shape (V,) with V >= 2, got {tuple(logits.shape)}")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("logits must be finite")
    if not _is_tensor(logp_ref) or tuple(logp_ref.shape) != tuple(logits.shape):
        raise ValueError("logp_ref must be a torch tensor with the same shape as logits")
    if sample_probs is None:
        return torch, None
    if not _is_tensor(sample_probs):
        raise TypeError(f"sample_probs must be a torch tensor like logits, got "
                        f"{type(sample_probs).__name__}")
    w = check_distribution(sample_probs, "sample_probs")
    if tuple(w.shape) != tuple(logits.shape):
        raise ValueError("sample_probs must have the same shape as logits")
    return torch, w


# ---------------------------------------------------------------------------------------------
# Test distributions (chapter 5): random pairs of softmax policies
# ---------------------------------------------------------------------------------------------
def softmax(z):
    """softmax over the last axis, max-shifted (NumPy)."""
    z = np.asarray(z, dtype=float)
    if z.ndim == 0 or z.shape[-1] == 0:
        raise ValueError(f"z needs a last axis of categories, got shape {z.shape}")
    if not np.isfinite(z).all():
        raise ValueError("z contains NaN or inf")
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def random_pair(rng, vocab: int, sigma: float):
    """(pi_theta, pi_ref): pi_ref = softmax(z), pi_theta = softmax(z + sigma * eps), z and eps
    standard normal over ``vocab`` categories; sigma sets how far apart the two are."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a np.random.Generator, got {type(rng).__name__}")
    if isinstance(vocab, bool) or not isinstance(vocab, (int, np.integer)) or vocab < 2:
        raise ValueError(f"vocab must be an integer >= 2, got {vocab!r}")
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.integer, np.floating)) \
            or not np.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be a number >= 0, got {sigma!r}")
    z = rng.normal(size=vocab)
    return softmax(z + sigma * rng.normal(size=vocab)), softmax(z)


def sample_tokens(rng, p, n: int) -> np.ndarray:
    """``n`` token indices drawn from the categorical distribution ``p`` by its inverse CDF."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a np.random.Generator, got {type(rng).__name__}")
    p = check_distribution(p, "p")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return np.minimum(np.searchsorted(np.cumsum(p), rng.random(n), side="right"), len(p) - 1)


ESTIMATORS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}


def estimator_moments(pi, ref, tokens=None) -> dict:
    """How k1, k2 and k3 behave on one pair of distributions, exactly and on a sample.

    Returns ``{"kl": KL(pi || ref), "k1": {...}, "k2": {...}, "k3": {...}}`` where each estimator
    has its exact ``mean`` and ``std`` under ``pi`` (every token enumerated). Given ``tokens``
    (indices sampled from ``pi``), each estimator also has the sample's ``mc_mean``, ``mc_std``
    (ddof 1) and ``mc_min``, and ``k1_negative`` is the share of tokens where k1 < 0."""
    pi, ref = check_distribution(pi, "pi"), check_distribution(ref, "ref")
    if pi.shape != ref.shape:
        raise ValueError(f"pi and ref must have the same shape, got {pi.shape} and {ref.shape}")
    lp, lr = np.log(pi), np.log(ref)
    row = {"kl": exact_kl(pi, ref)}
    if tokens is not None:
        tokens = np.asarray(tokens)
        if tokens.ndim != 1 or len(tokens) < 2 or not np.issubdtype(tokens.dtype, np.integer) \
                or tokens.min() < 0 or tokens.max() >= len(pi):
            raise ValueError("tokens must be at least two indices into pi")
        row["k1_negative"] = (lr[tokens] > lp[tokens]).mean()
    for name, k in ESTIMATORS.items():
        every = k(lp, lr)                           # the estimator's value on every token
        mean = (pi * every).sum()
        row[name] = {"mean": mean, "std": np.sqrt((pi * (every - mean) ** 2).sum())}
        if tokens is not None:
            row[name].update(mc_mean=every[tokens].mean(), mc_std=every[tokens].std(ddof=1),
                             mc_min=every[tokens].min())
    return row


def moments_summary(rows) -> dict:
    """Many pairs' ``estimator_moments`` (each with sampled tokens) summed up relative to each
    pair's KL: the median KL, the share of negative k1 tokens, and per estimator its sampled
    relative bias (mean, and its standard error over the pairs), sampled ``std`` / KL, and the
    same two exactly (``bias_exact``, ``std_exact``)."""
    rows = list(rows)
    if len(rows) < 2 or any("k1_negative" not in r for r in rows):
        raise ValueError("rows must be at least two estimator_moments results with sampled tokens")
    kls = np.array([r["kl"] for r in rows])
    out = {"median_kl": float(np.median(kls)),
           "k1_negative_share": float(np.mean([r["k1_negative"] for r in rows]))}
    for name in ESTIMATORS:
        rel_bias = np.array([r[name]["mc_mean"] for r in rows]) / kls - 1
        out[name] = {"bias": float(rel_bias.mean()),
                     "bias_se": float(rel_bias.std(ddof=1) / np.sqrt(len(rows))),
                     "std": float(np.mean([r[name]["mc_std"] for r in rows] / kls)),
                     "bias_exact": float(np.mean([r[name]["mean"] for r in rows] / kls - 1)),
                     "std_exact": float(np.mean([r[name]["std"] for r in rows] / kls))}
    return out


def estimator_grid(vocabs, sigmas, pairs: int, tokens: int, seed: int) -> dict:
    """``moments_summary`` for every (vocabulary size, distance) cell: ``pairs`` random pairs
    (``random_pair``), each sampled ``tokens`` times from its policy. Each cell draws from its own
    generator, seeded by ``seed``, its vocabulary and its distance's position, so a cell's figures
    do not depend on which other cells are computed."""
    out = {}
    for vocab in vocabs:
        for k, sigma in enumerate(sigmas):
            rng = np.random.default_rng([seed, vocab, k])
            rows = []
            for _ in range(pairs):
                pi, ref = random_pair(rng, vocab, sigma)
                rows.append(estimator_moments(pi, ref, sample_tokens(rng, pi, tokens)))
            out[vocab, sigma] = {"rows": rows, "summary": moments_summary(rows)}
    return out
