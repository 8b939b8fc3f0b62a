"""Paired statistics for before/after lifts: the same problems scored twice.

A lift is ``after - before`` on the *same* held-out problems, so the right test is paired: each
problem's difference is the unit, and the problem-to-problem spread of a model's skill cancels. A
paired interval is much narrower than two independent ±2 s.e. bands drawn around each accuracy.

``paired_lift(before, after)`` takes per-problem outcomes, a greedy 0/1 or a sampled mean in
[0, 1], shaped ``(problems,)`` or ``(seeds, problems)``, and returns the mean lift in percentage
points with a 95% interval:

- per seed: a bootstrap over problems (with replacement), the same draw for before and after;
- over S >= 2 seeds: the interval must carry the seed-to-seed spread of training as well as the
  evaluation's problem-to-problem noise, and a bootstrap over 2 or 3 seeds understates the first
  (it has only 3 or 10 distinct draws, and shrinks the variance by (S - 1) / S). So the half-width
  adds, in quadrature, a t-interval over the S per-seed lifts (S - 1 degrees of freedom: at S = 2
  the t quantile is 12.7) and the problem bootstrap of the seed-averaged differences. The two
  overlap (each seed's lift carries some problem noise), which makes the interval conservative:
  ``tests/test_stats.py`` shows by simulation that it covers at least 95% at S = 2, 3 and 5.

``clusters`` (one label per problem) makes the unit of the problems' bootstrap a cluster instead of
a problem: the word-problem chapters pass each problem's calculation chain, so two rewordings of
one calculation count once, as the arithmetic a model is tested on does.

A ``before`` of shape ``(problems,)`` is shared by every seed (one start, several GRPO seeds); one
of shape ``(seeds, problems)`` pairs row s with row s (e.g. an ablation against the reference
recipe).

``over_seeds(values)`` is the plain case, one number per seed (chapter 6's returns, or their paired
differences seed by seed): the mean with a t-interval on S - 1 degrees of freedom.

``group_change(before, after, groups, categories)`` says where a change in categorical readings
(chapter 11's four ways of reading an answer) sits: each group of problems' shares before and
after (``shares_by_group``), and the points of the whole change each group carries, which sum to
the whole change.

``lift_gap(before, after, in_a, in_b)`` tests an interaction: whether the lift on one subset of
problems differs from the lift on another. ``holm(p_values)`` adjusts a family of tests (Holm 1979,
step-down, controls the family-wise error rate); ``Lift.p_value`` is the two-sided p-value of the
same construction, so a table of lifts can be corrected as a family: the p at which the
interval, rebuilt at level 1 - p from the same two parts (the problems' bootstrap at a normal
quantile, the seeds' spread at Student's t on S - 1 dof), just reaches 0. Below 0.05 exactly when
the 95% interval excludes 0. A normal tail at the interval's scale would be far too thin for a
2- or 3-seed interval beyond its edge, and a family correction multiplies exactly those small
p-values.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import checks

# two-sided 97.5% quantiles of Student's t, by degrees of freedom (scipy is not a dependency)
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t_two_sided_p(t: float, dof: int) -> float:
    """P(|T| >= |t|) for Student's T on ``dof`` (an int >= 1) degrees of freedom, exactly, by the
    closed forms for integer dof (Abramowitz and Stegun 26.7.3-4)."""
    dof = checks.integer("dof", dof, minimum=1)
    t = abs(float(t))
    if math.isnan(t):
        raise ValueError("t must be a number, got nan")
    if math.isinf(t):
        return 0.0
    theta = math.atan(t / math.sqrt(dof))
    c2 = math.cos(theta) ** 2
    if dof % 2:                                   # odd: (2/pi)(theta + sin cos (1 + 2/3 c^2 + ...))
        term, total = 1.0, 1.0 if dof > 1 else 0.0
        for k in range(1, (dof - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inside = 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    else:                                         # even: sin (1 + 1/2 c^2 + 1.3/2.4 c^4 + ...)
        term, total = 1.0, 1.0
        for k in range(1, dof // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        inside = math.sin(theta) * total
    return min(1.0, max(0.0, 1.0 - inside))


def t975(dof: int) -> float:
    """Student's t 97.5% quantile (a two-sided 95% interval), tabled; 1.96 beyond 30 dof."""
    dof = checks.integer("dof", dof, minimum=1)
    if dof in _T975:
        return _T975[dof]
    if dof > 30:
        return 1.96 + 2.4 / dof                     # within 0.005 of the exact value beyond 30
    lower = max(k for k in _T975 if k < dof)
    upper = min(k for k in _T975 if k > dof)
    w = (1 / dof - 1 / upper) / (1 / lower - 1 / upper)     # interpolate in 1 / dof
    return w * _T975[lower] + (1 - w) * _T975[upper]


