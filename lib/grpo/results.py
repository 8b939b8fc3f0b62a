"""The results registry: each chapter writes its headline figures to data/results/NN_name.json.

The directory is ``data/results`` under the repository root (found from this file's location
upward, by the ``pyproject.toml`` next to ``lib/``), or ``$GRPO_RESULTS_DIR`` when that is set.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

ENV_VAR = "GRPO_RESULTS_DIR"


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


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


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
        text = json.dumps(_plain(results), indent=2, sort_keys=True, allow_nan=False)
    except ValueError as err:
        raise ValueError(f"{name}: a result is NaN or inf ({err})") from None
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(text + "\n")
    return path


def load_results(name: str) -> dict:
    """Read a chapter's registry back (later chapters compare against earlier ones)."""
    _check_name(name)
    return json.loads((results_dir() / f"{name}.json").read_text())
