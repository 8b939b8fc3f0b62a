"""The results registry: each chapter writes its headline figures to data/results/NN_name.json.

The directory is ``data/results`` under the repository root (found from this file's location
upward, by the ``pyproject.toml`` next to ``lib/``), or ``$GRPO_RESULTS_DIR`` when that is set.

``mismatches(a, b)`` is the book's one definition of "the same result" for a re-run: equal
structure, equal strings, ints and bools, and floats within ``RTOL`` of each other (NaN equals
NaN). The small models compute in float64, and other CPUs' kernels move their floats by about
1e-15; any change to the code moves them by far more than ``RTOL`` (the tests show both).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from grpo.files import json_ready, write_text_atomically

ENV_VAR = "GRPO_RESULTS_DIR"
RTOL = 1e-9              # how far two runs' floats may differ and still be the same result
ATOL = 1e-12             # ... near zero


def results_dir() -> Path:
    """Where the registry lives: ``$GRPO_RESULTS_DIR``, else ``<repo root>/data/results``."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "lib" / "grpo").is_dir():
            return parent / "data" / "results"
    raise RuntimeError(f"cannot find the repository root above {here} (no pyproject.toml beside "
                       f"lib/grpo); set {ENV_VAR} to the results directory")




def _check_name(name):
    if not isinstance(name, str) or not name or "/" in name or "\\" in name \
            or name.endswith(".json") or name.startswith("."):
        raise ValueError(f"name is a bare file stem such as '01_lava_leap', got {name!r}")


def save_results(name: str, results: dict) -> Path:
    """Write ``results`` to data/results/<name>.json (sorted keys, stable text) and return the path.

    NaN and inf are refused (they are not JSON), so a broken figure cannot be recorded silently.
    """
    _check_name(name)
    if not isinstance(results, dict):
        raise TypeError(f"results must be a dict, got {type(results).__name__}")
    try:
        text = json.dumps(json_ready(results), indent=2, sort_keys=True, allow_nan=False)
    except ValueError as err:
        raise ValueError(f"{name}: a result is NaN or inf ({err})") from None
    return write_text_atomically(results_dir() / f"{name}.json", text + "\n")


def load_results(name: str) -> dict:
    """Read a chapter's registry back (later chapters compare against earlier ones)."""
    _check_name(name)
    return json.loads((results_dir() / f"{name}.json").read_text())


def mismatches(a, b, rtol: float = RTOL, atol: float = ATOL, where: str = "") -> list[str]:
    """Where ``a`` and ``b`` (JSON-like: dicts, lists, numbers, strings) are not the same result,
    as readable lines; empty when they are. Floats compare within ``rtol`` / ``atol``."""
    a, b = json_ready(a), json_ready(b)
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where or 'top'}: keys {sorted(set(a) ^ set(b))} in one only"]
        return [m for k in a for m in mismatches(a[k], b[k], rtol, atol,
                                                 f"{where}.{k}" if where else k)]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items vs {len(b)}"]
        return [m for i, (x, y) in enumerate(zip(a, b))
                for m in mismatches(x, y, rtol, atol, f"{where}[{i}]")]
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
        if isinstance(a, int) and isinstance(b, int):
            return [] if a == b else [f"{where}: {a} != {b}"]
        x, y = float(a), float(b)
        if np.isnan(x) or np.isnan(y):
            return [] if np.isnan(x) and np.isnan(y) else [f"{where}: {x!r} != {y!r}"]
        if x == y or abs(x - y) <= atol + rtol * max(abs(x), abs(y)):
            return []
        return [f"{where}: {x!r} != {y!r} (relative difference "
                f"{abs(x - y) / max(abs(x), abs(y)):.1e})"]
    return [] if a == b and type(a) is type(b) else [f"{where}: {a!r} != {b!r}"]