def _quantile(p: float, dof: int | None) -> float:
    """The two-sided quantile q with P(|X| >= q) = p: X normal (``dof=None``) or Student's t."""
    def tail(q):
        return math.erfc(q / math.sqrt(2)) if dof is None else t_two_sided_p(q, dof)
    lo, hi = 0.0, 1.0
    while tail(hi) > p:
        lo, hi = hi, hi * 2
    for _ in range(200):                          # bisection to float resolution
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if tail(mid) > p else (lo, mid)
    return hi


def interval_p_value(estimate: float, problem_half: float, seed_half: float = 0.0,
                     dof: int | None = None) -> float:
    """The two-sided p-value of 'estimate is 0' that agrees with a 95% interval of half-width
    hypot(problem_half, seed_half), where ``problem_half`` is 1.96 normal standard errors and
    ``seed_half`` is t975(dof) standard errors of a t on ``dof`` degrees of freedom: the p at which
    the interval rebuilt at level 1 - p just reaches 0 (a z-test, a t-test, or between)."""
    if problem_half < 0 or seed_half < 0 or (seed_half > 0 and dof is None):
        raise ValueError(f"problem_half and seed_half must be >= 0, and seed_half needs dof; got "
                         f"{problem_half}, {seed_half}, dof={dof}")
    se_p, se_s = problem_half / 1.96, (seed_half / t975(dof) if seed_half > 0 else 0.0)
    target = abs(estimate)
    if se_p == 0 and se_s == 0:
        return 0.0 if target > 0 else 1.0
    if se_p == 0:
        return t_two_sided_p(target / se_s, dof)
    if se_s == 0:
        return math.erfc(target / se_p / math.sqrt(2))

    def reach(log_p):  # the rebuilt interval's half-width at level 1 - p, minus |estimate|
        p = math.exp(log_p)
        return math.hypot(_quantile(p, None) * se_p, _quantile(p, dof) * se_s) - target
    lo, hi = -700.0, 0.0                          # log p: reach is decreasing in p
    if reach(lo) < 0:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if reach(mid) > 0 else (lo, mid)
    return math.exp((lo + hi) / 2)


@dataclass(frozen=True)
class Lift:
    points: float                       # mean of after - before over seeds and problems, x 100
    ci95: tuple                         # (low, high), percentage points
    per_seed: tuple                     # each seed's lift, points
    per_seed_ci95: tuple                # each seed's (low, high)
    problems: int
    seeds: int
    problem_half: float | None = None   # the interval's parts: the problems' bootstrap half-width
    seed_half: float = 0.0              # and the seeds' t-term, combined in quadrature (S >= 2)

    @property
    def significant(self) -> bool:
        """The 95% interval excludes 0."""
        return self.ci95[0] > 0 or self.ci95[1] < 0

    @property
    def p_value(self) -> float:
        """Two-sided p-value of 'no lift' that the interval inverts (see the module docstring),
        the quantity a family correction such as ``holm`` needs."""
        problem_half = ((self.ci95[1] - self.ci95[0]) / 2 if self.problem_half is None
                        else self.problem_half)
        return interval_p_value(self.points, problem_half, self.seed_half,
                                self.seeds - 1 if self.seed_half > 0 else None)

    @property
    def unit(self) -> str:
        """What the interval varies over, in words a page can print beside it: the problems (or
        the clusters they were resampled by) of one run, or those and the seeds."""
        if self.seeds == 1:
            return f"over {self.problems:,} problems, one run"
        return f"across {self.seeds} seeds and {self.problems:,} problems"

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


def _cluster_index(clusters, n_problems: int) -> np.ndarray:
    labels = list(clusters)
    if len(labels) != n_problems:
        raise ValueError(f"clusters must give one label per problem ({n_problems}), "
                         f"got {len(labels)}")
    index = {}
    try:
        ids = np.array([index.setdefault(label, len(index)) for label in labels])
    except TypeError as err:
        raise ValueError(f"clusters must be hashable labels (tuples, strs, ints): {err}") from None
    if len(index) < 2:
        raise ValueError("clusters must name at least 2 distinct clusters: resampling one gives "
                         "an interval of zero width")
    return ids


