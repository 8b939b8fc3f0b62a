"""Small helpers for showing code and tables in the chapters."""
from __future__ import annotations

import inspect
import re

import numpy as np

from IPython.display import Markdown


def progress(iterable, desc: str = "", total: int | None = None):
    """``iterable`` with a progress bar in Jupyter (tqdm.auto), silent where ``TQDM_DISABLE`` is
    set (the book's pins, so nbval and the stored outputs never see a bar or a timing).

    A live run is a plain loop the reader can read: ``for it in progress(range(n), "GRPO"): ...``.
    """
    from tqdm.auto import tqdm

    from grpo.pool import bar_disabled
    if isinstance(iterable, (str, bytes)):
        raise ValueError("progress takes an iterable of steps, not a string")
    return tqdm(iterable, desc=desc, total=total, disable=bar_disabled(), leave=True)


def show_source(obj) -> None:
    """Print a lib function's (or class's) source, so the reader sees exactly the code that runs."""
    if not callable(obj):
        raise ValueError(f"show_source takes a function or class, got {type(obj).__name__}")
    print(inspect.getsource(obj))


def show_config(cfg) -> None:
    """Print a config dataclass one field a line (a long repr scrolls off any page); a field that
    is itself a config (``RunConfig.evaluation``) is printed the same way, indented."""
    from dataclasses import fields, is_dataclass
    if not is_dataclass(cfg) or isinstance(cfg, type):
        raise ValueError(f"show_config takes a dataclass instance, got {type(cfg).__name__}")

    def lines(c, indent):
        width = max(len(f.name) for f in fields(c))
        for f in fields(c):
            value = getattr(c, f.name)
            if is_dataclass(value) and not isinstance(value, type):
                yield f"{indent}{f.name:<{width}} = {type(value).__name__}("
                yield from lines(value, indent + "    ")
                yield f"{indent}),"
            else:
                yield f"{indent}{f.name:<{width}} = {value!r},"

    print("\n".join([f"{type(cfg).__name__}(", *lines(cfg, "    "), ")"]))


def markdown_table(header, rows) -> Markdown:
    """A Markdown table from a header and rows of already-formatted cells (str() of each)."""
    if isinstance(header, str) or isinstance(rows, str) or any(isinstance(r, str) for r in rows):
        raise TypeError("header is a list of cells and rows a list of rows (lists), not strings")
    header = [str(h) for h in header]
    rows = [[str(c) for c in row] for row in rows]
    if not header or any(len(r) != len(header) for r in rows):
        raise ValueError("every row needs exactly one cell per header column")
    if any(re.search(r"(?<!\\)\|", c) or "\n" in c for c in header + [c for r in rows for c in r]):
        raise ValueError("a cell cannot hold '|' or a newline (it would break the table); "
                         "write '\\|' for a literal bar")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return Markdown("\n".join(lines))


def signed(x, digits: int = 3) -> str:
    """A signed number at ``digits`` decimals, never "-0.000" (rounding to zero gives "+0.000")."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"signed formats a number, got {type(x).__name__}")
    if not np.isfinite(x):
        raise ValueError(f"signed formats a finite number, got {x}")
    if isinstance(x, (int, np.integer)):
        return f"{int(x):+d}"
    return f"{round(float(x), digits) + 0.0:+.{digits}f}"


def below(err: float, tol: float) -> str:
    """'< tol' for a rounding-level error: its last bits differ between CPUs, the bound does not."""
    if not (np.isfinite(tol) and tol > 0) or not err >= 0:
        raise ValueError(f"below needs err >= 0 and tol > 0, got {err}, {tol}")
    return f"< {tol:.0e}" if err < tol else f"{err:.1e}"


def rounded(value, digits: int = 4, floor: float = 0.0):
    """A registry value with every float at ``digits`` significant figures, and |x| < ``floor``
    (rounding noise) as 0.0, through dicts, lists and tuples, so a re-run on another CPU leaves
    no diff. NumPy scalars become Python numbers; NaN and inf are refused."""
    if isinstance(value, dict):
        return {k: rounded(v, digits, floor) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [rounded(v, digits, floor) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            raise ValueError(f"a registry value must be finite, got {value}")
        return 0.0 if abs(value) < floor else float(f"{float(value):.{digits}g}")
    return value
