"""The results registry: each chapter writes its headline figures to data/results/NN_name.json."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

RESULTS_DIR = Path(__file__).resolve().parents[2] / "data" / "results"


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def save_results(name: str, results: dict) -> Path:
    """Write ``results`` to data/results/<name>.json (sorted keys, stable text) and return the path."""
    if not name or "/" in name or name.endswith(".json"):
        raise ValueError(f"name is a bare file stem such as '01_lava_leap', got {name!r}")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(_plain(results), indent=2, sort_keys=True) + "\n")
    return path


def load_results(name: str) -> dict:
    """Read a chapter's registry back (later chapters compare against earlier ones)."""
    return json.loads((RESULTS_DIR / f"{name}.json").read_text())