def paired_lift(before, after, n_boot: int = 4000, seed: int = 0, clusters=None) -> Lift:
    """The mean lift ``after - before`` in points, with 95% paired intervals (see above).
    ``clusters``, one hashable label per problem, resamples clusters of problems instead of
    problems (a cluster bootstrap: the mean is still over problems)."""
    b, a = _outcomes(before, "before"), _outcomes(after, "after")
    if b.shape[1] != a.shape[1] or b.shape[0] not in (1, a.shape[0]):
        raise ValueError(f"before {b.shape} and after {a.shape} must score the same problems "
                         "(before has 1 row or one row per seed)")
    if b.shape[1] < 2:
        raise ValueError(f"a paired interval needs at least 2 problems, got {b.shape[1]}: "
                         "resampling one problem gives an interval of zero width")
    n_boot = checks.integer("n_boot", n_boot, minimum=100)
    d = 100.0 * (a - b)                                          # (S, P) per-problem lift, points
    S, P = d.shape
    rng = np.random.default_rng(seed)
    if clusters is None:
        idx = rng.integers(0, P, size=(n_boot, P))               # one problem draw per replicate
        boot = np.stack([row[idx].mean(1) for row in d])         # (S, n_boot)
    else:
        ids = _cluster_index(clusters, P)
        K = int(ids.max()) + 1
        size = np.bincount(ids, minlength=K).astype(float)
        idx = rng.integers(0, K, size=(n_boot, K))               # one cluster draw per replicate
        boot = np.stack([np.bincount(ids, row, minlength=K)[idx].sum(1) / size[idx].sum(1)
                         for row in d])
    per_seed_ci = tuple(tuple(float(v) for v in np.percentile(r, [2.5, 97.5])) for r in boot)
    mean = float(d.mean())
    lo, hi = np.percentile(boot.mean(0), [2.5, 97.5])           # problems resampled, seeds averaged
    problem_half, seed_half = float(hi - lo) / 2, 0.0
    if S > 1:
        seed_half = t975(S - 1) * float(d.mean(1).std(ddof=1)) / math.sqrt(S)
        half = math.hypot(problem_half, seed_half)
        lo, hi = mean - half, mean + half
    return Lift(points=mean, ci95=(float(lo), float(hi)),
                per_seed=tuple(float(v) for v in d.mean(1)), per_seed_ci95=per_seed_ci,
                problems=P, seeds=S, problem_half=problem_half, seed_half=seed_half)


def lift_gap(before, after, in_a, in_b, n_boot: int = 4000, seed: int = 0) -> Lift:
    """An interaction test: the lift on the problems ``in_a`` minus the lift on those ``in_b`` (two
    boolean masks over the problems), with the interval built as ``paired_lift`` builds its own:
    problems resampled within each subset, and over S >= 2 seeds a t-term for the seeds' spread of
    the gap. ``per_seed`` holds each seed's gap."""
    b, a = _outcomes(before, "before"), _outcomes(after, "after")
    in_a, in_b = np.asarray(in_a, dtype=bool), np.asarray(in_b, dtype=bool)
    if in_a.shape != (a.shape[1],) or in_b.shape != (a.shape[1],
                                                     ) or in_a.sum() < 2 or in_b.sum() < 2:
        raise ValueError(f"in_a and in_b must be boolean masks over the {a.shape[1]} problems, "
                         f"each with at least 2 problems")
    d = 100.0 * (a - b)
    S = d.shape[0]
    rng = np.random.default_rng(seed)
    ia = rng.choice(np.flatnonzero(in_a), size=(n_boot, int(in_a.sum())))
    ib = rng.choice(np.flatnonzero(in_b), size=(n_boot, int(in_b.sum())))
    boot = d.mean(0)[ia].mean(1) - d.mean(0)[ib].mean(1)
    per_seed = d[:, in_a].mean(1) - d[:, in_b].mean(1)
    gap = float(per_seed.mean())
    lo, hi = np.percentile(boot, [2.5, 97.5])
    problem_half = float(hi - lo) / 2
    seed_half = t975(S - 1) * float(per_seed.std(ddof=1)) / math.sqrt(S) if S > 1 else 0.0
    half = math.hypot(problem_half, seed_half)
    return Lift(points=gap, ci95=(gap - half, gap + half),
                per_seed=tuple(float(v) for v in per_seed), per_seed_ci95=(),
                problems=int(in_a.sum() + in_b.sum()), seeds=S, problem_half=problem_half,
                seed_half=seed_half)


@dataclass(frozen=True)
class GroupShares:
    """The share of each reading within each group of problems (``shares_by_group``)."""
    categories: tuple                   # the readings, in the order given
    sizes: dict                         # group -> problems in it (groups in sorted order)
    shares: dict                        # group -> {reading: share in [0, 1], mean over the runs}
    overall: dict                       # reading -> share over every problem


@dataclass(frozen=True)
class GroupChange:
    """Where a change in readings sits (``group_change``): the shares before and after, the whole
    change, and the points of it each group carries."""
    before: GroupShares
    after: GroupShares
    whole: dict                         # reading -> points: after's overall share minus before's
    carried: dict                       # group -> {reading: points}; over the groups, ``whole``


