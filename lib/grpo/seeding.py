"""Seeded random streams. The library never seeds or draws from torch's global generator: a
function that samples takes a ``generator``, and a caller that holds only a seed makes one here."""
from __future__ import annotations

import torch

from grpo import checks


def seeded_generator(seed: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with ``seed`` (an int >= 0): the same stream as torch's
    global generator after ``torch.manual_seed(seed)``."""
    return torch.Generator().manual_seed(checks.integer("seed", seed, minimum=0))


__all__ = ["seeded_generator"]
