"""Write a file so that a reader never sees half of it.

``make test`` runs two notebooks at once (pytest-xdist), and a chapter rewrites files another one
reads: chapter 7's checkpoints (read by chapters 8-10), chapters 1 and 3's registries (read by
chapter 4), every registry (read by the reproduction report). ``write_atomically`` writes into a
temporary file beside the target and renames it over the target; ``os.replace`` is atomic on
POSIX, so a reader opens either the old file or the new one, never a torn one.
"""
from __future__ import annotations

import os
from pathlib import Path


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


__all__ = ["write_atomically", "write_text_atomically"]
