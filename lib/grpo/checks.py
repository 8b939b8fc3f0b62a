"""One way to check an argument: a few small functions every config and public function calls.

Each returns the value as a plain Python number (NumPy scalars behave like Python numbers; a bool
is never a number) or raises a ``ValueError`` that names the argument and shows its value:

    lr = positive("lr", lr)                  # a finite number > 0
    eps = non_negative("eps", eps)           # a finite number >= 0
    p = probability("top_p", p, low_open=True)   # in (0, 1]
    n = integer("G", G, minimum=2)           # an int >= 2 (NumPy ints too)
    flag = boolean("clip", clip)             # True or False, never "no" or 0
    kind = choice("aggregation", kind, AGGREGATIONS)

A config checks every field in ``__post_init__``, so a bad config fails at construction.
"""
from __future__ import annotations

import math
import numbers


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_number(value) -> bool:
    """A real number (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) \
        and not (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "b")


def number(name: str, value, *, minimum=None, maximum=None, low_open=False, high_open=False,
           rule: str | None = None) -> float:
    """``value`` as a float if it is a finite real number within the bounds, else a ValueError."""
    ok = is_number(value) and math.isfinite(float(value))
    if ok and minimum is not None:
        ok = float(value) > minimum if low_open else float(value) >= minimum
    if ok and maximum is not None:
        ok = float(value) < maximum if high_open else float(value) <= maximum
    if not ok:
        if rule is None:
            lo = "" if minimum is None else ("(" if low_open else "[") + f"{minimum:g}, "
            hi = "" if maximum is None else f"{maximum:g}" + (")" if high_open else "]")
            rule = "a finite number" + (f" in {lo or '(-inf, '}{hi or 'inf)'}" if lo or hi else "")
        raise ValueError(f"{name} must be {rule}, got {_shown(value)}")
    return float(value)


def positive(name: str, value) -> float:
    """A finite number > 0."""
    return number(name, value, minimum=0, low_open=True, rule="a finite number > 0")


def non_negative(name: str, value) -> float:
    """A finite number >= 0."""
    return number(name, value, minimum=0, rule="a finite number >= 0")


def probability(name: str, value, *, low_open: bool = False, high_open: bool = False) -> float:
    """A number in [0, 1], with either end open on request."""
    return number(name, value, minimum=0, maximum=1, low_open=low_open, high_open=high_open)


def integer(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int if it is an integer (Python or NumPy, not a bool) within the bounds."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) \
        and not (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "b")
    if ok and minimum is not None and value < minimum:
        ok = False
    if ok and maximum is not None and value > maximum:
        ok = False
    if not ok:
        bounds = [f">= {minimum}" if minimum is not None else "",
                  f"<= {maximum}" if maximum is not None else ""]
        rule = " and ".join(b for b in bounds if b)
        raise ValueError(f"{name} must be an int{' ' + rule if rule else ''}, got {_shown(value)}")
    return int(value)


def boolean(name: str, value) -> bool:
    """``True`` or ``False`` (NumPy bools too); strings and numbers are refused."""
    if isinstance(value,
                  bool) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "b"
                                   and getattr(value, "ndim", 1) == 0):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {_shown(value)}")


def choice(name: str, value, allowed) -> str:
    """One of ``allowed`` (compared with ==, so a near-miss string is refused)."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {_shown(value)}")
    return value


def optional(check, name: str, value, *args, **kwargs):
    """``None``, or ``check(name, value, ...)``."""
    return None if value is None else check(name, value, *args, **kwargs)


def reward_groups(name: str, shape, finite: bool, unit: str = "samples") -> None:
    """Rewards in groups, an array of ``shape`` (B, G): at least one group, each of G >= 2 ``unit``
    to compare, and every value finite (``finite``, computed by the caller for its array type)."""
    shape = tuple(shape)
    if len(shape) != 2 or shape[0] < 1:
        raise ValueError(f"{name} must have shape (B, G), got {shape}")
    if shape[1] < 2:
        raise ValueError(f"a group needs G >= 2 {unit} to compare, got G = {shape[1]}")
    if not finite:
        raise ValueError(f"{name} contain NaN or inf")


__all__ = ["is_number", "number", "positive", "non_negative", "probability", "integer", "boolean",
           "choice", "optional", "reward_groups"]