def _readings(x, name: str, categories: tuple) -> np.ndarray:
    a = np.asarray(x, dtype=object)
    if a.ndim == 1:
        a = a[None]
    if a.ndim != 2 or a.shape[1] == 0 or a.shape[0] == 0:
        raise ValueError(f"{name} must be (problems,) or (runs, problems) readings with problems "
                         f">= 1, got shape {np.shape(x)}")
    unknown = sorted({repr(v) for v in a.ravel().tolist() if v not in categories})
    if unknown:
        raise ValueError(f"{name} holds readings outside categories {list(categories)}: "
                         f"{', '.join(unknown[:5])}")
    return a


def _categories(categories) -> tuple:
    cats = tuple(categories)
    if not cats or len(set(cats)) != len(cats):
        raise ValueError(f"categories must name each reading once, at least one, got {cats!r}")
    return cats


def shares_by_group(readings, groups, categories) -> GroupShares:
    """Each reading's share within each group of problems: ``readings`` one per problem, shaped
    ``(problems,)`` or ``(runs, problems)`` (every run scored on the same problems; a group's share
    is the mean over the runs), each one of ``categories``; ``groups`` one hashable label per
    problem. ``overall`` is the share over every problem, the groups weighted by their sizes."""
    cats = _categories(categories)
    a = _readings(readings, "readings", cats)
    labels = [g.item() if isinstance(g, np.generic) else g for g in groups]   # np.str_ -> str
    if len(labels) != a.shape[1]:
        raise ValueError(f"groups must give one label per problem ({a.shape[1]}), got "
                         f"{len(labels)}")
    try:
        order = sorted(set(labels), key=repr)
    except TypeError as err:
        raise ValueError(f"groups must be hashable labels (strs, ints, tuples): {err}") from None
    member = {g: np.array([lab == g for lab in labels]) for g in order}
    return GroupShares(
        categories=cats, sizes={g: int(m.sum()) for g, m in member.items()},
        shares={g: {c: float((a[:, m] == c).mean()) for c in cats} for g, m in member.items()},
        overall={c: float((a == c).mean()) for c in cats})


def group_change(before, after, groups, categories) -> GroupChange:
    """The change in each reading's share from the runs ``before`` to the runs ``after`` (each as
    ``shares_by_group`` takes them, on the same problems), and the points of it each group
    carries: 100 x (the group's share of the problems) x (the change of its share), so that over
    the groups they add up to the whole change."""
    cats = _categories(categories)
    b, a = _readings(before, "before", cats), _readings(after, "after", cats)
    if b.shape[1] != a.shape[1]:
        raise ValueError(f"before {b.shape} and after {a.shape} must read the same problems")
    sb, sa = shares_by_group(b, groups, cats), shares_by_group(a, groups, cats)
    n = sum(sb.sizes.values())
    return GroupChange(
        before=sb, after=sa,
        whole={c: 100.0 * (sa.overall[c] - sb.overall[c]) for c in cats},
        carried={g: {c: 100.0 * size / n * (sa.shares[g][c] - sb.shares[g][c]) for c in cats}
                 for g, size in sb.sizes.items()})


@dataclass(frozen=True)
class SeedInterval:
    mean: float                         # over the seeds
    ci95: tuple                         # (low, high): mean +- t975(S - 1) * sd / sqrt(S)
    per_seed: tuple

    @property
    def significant(self) -> bool:
        """The 95% interval excludes 0."""
        return self.ci95[0] > 0 or self.ci95[1] < 0

    @property
    def p_value(self) -> float:
        """Two-sided p-value of 'mean 0': the t-test on S - 1 dof that the interval inverts."""
        return interval_p_value(self.mean, 0.0, (self.ci95[1] - self.ci95[0]) / 2,
                                len(self.per_seed) - 1)

    def __str__(self) -> str:
        return f"{self.mean:+.1f} [{self.ci95[0]:+.1f}, {self.ci95[1]:+.1f}]"


def over_seeds(values) -> SeedInterval:
    """The mean of one value per seed, S >= 2, with a 95% t-interval on S - 1 degrees of freedom
    (at S = 3 the quantile is 4.30: with so few seeds the interval is wide, as it should be)."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or len(v) < 2 or not np.isfinite(v).all():
        raise ValueError(f"values must be one finite number per seed, S >= 2, got {values!r:.80}")
    half = t975(len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return SeedInterval(float(v.mean()), (float(v.mean() - half), float(v.mean() + half)),
                        tuple(float(x) for x in v))


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values for a family of tests (reject where adjusted < 0.05):
    the k-th smallest p times (m - k + 1), made monotone, capped at 1."""
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or len(p) == 0 or not np.isfinite(p).all() or p.min() < 0 or p.max() > 1:
        raise ValueError("p_values must be a non-empty 1-D array of numbers in [0, 1], got "
                         f"{p_values!r:.80}")
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


__all__ = ["Lift", "SeedInterval", "GroupShares", "GroupChange", "paired_lift", "lift_gap",
           "over_seeds", "holm", "t975", "t_two_sided_p", "interval_p_value", "shares_by_group",
           "group_change"]
