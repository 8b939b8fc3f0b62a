"""Paired statistics for before/after lifts: the same problems scored twice.

A lift is ``after - before`` on the *same* held-out problems, so the right test is paired: each
problem's difference is the unit, and the problem-to-problem spread of a model's skill cancels. A
paired interval is much narrower than two independent ±2 s.e. bands drawn around each accuracy.

``paired_lift(before, after)`` takes per-problem outcomes, a greedy 0/1 or a sampled mean in
[0, 1], shaped ``(problems,)`` or ``(seeds, problems)``, and returns the mean lift in percentage
points with a 95% bootstrap interval:

- per seed: resample problems (with replacement), the same draw for before and after;
- pooled over seeds: resample seeds, then problems (a two-level bootstrap), so the interval carries
  the seed-to-seed spread of training as well as the evaluation's problem-to-problem noise.

A ``before`` of shape ``(problems,)`` is shared by every seed (one start, several GRPO seeds); one of
shape ``(seeds, problems)`` pairs row s with row s (e.g. an ablation against the reference recipe).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Lift:
    points: float                       # mean of after - before over seeds and problems, x 100
    ci95: tuple                         # (low, high), percentage points
    per_seed: tuple                     # each seed's lift, points
    per_seed_ci95: tuple                # each seed's (low, high)
    problems: int
    seeds: int

    @property
    def significant(self) -> bool:
        """The 95% interval excludes 0."""
        return self.ci95[0] > 0 or self.ci95[1] < 0

    def __str__(self) -> str:
        return f"{self.points:+.1f} points [{self.ci95[0]:+.1f}, {self.ci95[1]:+.1f}]"


def _outcomes(x, name) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 1:
        a = a[None]
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"{name} must be (problems,) or (seeds, problems) with problems >= 1, "
                         f"got shape {np.shape(x)}")
    if not np.isfinite(a).all() or a.min() < 0 or a.max() > 1:
        raise ValueError(f"{name} must hold finite per-problem outcomes in [0, 1] (no NaN)")
    return a


def paired_lift(before, after, n_boot: int = 4000, seed: int = 0) -> Lift:
    """The mean lift ``after - before`` in points, with 95% paired-bootstrap intervals (see above)."""
    b, a = _outcomes(before, "before"), _outcomes(after, "after")
    if b.shape[1] != a.shape[1] or b.shape[0] not in (1, a.shape[0]):
        raise ValueError(f"before {b.shape} and after {a.shape} must score the same problems "
                         "(before has 1 row or one row per seed)")
    if b.shape[1] < 2:
        raise ValueError(f"a paired interval needs at least 2 problems, got {b.shape[1]}: resampling one "
                         "problem gives an interval of zero width")
    if n_boot < 100:
        raise ValueError(f"n_boot must be >= 100, got {n_boot}")
    d = 100.0 * (a - b)                                          # (S, P) per-problem lift, points
    S, P = d.shape
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, P, size=(n_boot, P))                   # one problem draw per replicate
    boot = np.stack([row[idx].mean(1) for row in d])             # (S, n_boot)
    per_seed_ci = tuple(tuple(float(v) for v in np.percentile(r, [2.5, 97.5])) for r in boot)
    if S == 1:
        pooled = boot[0]
    else:
        seeds = rng.integers(0, S, size=(n_boot, S))
        pooled = boot[seeds, np.arange(n_boot)[:, None]].mean(1)
    lo, hi = np.percentile(pooled, [2.5, 97.5])
    return Lift(points=float(d.mean()), ci95=(float(lo), float(hi)),
                per_seed=tuple(float(v) for v in d.mean(1)), per_seed_ci95=per_seed_ci,
                problems=P, seeds=S)


__all__ = ["Lift", "paired_lift"]
