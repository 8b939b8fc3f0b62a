"""Grade-school math in GSM8K's format: a problem generator, the verifier, and jsonl loaders.

A problem is a dict in GSM8K's schema, ``{"question": str, "answer": str}``. The answer is a worked
solution whose lines carry calculator annotations ``<<48/2=24>>`` and end in ``#### 24``.

Generator
    ``make_problem(rng, steps, ...)`` builds one problem of 1-4 arithmetic steps from a few
    templates (names, objects, verbs). ``make_splits(n_train, n_test, seed)`` gives disjoint train and
    test lists, deterministic by seed (a problem goes to test when a hash of its question says so).
Verifier
    ``extract_answer(text)`` reads the number after the last ``####`` (commas, signs, decimals,
    trailing units and punctuation are handled) and normalises it; ``reward(completion, answer)``
    is 1.0 on an exact match, else 0.0, and never raises (an unreadable reference scores 0).
    ``reference_answer(answer)`` reads a reference and raises ValueError when it is unreadable: the
    trainers' scoring (``train.rewards``, ``hf.grpo_step``) checks references with it first, so a
    data bug cannot hide as all-zero groups. ``check_annotations(text)`` recomputes each
    ``<<expr=value>>`` with ``safe_arith``, a tiny parser for + - * / and parentheses: model text is
    never passed to ``eval``. ``answer_only(problems)`` cuts each solution to its ``####`` line.
Loaders
    ``write_jsonl`` / ``read_jsonl`` for files in GSM8K's schema (ours or the official
    ``train.jsonl`` / ``test.jsonl``); ``load_gsm8k(split, data_dir)`` reads the official files and
    says where to put them when they are missing; ``load_gsm8k_hf(split)`` reads ``openai/gsm8k``
    with the ``datasets`` library when online.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path

# ----------------------------------------------------------------------------- the generator

NAMES = [("Mia", "she", "her"), ("Leo", "he", "him"), ("Ava", "she", "her"), ("Sam", "he", "him"),
         ("Zoe", "she", "her"), ("Omar", "he", "him"), ("Ines", "she", "her"), ("Tom", "he", "him"),
         ("Lena", "she", "her"), ("Ravi", "he", "him"), ("Nora", "she", "her"), ("Kai", "he", "him")]
OBJECTS = ["apples", "stamps", "marbles", "cookies", "pencils", "shells", "cards", "books",
           "eggs", "coins"]
OPS = ("buy", "gift", "give", "lose", "times", "share")


def _calc(a: int, op: str, b: int) -> tuple[int, str]:
    """The value of ``a op b`` and its GSM8K annotation ``a op b=<<a op b=c>>c``."""
    c = {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]
    return c, f"{a}{op}{b}=<<{a}{op}{b}={c}>>{c}"


def make_problem(rng: random.Random, steps: int, max_add: int = 10, max_factor: int = 5,
                 max_value: int = 30) -> dict:
    """One GSM8K-style problem with ``steps`` annotated calculations (1-4).

    Difficulty knobs: ``steps``; ``max_add`` bounds added/removed amounts and starting counts;
    ``max_factor`` bounds both sides of a product and a division's divisor and result (2-9 gives the
    times tables); ``max_value`` bounds every intermediate count. Every count stays a whole number
    in [0, max_value].
    """
    if steps not in (1, 2, 3, 4):
        raise ValueError(f"steps must be 1-4, got {steps}")
    if max_add < 2 or max_factor < 2 or max_value < max(max_add, 2 * max_factor):
        raise ValueError("need max_add >= 2, max_factor >= 2, max_value >= max(max_add, 2*max_factor)")
    name, she, her = rng.choice(NAMES)
    friend = rng.choice([n for n, _, _ in NAMES if n != name])
    obj = rng.choice(OBJECTS)
    She = she.capitalize()
    q, sol = [], []
    ops_left = steps
    if rng.random() < 0.35:                                   # start with a product: one step
        a = rng.randint(2, max_factor)
        b = rng.randint(2, min(max_factor, max_value // a))
        x, ann = _calc(a, "*", b)
        q.append(f"{name} has {a} boxes with {b} {obj} in each.")
        sol.append(f"{a} boxes of {b}: {ann} {obj}.")
        ops_left -= 1
    else:
        x = rng.randint(2, max_add)
        q.append(f"{name} has {x} {obj}.")
    while ops_left > 0:
        op = rng.choice(OPS)
        if op in ("buy", "gift") and x + 1 <= max_value:
            b = rng.randint(1, min(max_add, max_value - x))
            y, ann = _calc(x, "+", b)
            if op == "buy":
                q.append(f"{She} buys {b} more.")
                sol.append(f"{She} buys {b}: {ann} {obj}.")
            else:
                q.append(f"{friend} gives {her} {b} {obj}.")
                sol.append(f"{friend} gives {b}: {ann} {obj}.")
        elif op in ("give", "lose") and x >= 2:
            b = rng.randint(1, min(max_add, x - 1))
            y, ann = _calc(x, "-", b)
            if op == "give":
                q.append(f"{She} gives {b} {obj} to {friend}.")
                sol.append(f"{She} gives away {b}: {ann} {obj}.")
            else:
                q.append(f"{She} loses {b} of them.")
                sol.append(f"{She} loses {b}: {ann} {obj}.")
        elif op == "times" and x <= max_factor and 2 * x <= max_value:
            k = rng.randint(2, min(max_factor, max_value // x))
            y, ann = _calc(x, "*", k)
            q.append(f"Then {she} gets {k} times as many.")
            sol.append(f"{k} times as many: {ann} {obj}.")
        elif op == "share" and x >= 4:
            ks = [k for k in range(2, max_factor + 1) if x % k == 0 and x // k <= max_factor]
            if not ks:
                continue
            k = rng.choice(ks)
            y, ann = _calc(x, "/", k)
            q.append(f"{She} splits them into {k} equal groups and keeps one.")
            sol.append(f"One of {k} groups: {ann} {obj}.")
        else:
            continue                                          # op not possible here: draw again
        x = y
        ops_left -= 1
    q.append(f"How many {obj} does {name} have now?")
    return {"question": " ".join(q), "answer": "\n".join(sol) + f"\n#### {x}"}


def _in_test(question: str, test_fraction: float) -> bool:
    digest = hashlib.sha256(question.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < test_fraction


def make_splits(n_train: int, n_test: int, seed: int = 0, step_weights=(0.3, 0.35, 0.25, 0.1),
                **knobs) -> tuple[list[dict], list[dict]]:
    """Disjoint train and test lists of generated problems, deterministic by seed.

    Each problem's split is decided by a hash of its question (about 1 in 5 goes to test), so the same
    question can never be in both; test questions are distinct. ``step_weights`` are the
    probabilities of 1, 2, 3 and 4 steps; ``knobs`` go to ``make_problem``.
    """
    if n_train < 0 or n_test < 0 or len(step_weights) != 4 or min(step_weights) < 0 or sum(step_weights) <= 0:
        raise ValueError("need n_train, n_test >= 0 and four non-negative step_weights")
    rng = random.Random(seed)
    train, test, seen_test = [], [], set()
    tries = 0
    while len(train) < n_train or len(test) < n_test:
        tries += 1
        if tries > 50 * (n_train + n_test) + 1000:
            raise ValueError("could not draw enough distinct problems: widen the knobs")
        steps = rng.choices((1, 2, 3, 4), weights=step_weights)[0]
        p = make_problem(rng, steps, **knobs)
        if _in_test(p["question"], 0.2):
            if len(test) < n_test and p["question"] not in seen_test:
                seen_test.add(p["question"])
                test.append(p)
        elif len(train) < n_train:
            train.append(p)
    return train, test


@dataclass(frozen=True)
class Protocol:
    """Chapters 7-8's frozen data split and evaluation seeds: the one place these numbers live (the
    chapters, ``grpo.lm.rl`` and the benches read it)."""
    n_train: int = 20_000
    n_test: int = 500
    seed: int = 0
    step_weights: tuple = (0.3, 0.35, 0.25, 0.1)    # 1-, 2-, 3- and 4-step problems
    eval_seed: int = 1234                            # the held-out sampled accuracy's generator
    final_seed: int = 4321                           # the final pass@k samples' generator

    def splits(self) -> tuple[list[dict], list[dict]]:
        """``(train, test)``, as ``make_splits`` draws them."""
        return make_splits(self.n_train, self.n_test, self.seed, self.step_weights)

    def held_out(self, n: int = 2000) -> list[dict]:
        """``n`` more held-out problems, drawn after ``splits()``'s test set by the same generator:
        disjoint from train and test, never used to choose anything. Chapter 8's stored runs are
        scored on these (``splits()`` is unchanged by drawing them)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        return make_splits(self.n_train, self.n_test + n, self.seed, self.step_weights)[1][self.n_test:]


