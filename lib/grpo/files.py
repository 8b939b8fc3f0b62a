"""Write a file so that a reader never sees half of it, and turn a result into exact JSON types.

``make test`` runs two notebooks at once (pytest-xdist), and a chapter rewrites files another one
reads: chapter 7's checkpoints (read by chapters 8-10), chapters 1 and 3's registries (read by
chapter 4), every registry (read by the reproduction report). ``write_atomically`` writes into a
temporary file beside the target and renames it over the target; ``os.replace`` is atomic on
POSIX, so a reader opens either the old file or the new one, never a torn one.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def write_atomically(path, write) -> Path:
    """Call ``write(tmp)`` with a temporary path in
    ``path``'s folder, then rename it to ``path``."""
    if not callable(write):
        raise ValueError(f"write must be a callable taking a path, got {write!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_text_atomically(path, text: str) -> Path:
    """``Path(path).write_text(text)`` (UTF-8), atomically; a file already holding ``text`` is left
    as it is, so a re-run that computes the same result does not touch it."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    path = Path(path)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return path
    return write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def json_ready(value, nan_as_none: bool = False):
    """``value`` as plain JSON types, exactly: NumPy scalars and arrays as Python numbers and lists,
    tuples as lists, keys as strings (refusing keys that would collide); floats untouched, NaN
    included, unless ``nan_as_none`` writes NaN and infinities as None (JSON's null)."""
    if isinstance(value, dict):
        keys = [str(k) for k in value]
        if len(set(keys)) != len(keys):
            clash = sorted(k for k in set(keys) if keys.count(k) > 1)
            raise ValueError(f"keys that differ only in type would collide in JSON: {clash}")
        return {str(k): json_ready(v, nan_as_none) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_ready(v, nan_as_none) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if nan_as_none and isinstance(value, float) and not np.isfinite(value):
        return None
    return value


__all__ = ["write_atomically", "write_text_atomically", "json_ready"]
