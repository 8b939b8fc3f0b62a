"""Small helpers for showing code and tables in the chapters."""
from __future__ import annotations

import inspect

from IPython.display import Markdown


def show_source(obj) -> None:
    """Print a lib function's (or class's) source, so the reader sees exactly the code that runs."""
    if not callable(obj):
        raise ValueError(f"show_source takes a function or class, got {type(obj).__name__}")
    print(inspect.getsource(obj))


def markdown_table(header, rows) -> Markdown:
    """A Markdown table from a header and rows of already-formatted cells (str() of each)."""
    header = [str(h) for h in header]
    rows = [[str(c) for c in row] for row in rows]
    if not header or any(len(r) != len(header) for r in rows):
        raise ValueError("every row needs exactly one cell per header column")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return Markdown("\n".join(lines))
