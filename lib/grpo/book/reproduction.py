"""The reproduction report's bookkeeping: published figures against the results registry.

``data/published.json`` holds every published figure the chapters compare against: its value (a
number, or a range ``[lo, hi]`` with ``null`` for an open end), the precision it was published at
(``unit``), its source, the registry value it is compared with (``"NN_name:key.subkey"``) and how
its noise is judged (``noise``). ``judge`` turns one entry into a verdict; the report
(``book/reproduction.ipynb``) measures the noise the toy's figures need and draws the table.

``RULES`` says, for every noise kind, when a figure of that kind is within noise; the report
prints the rules its figures use, so the page describes every rule it applies. A figure with a
sigma is within noise when |ours - published| <= 2 sigma; against a range, the difference is the
distance from the range. ``within`` is None where the comparison is not judged (``context``) or
cannot decide (``group_range`` with a group that never crosses, the published value later than
every group that does); ``Verdict.reason`` says why.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from .results import results_dir

RULES = {
    "exact": "A count: within only if ours equals the published value.",
    "rounding": "A value published at a precision $u$ (its last digit): within if ours rounds to "
                "it, $|\\text{ours} - \\text{published}| \\le u/2$.",
    "floor_set": "A fixed policy scored on a set of 200 floors: the published set and ours are two "
                 "draws, so $\\sigma^2 = 2\\sigma_\\text{set}^2 + u^2/12$, with "
                 "$\\sigma_\\text{set}$ the spread across sets of 200 fresh floors and $u$ the "
                 "published unit; within if $|\\text{ours} - \\text{published}| \\le 2\\sigma$.",
    "trained": "An algorithm trained on 5 seeds and scored on a set of 200 floors: both floor sets "
               "and both sets of seeds differ, so $\\sigma^2 = 2(\\sigma_\\text{set}^2 + "
               "\\sigma_\\text{seed}^2/5) + u^2/12$, with $\\sigma_\\text{seed}$ the spread of "
               "our 5 seeds' final values; within if $|\\text{ours} - \\text{published}| \\le "
               "2\\sigma$. Shares of the ceiling divide by each set's own ceiling, which removes "
               "most of the floor-set noise.",
    "seeds": "Our mean over $n$ seeds against a published figure from $m$ runs ($m = n$ unless the "
             "source published one run): $\\sigma^2 = s^2 (1/n + 1/m)$, with $s^2$ the variance "
             "of our per-seed values; within if $|\\text{ours} - \\text{published}| \\le "
             "2\\sigma$. Against a one-sided bound (\"below 200\") the difference is how far ours "
             "lies beyond the bound (0 inside it), and the bound holds within the same "
             "$2\\sigma$.",
    "group_range": "Where a seed mean first crosses a level, seed mean against seed mean: our "
                   "seeds in groups as large as the published run, each group's crossing. Within "
                   "if the published value lies between our earliest and latest crossing, outside "
                   "if it is earlier than every group's. Where it is later than every group that "
                   "crosses and a group never crosses within the run, the comparison cannot "
                   "decide: it is *not decided*, counted apart and never as a match.",
    "band": "A target the book set itself, not a published result: met if ours lies inside the "
            "range.",
    "context": "Not the same experiment (for example half the published steps): shown beside the "
               "published figure for scale, never judged, counted nowhere.",
}
NOISE_KINDS = tuple(RULES)


class _NotRun:
    def __repr__(self):
        return "NOT_RUN"


NOT_RUN = _NotRun()       # the registry file does not exist yet: the chapter has not been run


@dataclass(frozen=True)
class Verdict:
    ours: object              # our value, or NOT_RUN
    difference: float | None  # ours - published (distance from a published range)
    sigma: float | None       # the noise of the difference, where the kind has one (0 for exact)
    within: bool | None       # None when not run, not comparable ("context") or not decided
    reason: str | None = None  # why a judged kind could not decide (within is None)

    @property
    def counted(self) -> bool:
        return self.ours is not NOT_RUN


def published_path() -> Path:
    """data/published.json, beside the results registry."""
    return results_dir().parent / "published.json"


def load_published(path: str | Path | None = None) -> dict:
    """Read and check the published figures file."""
    data = json.loads(Path(path or published_path()).read_text())
    sources = data.get("sources", {})
    for i, fig in enumerate(data.get("figures", [])):
        missing = {"chapter", "figure", "published", "unit", "source", "ours", "noise"} - set(fig)
        if missing:
            raise ValueError(f"figure {i} ({fig.get('figure')!r}) lacks {sorted(missing)}")
        if fig["noise"] not in NOISE_KINDS:
            raise ValueError(f"figure {fig['figure']!r}: unknown noise kind {fig['noise']!r}")
        if fig["source"] not in sources:
            raise ValueError(f"figure {fig['figure']!r}: unknown source {fig['source']!r}")
        if fig["noise"] == "context" and not fig.get("explanation"):
            raise ValueError(f"figure {fig['figure']!r}: a context row needs its 'explanation'")
        if fig["noise"] in ("seeds", "group_range") and "seeds" not in fig:
            raise ValueError(f"figure {fig['figure']!r}: noise {fig['noise']!r} needs 'seeds'")
        if not (isinstance(fig["unit"], (int, float)) and fig["unit"] > 0):
            raise ValueError(f"figure {fig['figure']!r}: unit must be a positive number")
        _check_ref(fig["ours"])
    return data


def _check_ref(ref):
    if not isinstance(ref, str) or ref.count(":") != 1 or not all(ref.split(":")):
        raise ValueError(f"a registry reference looks like 'NN_name:key.subkey', got {ref!r}")


def registry_value(ref: str, folder: str | Path | None = None):
    """The value at 'NN_name:key.subkey' in the results
    registry, or NOT_RUN if the file is absent."""
    _check_ref(ref)
    name, key = ref.split(":")
    path = Path(folder or results_dir()) / f"{name}.json"
    if not path.exists():
        return NOT_RUN
    value = json.loads(path.read_text())
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(f"{path.name} has no {key!r} (missing at {part!r})")
        value = value[part]
    return value


def difference(ours: float, published) -> float:
    """ours - published, or the signed distance from a published range [lo, hi] (0 inside it)."""
    if isinstance(published, list):
        lo = -math.inf if published[0] is None else published[0]
        hi = math.inf if published[1] is None else published[1]
        return ours - lo if ours < lo else (ours - hi if ours > hi else 0.0)
    return ours - published


def judge(fig: dict, sigma: float | None = None, folder: str | Path | None = None) -> Verdict:
    """One published figure against ours. ``sigma`` is required for the kinds the caller measures
    (floor_set, trained) and ignored otherwise."""
    ours = registry_value(fig["ours"], folder)
    if ours is NOT_RUN:
        return Verdict(NOT_RUN, None, None, None)
    if not isinstance(ours, (int, float)) or isinstance(ours, bool):
        raise ValueError(f"{fig['ours']} is {ours!r}, not a number")
    kind, unit = fig["noise"], fig["unit"]
    diff = difference(ours, fig["published"])
    if kind == "context":
        return Verdict(ours, diff, None, None)
    if kind == "exact":
        return Verdict(ours, diff, 0.0, diff == 0)
    if kind == "rounding":
        return Verdict(ours, diff, None, abs(diff) <= unit / 2)
    if kind == "band":
        return Verdict(ours, diff, None, diff == 0)
    if kind == "group_range":
        return _group_range(fig, ours, diff, registry_value(fig["seeds"], folder))
    if kind == "seeds":
        per_seed = [float(v) for v in registry_value(fig["seeds"], folder)]
        if len(per_seed) < 2:
            raise ValueError(f"{fig['seeds']}: need at least 2 seeds to measure their spread")
        n = len(per_seed)
        m = fig.get("published_runs", n)
        mean = sum(per_seed) / n
        var = sum((v - mean) ** 2 for v in per_seed) / (n - 1)
        sigma = math.sqrt(var * (1 / n + 1 / m))
    elif sigma is None or not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"figure {fig['figure']!r} ({kind}) needs its measured sigma, got "
                         f"{sigma!r}")
    return Verdict(ours, diff, float(sigma), abs(diff) <= 2 * sigma)


def _group_range(fig: dict, ours, diff: float, groups: list) -> Verdict:
    """The published crossing against our groups' crossings (None: the group never crosses)."""
    if not isinstance(groups, list) or not groups:
        raise ValueError(f"{fig['seeds']}: need a list of our groups' crossings, got {groups!r}")
    crossed = [u for u in groups if u is not None]
    never = len(groups) - len(crossed)
    published = fig["published"]
    if crossed and min(crossed) <= published <= max(crossed):
        return Verdict(ours, diff, None, True)
    if (crossed and published < min(crossed)) or not never:      # earlier, or none missing
        return Verdict(ours, diff, None, False)
    if not crossed:
        return Verdict(ours, diff, None, None, "no group of ours crosses within the run")
    span = f"{fmt(min(crossed), fig['unit'])} to {fmt(max(crossed), fig['unit'])}"
    return Verdict(ours, diff, None, None,
                   f"later than every group of ours that crosses ({span}), and {never} of "
                   f"{len(groups)} groups never cross{'es' if never == 1 else ''} within the run")


