"""The verifier: GSM8K's exact-match answer check, and a safe checker for calculator annotations.

``extract_answer(text)`` reads the number after the last ``####`` (commas, signs, decimals,
trailing units and punctuation are handled) and normalises it; ``reward(completion, answer)`` is
1.0 on an exact match, else 0.0, and never raises (an unreadable reference scores 0).
``reference_answer(answer)`` reads a reference and raises ValueError when it is unreadable: the
trainers' scoring checks references with it first, so a data bug cannot hide as all-zero groups.
``last_number_reward`` reads the last number instead of ``####``'s, for a model that answers in
prose. ``strict_reward`` also requires every ``<<expr=value>>`` to be right.
``check_annotations(text)`` recomputes each annotation with ``safe_arith``, a tiny parser for + - *
/ and parentheses: model text is never passed to ``eval``.

For answers in prose, ``equations_in(text)`` finds every equation ``a op b [op c ...] = r`` a text
writes, and ``read_calculation(text, calculation)`` reads its first equation against the problem's
calculation in one of four exclusive ways (``CALCULATION_READINGS``): no equation, another
calculation, the problem's calculation with a false result (a slip), or the problem's calculation,
true.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

_NUMBER = re.compile(r"[-\u2212]?\$?[0-9][0-9,]*(?:\.[0-9]+)?")
# 1,234 or 1234
_GROUPED = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})*(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?")
# 1/2, 3-4, 0x10, 72.0.1
_CONTINUES = re.compile(r"\s*[-\u2212+*/x\u00d7^]\s*[0-9]|[.,][0-9]|[eE][-+]?[0-9]")
_MAX_DIGITS = 64


def normalize_number(s: str) -> str | None:
    """``"1,234.50"`` -> ``"1234.5"``, ``"-0"`` -> ``"0"``; None if ``s`` is not a number."""
    s = s.replace(",", "").replace("$", "").replace("\u2212", "-")
    if not re.fullmatch(r"-?[0-9]+(?:\.[0-9]+)?", s) or len(s) > _MAX_DIGITS:
        return None
    try:
        d = Decimal(s)
    except InvalidOperation:
        return None
    text = format(d.normalize(), "f") if d != d.to_integral_value() else str(int(d))
    return "0" if text in ("-0", "0") else text


def extract_answer(text) -> str | None:
    """The normalised number after the last ``####`` in ``text``, or None.

    The first number on that line is taken, so ``#### $1,200 dollars.`` gives ``"1200"``. Only
    ASCII digits count, and a malformed number gives None rather than its first digits: ``1/2``,
    ``3-4``, ``0x10``, ``1e5`` and ``72.0.1`` are not numbers here, and commas must group
    thousands (``1,2``).
    """
    if not isinstance(text, str) or "####" not in text:
        return None
    tail = text.rsplit("####", 1)[1].split("\n", 1)[0].strip()
    m = _NUMBER.search(tail)
    if m is None or tail[:m.start()].strip(" :=$") != "" or _CONTINUES.match(tail[m.end():]):
        return None
    number = m.group().rstrip(",")
    return normalize_number(number) if _GROUPED.fullmatch(number.lstrip("-\u2212$")) else None


def _reference(answer) -> str | None:
    """A reference's normalised number (a full GSM8K solution, or just the number), or None."""
    return extract_answer(answer) if isinstance(answer, str) and "####" in answer \
        else normalize_number(str(answer))


def reference_answer(answer) -> str:
    """The normalised number of a reference ``answer`` (a GSM8K solution or just the number).

    Raises ValueError when it is unreadable: every completion would then score 0, and a data bug
    would look like a model that never answers.
    """
    try:
        ref = _reference(answer)
    except Exception:                                         # e.g. str(answer) itself fails
        ref = None
    if ref is None:
        shown = answer if len(repr(answer)) <= 80 else f"{repr(answer)[:77]}..."
        raise ValueError("the reference answer has no readable number (a '#### n' line, or n): "
                         f"{shown!r}")
    return ref


def reward(completion, answer) -> float:
    """1.0 if the completion's ``####`` number equals the reference's, else 0.0. Never raises.

    ``answer`` may be a full GSM8K solution or just the number. An unreadable ``answer`` scores
    every completion 0; check references with ``reference_answer`` before training on them.
    """
    try:
        ref = _reference(answer)
        got = extract_answer(completion)
        return 1.0 if ref is not None and got == ref else 0.0
    except Exception:                                         # malformed input scores 0
        return 0.0


