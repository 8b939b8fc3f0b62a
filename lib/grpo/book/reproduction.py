"""The reproduction report's bookkeeping: published figures against the results registry.

``data/published.json`` holds every published figure the chapters compare against: its value (a
number, or a range ``[lo, hi]`` with ``null`` for an open end), the precision it was published at
(``unit``), its source, the registry value it is compared with (``"NN_name:key.subkey"``) and how
its noise is judged (``noise``). ``judge`` turns one entry into a verdict; the report
(``book/reproduction.ipynb``) measures the noise the toy's figures need and draws the table.

Noise kinds:
    exact       counts: within only if equal
    rounding    within if the difference is at most half the published unit
    band        a target range the book set itself: within if inside it
    group_range a seed mean's crossing point against a published seed mean's: within if the
                published value lies in the range of our groups' seed-mean crossings (the registry
                list named by ``seeds``, one per group of as many seeds as the published run; a
                group that never crosses, ``None``, counts as later than any)
    seeds       sigma^2 = var(per-seed values) * (1/n + 1/m): our mean over n seeds (the registry
                list named by ``seeds``) against a published figure from m runs (``published_runs``,
                default n). A single published run (m = 1) is one draw with its own seed-to-seed
                spread, so a replication that lands above it is not outside for having done better
    floor_set, trained
                sigma measured by the caller (the report scores the policies on fresh floors)
    context     not the same experiment (e.g. half the published steps): shown beside the
                published figure for scale, never judged within or outside (``within`` is None)
A figure with a sigma is within noise when |ours - published| <= 2 sigma; against a range, the
difference is the distance from the range.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from .results import results_dir

NOISE_KINDS = ("exact", "rounding", "band", "group_range", "seeds", "floor_set", "trained",
               "context")
MEASURED_BY_CALLER = ("floor_set", "trained")


class _NotRun:
    def __repr__(self):
        return "NOT_RUN"


NOT_RUN = _NotRun()       # the registry file does not exist yet: the chapter has not been run


@dataclass(frozen=True)
class Verdict:
    ours: object              # our value, or NOT_RUN
    difference: float | None  # ours - published (distance from a published range)
    sigma: float | None       # the noise of the difference, where the kind has one (0 for exact)
    within: bool | None       # None when not run, or not comparable (noise "context")

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
        crossings = [math.inf if u is None else u for u in registry_value(fig["seeds"], folder)]
        return Verdict(ours, diff, None, bool(crossings) and
                       min(crossings) <= fig["published"] <= max(crossings))
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