def floor_set_sigma(set_sd: float, unit: float) -> float:
    """sigma of a fixed policy's difference on two sets of floors (RULES["floor_set"])."""
    return math.sqrt(2 * set_sd ** 2 + unit ** 2 / 12)


def trained_sigma(set_sd: float, seed_sd: float, unit: float, seeds: int = 5) -> float:
    """sigma of a trained algorithm's difference, two floor sets and two sets of ``seeds`` seeds
    (RULES["trained"])."""
    return math.sqrt(2 * (set_sd ** 2 + seed_sd ** 2 / seeds) + unit ** 2 / 12)


def fmt(x, unit: float, extra: int = 0) -> str:
    """``x`` at the precision of ``unit`` (plus ``extra``
    digits); ranges as 'lo–hi' or 'below hi'."""
    if isinstance(x, list):
        lo, hi = x
        if lo is None:
            return f"below {fmt(hi, unit)}"
        return f"above {fmt(lo, unit)}" if hi is None else f"{fmt(lo, unit)}–{fmt(hi, unit)}"
    decimals = max(0, -math.floor(math.log10(unit) + 1e-9)) + extra if unit < 1 else 0
    return f"{x:,.{decimals}f}"


@dataclass(frozen=True)
class SpeedRow:
    ours: float | None         # None: not measured yet
    peer: float | None
    speedup: float | None      # > 1 means ours is faster, whichever way the unit runs
    target_met: bool | None    # None without a target, or not measured


def speed_row(item: dict, bench_dir: str | Path | None = None) -> SpeedRow:
    """One speed comparison from ``data/published.json``'s ``speed`` list against data/bench/.

    ``ours`` and ``peer`` name keys of ``data/bench/<file>.json``; with ``lower_is_better`` (times
    in seconds) the speedup is peer / ours, else (rates) ours / peer.
    """
    folder = Path(bench_dir) if bench_dir else results_dir().parent / "bench"
    path = folder / f"{item['file']}.json"
    bench = json.loads(path.read_text()) if path.exists() else {}
    if item["ours"] not in bench or item["peer"] not in bench:
        return SpeedRow(None, None, None, None)
    ours, peer = float(bench[item["ours"]]), float(bench[item["peer"]])
    if ours <= 0 or peer <= 0:
        raise ValueError(f"{path.name}: speeds and times must be positive, got {ours}, {peer}")
    speedup = peer / ours if item.get("lower_is_better") else ours / peer
    target = item.get("target_ratio")
    return SpeedRow(ours, peer, speedup, None if target is None else speedup >= target)