PROTOCOL = Protocol()


# ----------------------------------------------------------------------------- the verifier

_NUMBER = re.compile(r"[-\u2212]?\$?[0-9][0-9,]*(?:\.[0-9]+)?")
_GROUPED = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})*(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?")   # 1,234 or 1234
_CONTINUES = re.compile(r"\s*[-\u2212+*/x\u00d7^]\s*[0-9]|[.,][0-9]|[eE][-+]?[0-9]")  # 1/2, 3-4, 0x10, 72.0.1
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

    The first number on that line is taken, so ``#### $1,200 dollars.`` gives ``"1200"``. Only ASCII
    digits count, and a malformed number gives None rather than its first digits: ``1/2``, ``3-4``,
    ``0x10``, ``1e5`` and ``72.0.1`` are not numbers here, and commas must group thousands (``1,2``).
    """
    if not isinstance(text, str) or "####" not in text:
        return None
    tail = text.rsplit("####", 1)[1].split("\n", 1)[0].strip()
    m = _NUMBER.search(tail)
    if m is None or tail[:m.start()].strip(" :=$") != "" or _CONTINUES.match(tail[m.end():]):
        return None
    number = m.group().rstrip(",")
    return normalize_number(number) if _GROUPED.fullmatch(number.lstrip("-\u2212$")) else None


def answer_only(problems: list[dict]) -> list[dict]:
    """The same problems with each solution cut to its final line, ``#### 24``: a model trained on
    these must answer at once, without writing out its work."""
    out = []
    for p in problems:
        final = extract_answer(p["answer"])
        if final is None:
            raise ValueError(f"a problem's answer has no readable '####' line: {p['answer']!r}")
        out.append({**p, "answer": f"#### {final}"})
    return out


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
        raise ValueError(f"the reference answer has no readable number (a '#### n' line, or n): {shown!r}")
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


def strict_reward(completion, answer) -> float:
    """The verifier AND the annotations: 1.0 if the completion's ``####`` number is right and it
    shows at least one ``<<expr=value>>`` calculation, every one of them correct (``check_annotations``);
    else 0.0. Never raises. A right answer reached through a wrong calculation scores 0."""
    notes = check_annotations(completion)
    return reward(completion, answer) if notes and all(n["ok"] for n in notes) else 0.0


def step_count(problem: dict) -> int:
    """How many calculations (1-4) a generated problem's reference solution makes."""
    return problem["answer"].count("<<")


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


# ----------------------------------------------------------------------------- loaders

def write_jsonl(rows: list[dict], path) -> None:
    """Write problems in GSM8K's jsonl schema, one ``{"question", "answer"}`` object a line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps({"question": row["question"], "answer": row["answer"]},
                               ensure_ascii=False) + "\n")


def read_jsonl(path) -> list[dict]:
    """Read a jsonl file in GSM8K's schema (ours or the official one); check every row."""
    rows = []
    with Path(path).open(encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row, dict) or not isinstance(row.get("question"), str) \
                    or not isinstance(row.get("answer"), str):
                raise ValueError(f"{path}:{i}: expected an object with string 'question' and 'answer'")
            rows.append({"question": row["question"], "answer": row["answer"]})
    return rows


GSM8K_HELP = ("GSM8K is not on this machine. Download train.jsonl and test.jsonl from "
              "https://github.com/openai/grade-school-math (grade_school_math/data/) into {dir}/, "
              "or, when online, use load_gsm8k_hf(split) with `pip install datasets`.")


def load_gsm8k(split: str = "test", data_dir="data/gsm8k") -> list[dict]:
    """The official GSM8K ``{split}.jsonl`` from ``data_dir``; a clear error if it is missing."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    path = Path(data_dir) / f"{split}.jsonl"
    if not path.exists():
        raise FileNotFoundError(GSM8K_HELP.format(dir=data_dir))
    return read_jsonl(path)


def load_gsm8k_hf(split: str = "test") -> list[dict]:
    """GSM8K from the Hugging Face hub (``openai/gsm8k``, config ``main``); needs the network."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1":
        raise RuntimeError("HF_HUB_OFFLINE is set: no hub download. " + GSM8K_HELP.format(dir="data/gsm8k"))
    try:
        import datasets
    except ImportError as e:
        raise RuntimeError("load_gsm8k_hf needs `pip install datasets` and the network. "
                           + GSM8K_HELP.format(dir="data/gsm8k")) from e
    ds = datasets.load_dataset("openai/gsm8k", "main", split=split)
    return [{"question": r["question"], "answer": r["answer"]} for r in ds]
