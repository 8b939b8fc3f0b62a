"""Run independent jobs in spawned worker processes, with a progress bar.

``parallel_map(fn, items, workers)`` returns ``[fn(x) for x in items]`` in order, whichever worker
ran what, so results do not depend on scheduling. Workers are spawned (a fresh interpreter each, no
inherited torch state); ``fn`` must be importable (a module-level function). While jobs run,
``tqdm.auto`` shows jobs finished and an ETA; it is off where ``TQDM_DISABLE`` is set (the book's
pins, so stored outputs and nbval never see it) and on otherwise, e.g. in ``make lab``. The
variable is read here, since tqdm's notebook bar ignores it.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed

from tqdm.auto import tqdm


def bar_disabled() -> bool:
    """True where ``TQDM_DISABLE`` is set to anything but "", "0" or "false"."""
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false")


def parallel_map(fn, items, workers: int = 2, desc: str = "runs") -> list:
    """``[fn(x) for x in items]``, computed in ``workers`` spawned processes, in input order."""
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    items = list(items)
    results = [None] * len(items)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
        with tqdm(total=len(items), desc=desc, unit="run", disable=bar_disabled()) as bar:
            for f in as_completed(futures):
                results[futures[f]] = f.result()
                bar.update(1)
    return results


__all__ = ["parallel_map", "bar_disabled"]