def last_number(text) -> str | None:
    """The last number in ``text``, normalised (``"so she has 1,200."`` gives ``"1200"``), or None.

    For a model that answers in prose and never writes ``####`` (chapter 11's pretrained model):
    the number it ends on is its answer. Looser than ``extract_answer``, and so gameable: a text
    that lists every number up to the right one ends on it.
    """
    if not isinstance(text, str):
        return None
    numbers = _NUMBER.findall(text)
    if not numbers:
        return None
    number = numbers[-1].rstrip(",")
    return normalize_number(number) if _GROUPED.fullmatch(number.lstrip("-\u2212$")) else None


def last_number_reward(completion, answer) -> float:
    """1.0 if the completion's last number equals the reference's, else 0.0. Never raises."""
    try:
        ref = _reference(answer)
        return 1.0 if ref is not None and last_number(completion) == ref else 0.0
    except Exception:                                         # malformed input scores 0
        return 0.0


def random_rewards(uniforms, success_rate: float) -> list[float]:
    """The control reward that ignores the answers: 1.0 where a uniform draw in ``uniforms`` falls
    below ``success_rate`` (the batch's verifier success rate), else 0.0, so it pays as often as
    the verifier would, at random. The caller draws the uniforms, from its own generator."""
    return [float(u < success_rate) for u in uniforms]


def strict_reward(completion, answer) -> float:
    """The verifier AND the annotations: 1.0 if the completion's ``####`` number is right and it
    shows at least one ``<<expr=value>>`` calculation, every one of them correct
    (``check_annotations``); else 0.0. Never raises. A right answer reached through a wrong
    calculation scores 0."""
    notes = check_annotations(completion)
    return reward(completion, answer) if notes and all(n["ok"] for n in notes) else 0.0


_TOKEN = re.compile(r"\s*(?:([0-9]+(?:\.[0-9]+)?)|(.))")
_MAX_EXPR = 200


def safe_arith(expr: str) -> Fraction:
    """Evaluate ``+ - * /`` and parentheses over decimal numbers, exactly; nothing else.

    A recursive-descent parser: names, calls, attributes, powers and anything not in the grammar
    raise ValueError. Division by zero raises ValueError. Commas in numbers are accepted.
    """
    if not isinstance(expr, str) or len(expr) > _MAX_EXPR:
        raise ValueError("expression must be a string of at most 200 characters")
    tokens = []
    for num, ch in _TOKEN.findall(expr.replace(",", "").replace("\u2212", "-")):
        if num:
            if len(num) > _MAX_DIGITS:
                raise ValueError("number too long")
            tokens.append(Fraction(num))
        elif ch.strip():
            if ch not in "+-*/()":
                raise ValueError(f"unexpected character {ch!r}")
            tokens.append(ch)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def expression(depth):
        value = term(depth)
        while peek() in ("+", "-"):
            value = value + term(depth) if take() == "+" else value - term(depth)
        return value

    def term(depth):
        value = factor(depth)
        while peek() in ("*", "/"):
            op, rhs = take(), factor(depth)
            if op == "/" and rhs == 0:
                raise ValueError("division by zero")
            value = value * rhs if op == "*" else value / rhs
        return value

    def factor(depth):
        if depth > 20:
            raise ValueError("too deeply nested")
        tok = peek()
        if tok == "-":
            take()
            return -factor(depth + 1)
        if tok == "(":
            take()
            value = expression(depth + 1)
            if peek() != ")":
                raise ValueError("missing )")
            take()
            return value
        if isinstance(tok, Fraction):
            return take()
        raise ValueError(f"expected a number, got {tok!r}")

    value = expression(0)
    if pos != len(tokens):
        raise ValueError(f"unexpected {tokens[pos]!r}")
    return value


_ANNOTATION = re.compile(r"<<([^<>=]*)=([^<>]*)>>")


def check_annotations(text) -> list[dict]:
    """Each ``<<expr=claimed>>`` in ``text`` with its exact value: dicts with keys ``expr``,
    ``claimed``, ``value`` (a Fraction, or None if unreadable) and ``ok``. Never raises."""
    out = []
    if not isinstance(text, str):
        return out
    for expr, claimed in _ANNOTATION.findall(text):
        try:
            value = safe_arith(expr)
        except (ValueError, ZeroDivisionError):
            value = None
        try:
            claim = safe_arith(claimed)
        except (ValueError, ZeroDivisionError):
            claim = None
        out.append({"expr": expr, "claimed": claimed, "value": value,
                    "ok": value is not None and claim is not None and value == claim})
    return out


