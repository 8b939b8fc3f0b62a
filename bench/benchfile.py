"""The one way a benchmark writes ``data/bench/``: its figures and the fingerprint of the machine
that measured them (``grpo.book.machine.fingerprint``: the CPU and its instruction-set flags,
NumPy's SIMD dispatch, OpenBLAS's core, ATen's capability, the pins), so that a table built from
several files can say whether they come from one machine.

    from benchfile import write_bench            # bench/ is on sys.path when a bench script runs
    write_bench("09_addition.json", {"grpo_iteration_cpu_s": ...})

``merge=True`` keeps the keys another script wrote to the same file (chapter 7's file holds the
sampler's figures and the SFT run's peak memory, from two scripts); the fingerprint is then the
last writer's, and ``make bench`` runs both on one machine.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from grpo.book.machine import fingerprint
from grpo.files import write_text_atomically

BENCH_DIR = Path(__file__).resolve().parents[1] / "data" / "bench"


def write_bench(name, figures: dict, *, merge: bool = False, indent: int = 2,
                sort_keys: bool = True) -> Path:
    """``figures`` with ``fingerprint`` (and when it was taken) as JSON at ``data/bench/<name>``
    (or at ``name`` itself when it is an absolute path), atomically; returns the path."""
    if not isinstance(figures, dict) or "fingerprint" in figures:
        raise ValueError("figures must be a dict of the benchmark's own figures (without a "
                         "'fingerprint' key: write_bench adds the machine's)")
    path = Path(name) if Path(name).is_absolute() else BENCH_DIR / name
    if path.suffix != ".json":
        raise ValueError(f"a bench file is JSON: name must end in .json, got {name!r}")
    old = json.loads(path.read_text()) if merge and path.exists() else {}
    record = {**old, **figures, "fingerprint": fingerprint(),
              "fingerprint_taken": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    return write_text_atomically(path, json.dumps(record, indent=indent, sort_keys=sort_keys)
                                 + "\n")