# ----------------------------------------------------------------------------- equations in prose

# a number as prose writes one: a sign only where no word or number runs into it, thousands
# grouped by commas, a decimal part; an operator: + - * / and the forms x, ×, ·, ÷ and −
_EQ_NUMBER = r"(?:(?<![\w.,])[-\u2212])?\$?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?"
_EQ_OPERATOR = r"[-+*/x\u00d7\u00b7\u00f7\u2212]"
_EQ_OPERATORS = {"x": "*", "\u00d7": "*", "\u00b7": "*", "\u00f7": "/", "\u2212": "-"}
_EQUATION_RE = re.compile(rf"(?<![\w.,])({_EQ_NUMBER})((?:\s*{_EQ_OPERATOR}\s*{_EQ_NUMBER})+)"
                          rf"\s*=\s*({_EQ_NUMBER})(?![0-9])")
_EQ_STEP = re.compile(rf"\s*({_EQ_OPERATOR})\s*({_EQ_NUMBER})")


def _exact(number: str) -> Fraction:
    return Fraction(number.replace(",", "").replace("$", "").replace("\u2212", "-"))


@dataclass(frozen=True)
class Equation:
    """One equation a text writes: its operands and operators as read (operators as + - * /), the
    result it claims, and the text it was read from."""
    operands: tuple
    operators: tuple
    result: Fraction
    text: str

    @property
    def value(self) -> Fraction | None:
        """The left side's exact value (``safe_arith``: * and / before + and -), or None when it
        divides by zero."""
        expr = str(self.operands[0]) + "".join(f"{op}({x})" for op, x in
                                                zip(self.operators, self.operands[1:], strict=True))
        try:
            return safe_arith(expr)
        except ValueError:
            return None

    @property
    def true(self) -> bool:
        """Whether the result it claims is its left side's value."""
        return self.value is not None and self.value == self.result


def equations_in(text) -> list[Equation]:
    """Every equation ``a op b [op c ...] = r`` in ``text``, in the order written: two or more
    operands, decimals and negative numbers read exactly, ``x``, ``×`` and ``·`` read as ``*`` and
    ``÷`` as ``/``. "8 = 5 + 3" (the result first) and equations in words are not read. Never
    raises; [] for a text with none (or not a string)."""
    if not isinstance(text, str):
        return []
    found = []
    for m in _EQUATION_RE.finditer(text):
        steps = _EQ_STEP.findall(m.group(2))
        found.append(Equation(
            operands=(_exact(m.group(1)), *(_exact(x) for _, x in steps)),
            operators=tuple(_EQ_OPERATORS.get(op, op) for op, _ in steps),
            result=_exact(m.group(3)), text=m.group(0)))
    return found


CALCULATION_READINGS = ("no_equation", "other_calculation", "slip", "right")
_DECIMAL = r"[0-9]+(?:\.[0-9]+)?"
_CALCULATION = re.compile(rf"({_DECIMAL})([-+*/])({_DECIMAL})=(-?{_DECIMAL})")


def read_calculation(text, calculation: str) -> str:
    """What an answer's first equation (``equations_in``) does with the problem's one-step
    ``calculation``, written ``"a op b=c"`` as ``grpo.lm.data.calculation_chain`` writes it. One
    of ``CALCULATION_READINGS``, exclusive and exhaustive:

    - ``"no_equation"``: the answer writes none;
    - ``"other_calculation"``: its first equation is not ``a op b`` (another operation, another
      operand, more operands; operands of + and * may come in either order), true or false;
    - ``"slip"``: it is ``a op b`` with a false result;
    - ``"right"``: it is ``a op b`` with the true result.
    """
    m = _CALCULATION.fullmatch(calculation) if isinstance(calculation, str) else None
    if m is None:
        raise ValueError(f"calculation must be one step 'a op b=c' (e.g. '3+5=8'), got "
                         f"{calculation!r}")
    found = equations_in(text)
    if not found:
        return "no_equation"
    first = found[0]
    a, op, b = Fraction(m.group(1)), m.group(2), Fraction(m.group(3))
    if first.operators != (op,) or first.operands not in ((a, b), (b, a) if op in "+*" else (a, b)):
        return "other_calculation"
    return "right" if first.true else "slip"
