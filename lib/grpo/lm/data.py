"""Grade-school math in GSM8K's format: a problem generator, the split, and jsonl loaders.

A problem is a dict in GSM8K's schema, ``{"question": str, "answer": str}``. The answer is a worked
solution whose lines carry calculator annotations ``<<48/2=24>>`` and end in ``#### 24``.

Generator
    ``make_problem(rng, steps, ...)`` builds one problem of 1-4 arithmetic steps from a few
    templates (names, objects, verbs). ``make_splits(n_train, n_test, seed)`` gives disjoint train
    and test lists, deterministic by seed (a problem goes to test when a hash of its
    ``masked_question`` says so: no test problem is a training problem reworded).
What is new
    ``calculation_chain(problem)`` is the arithmetic a solution does, its ``<<a op b=c>>`` steps;
    ``chain_seen(problems, train)`` says which problems' chains training has. The held-out problems
    whose chain it has not are the book's *new-arithmetic* set.
Verifier
    lives in ``grpo.lm.verifier`` (``extract_answer``, ``reward``, ``strict_reward``,
    ``reference_answer``, ``check_annotations``, ``safe_arith``). ``answer_only(problems)`` cuts
    each solution to its ``####`` line; ``step_count(problem)`` counts its calculations.
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
from pathlib import Path

from .verifier import extract_answer

# ----------------------------------------------------------------------------- the generator

NAMES = [("Mia", "she", "her"), ("Leo", "he", "him"), ("Ava", "she", "her"), ("Sam", "he", "him"),
         ("Zoe", "she", "her"), ("Omar", "he", "him"), ("Ines", "she", "her"), ("Tom", "he", "him"),
         ("Lena", "she", "her"), ("Ravi", "he", "him"), ("Nora", "she", "her"),
         ("Kai", "he", "him")]
OBJECTS = ["apples", "stamps", "marbles", "cookies", "pencils", "shells", "cards", "books",
           "eggs", "coins"]
OPS = ("buy", "gift", "give", "lose", "times", "share")
# Each operation's sentence in the question and in the worked solution (b: its number, ann: the
# annotated calculation).
STEP_TEXT = {
    "buy": ("{She} buys {b} more.", "{She} buys {b}: {ann} {obj}."),
    "gift": ("{friend} gives {her} {b} {obj}.", "{friend} gives {b}: {ann} {obj}."),
    "give": ("{She} gives {b} {obj} to {friend}.", "{She} gives away {b}: {ann} {obj}."),
    "lose": ("{She} loses {b} of them.", "{She} loses {b}: {ann} {obj}."),
    "times": ("Then {she} gets {b} times as many.", "{b} times as many: {ann} {obj}."),
    "share": ("{She} splits them into {b} equal groups and keeps one.",
              "One of {b} groups: {ann} {obj}."),
}

# The question's first sentence when the problem starts with a product (its first step).
BOXES_TEXT = "{name} has {a} boxes with {b} {obj} in each."


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
        raise ValueError("need max_add >= 2, max_factor >= 2, max_value >= max(max_add, "
                         "2*max_factor)")
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
        q.append(BOXES_TEXT.format(name=name, a=a, b=b, obj=obj))
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
        elif op in ("give", "lose") and x >= 2:
            b = rng.randint(1, min(max_add, x - 1))
            y, ann = _calc(x, "-", b)
        elif op == "times" and x <= max_factor and 2 * x <= max_value:
            b = rng.randint(2, min(max_factor, max_value // x))
            y, ann = _calc(x, "*", b)
        elif op == "share" and x >= 4:
            ks = [k for k in range(2, max_factor + 1) if x % k == 0 and x // k <= max_factor]
            if not ks:
                continue
            b = rng.choice(ks)
            y, ann = _calc(x, "/", b)
        else:
            continue                                          # op not possible here: draw again
        words = dict(She=She, she=she, her=her, friend=friend, obj=obj, b=b, ann=ann)
        q.append(STEP_TEXT[op][0].format(**words))
        sol.append(STEP_TEXT[op][1].format(**words))
        x = y
        ops_left -= 1
    q.append(f"How many {obj} does {name} have now?")
    return {"question": " ".join(q), "answer": "\n".join(sol) + f"\n#### {x}"}


PRONOUNS = ["she", "he", "her", "him", "She", "He"]
_SURFACE = re.compile(r"\b(?:" + "|".join([n for n, _, _ in NAMES] + OBJECTS + PRONOUNS) + r")\b")


def masked_question(problem: dict) -> str:
    """A problem's question with every name, object and pronoun replaced by ``_``, so its template
    and numbers remain. "Sam has 10 stamps. Ines gives him 1 stamps." and "Ava has 10 cards. Mia
    gives her 1 cards." mask to the same text: one is the other reworded. The split hashes this, so
    no held-out problem is a reworded training problem; whether its *arithmetic* is new is
    ``calculation_chain``'s question."""
    return _SURFACE.sub("_", problem["question"])


def _skeleton(sentence: str) -> str:
    """A sentence as ``masked_question`` masks it, with every number written N."""
    return re.sub(r"[0-9]+", "N", _SURFACE.sub("_", sentence))


# Each step template's question sentence, masked: "_ gives _ N _." is "gift" ("Mia gives him 3").
_TEMPLATE_OF = {_skeleton(text.format(She="She", she="she", her="her", friend=NAMES[0][0],
                                      obj=OBJECTS[0], b=2)): key
                for key, (text, _) in STEP_TEXT.items()}
_TEMPLATE_OF[_skeleton(BOXES_TEXT.format(name=NAMES[0][0], a=2, b=3, obj=OBJECTS[0]))] = "boxes"


def step_templates(problem: dict) -> tuple[str, ...]:
    """Which of the generator's templates words each calculation of a generated problem, in order:
    "boxes" for a start with a product ("Leo has 3 boxes with 4 eggs in each."), then a key of
    ``STEP_TEXT`` per step ("gift": "Mia gives him 3 eggs.", an addition; "give": "He gives 3 eggs
    to Mia.", a subtraction). One per ``calculation_chain`` step; read from the question alone."""
    question = problem.get("question") if isinstance(problem, dict) else None
    if not isinstance(question, str):
        raise ValueError(f"problem must be a dict with a 'question' string, got {problem!r:.80}")
    sentences = re.split(r"(?<=[.?]) ", question)[:-1]   # the last asks "How many ... now?"
    out = []
    for i, sentence in enumerate(sentences):
        key = _TEMPLATE_OF.get(_skeleton(sentence))
        if key is None and not (i == 0 and re.fullmatch(r"_ has N _\.", _skeleton(sentence))):
            raise ValueError(f"problem: no generator template words {sentence!r} "
                             f"(in {question!r:.80})")
        if key is not None:
            out.append(key)
    return tuple(out)


_STEP = re.compile(r"<<\s*(\d+)\s*([-+*/])\s*(\d+)\s*=\s*(-?\d+)\s*>>")


def calculation_chain(problem: dict) -> tuple[str, ...]:
    """The arithmetic a problem's reference solution does: its ``<<a op b=c>>`` steps in order,
    each written ``a op b=c``. The operands of ``+`` and ``*`` are sorted, so ``3+5`` and ``5+3``
    are one step: a model that has practised one has practised the fact the other asks for.

    Two problems with the same chain ask for the same arithmetic whatever their template: from 6,
    "She gives 1 apples to Leo" and "He loses 1 of them" are both ``6-1=5``. A held-out problem is
    *new arithmetic* when no training problem has its chain (``chain_seen``)."""
    steps = _STEP.findall(problem["answer"])
    if not steps:
        raise ValueError(f"problem's answer has no <<a op b=c>> step: {problem['answer']!r:.80}")
    chain = []
    for a, op, b, c in steps:
        if op in "+*" and int(b) < int(a):
            a, b = b, a
        chain.append(f"{a}{op}{b}={c}")
    return tuple(chain)


def chain_seen(problems: list[dict], train: list[dict]) -> list[bool]:
    """For each problem, whether some training problem has its ``calculation_chain``. The problems
    where this is False are the book's *new-chain* held-out set: arithmetic training never did in
    that order, however worded (each single step may still occur in training)."""
    seen = {calculation_chain(p) for p in train}
    return [calculation_chain(p) in seen for p in problems]


def reword(problem: dict, rng: random.Random) -> dict:
    """The same question in other words: the person, the friend and the object drawn afresh (with
    the new person's pronouns), the numbers and the solution's arithmetic unchanged."""
    words = _SURFACE.findall(problem["question"])
    names = [n for n, _, _ in NAMES]
    person = next(w for w in words if w in names)
    friend = next((w for w in words if w in names and w != person), None)
    obj = next(w for w in words if w in OBJECTS)
    new_person = rng.choice([n for n in NAMES if n[0] not in (person, friend)])
    new_friend = rng.choice([n for n, _, _ in NAMES if n not in (person, friend, new_person[0])])
    new = {person: new_person[0], obj: rng.choice([o for o in OBJECTS if o != obj]),
           "she": new_person[1], "he": new_person[1], "her": new_person[2], "him": new_person[2],
           "She": new_person[1].capitalize(), "He": new_person[1].capitalize()}
    if friend:
        new[friend] = new_friend

    def swap(text):
        return _SURFACE.sub(lambda m: new.get(m.group(), m.group()), text)
    return {"question": swap(problem["question"]), "answer": swap(problem["answer"])}


def _in_test(key: str, test_fraction: float) -> bool:
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < test_fraction


SPLITS_BY = ("masked_question", "question")


def make_splits(n_train: int, n_test: int, seed: int = 0, step_weights=(0.3, 0.35, 0.25, 0.1),
                by: str = "masked_question", **knobs) -> tuple[list[dict], list[dict]]:
    """Disjoint train and test lists of generated problems, deterministic by seed.

    Each problem's split is decided by a hash of its ``masked_question`` (about 1 in 5 go to test),
    so no test problem is a training problem reworded; test questions are distinct. Its arithmetic
    may still be a training problem's (``chain_seen`` says which). ``by="question"`` hashes the
    question string instead, the split chapters 7-8 used first: most of its test problems then
    have a reworded training twin (chapter 7 measures how many). ``step_weights`` are the
    probabilities of 1, 2, 3 and 4 steps; ``knobs`` go to ``make_problem``.
    """
    if (n_train < 0 or n_test < 0 or len(step_weights) != 4 or min(step_weights) < 0
            or sum(step_weights) <= 0):
        raise ValueError("need n_train, n_test >= 0 and four non-negative step_weights")
    if by not in SPLITS_BY:
        raise ValueError(f"by must be one of {SPLITS_BY}, got {by!r}")
    key = masked_question if by == "masked_question" else (lambda p: p["question"])
    rng = random.Random(seed)
    train, test, seen_test = [], [], set()
    tries = 0
    while len(train) < n_train or len(test) < n_test:
        tries += 1
        if tries > 50 * (n_train + n_test) + 1000:
            raise ValueError("could not draw enough distinct problems: widen the knobs")
        steps = rng.choices((1, 2, 3, 4), weights=step_weights)[0]
        p = make_problem(rng, steps, **knobs)
        if _in_test(key(p), 0.2):
            if len(test) < n_test and p["question"] not in seen_test:
                seen_test.add(p["question"])
                test.append(p)
        elif len(train) < n_train:
            train.append(p)
    return train, test


HELD_OUT = 2000  # the held-out problems (``Protocol.held_out``) the stored runs are scored on


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

    def held_out(self, n: int = HELD_OUT) -> list[dict]:
        """``n`` more held-out problems, drawn after ``splits()``'s test set by the same generator:
        disjoint from train and test, never used to choose anything. Chapter 8's stored runs are
        scored on these (``splits()`` is unchanged by drawing them)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        return make_splits(self.n_train, self.n_test + n, self.seed,
                           self.step_weights)[1][self.n_test:]


PROTOCOL = Protocol()


# ----------------------------------------------------------------------------- problems

def prompt_text(question: str) -> str:
    """What the model is given: the question and a newline; it writes the solution and ``<eos>``."""
    return question + "\n"


def encode_problem(tok, problem: dict) -> tuple[list[int], list[int]]:
    """(prompt ids, solution ids + <eos>) of one problem."""
    prompt = tok.encode(prompt_text(problem["question"]))
    return prompt, tok.encode(problem["answer"]) + [tok.eos_id]


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


def step_count(problem: dict) -> int:
    """How many calculations (1-4) a generated problem's reference solution makes."""
    return problem["answer"].count("<<")


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
                raise ValueError(f"{path}:{i}: expected an object with string 'question' and "
                                 "'answer'")
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
        raise RuntimeError("HF_HUB_OFFLINE is set: no hub download. "
                           + GSM8K_HELP.format(dir="data/gsm8k"))
    try:
        import datasets
    except ImportError as e:
        raise RuntimeError("load_gsm8k_hf needs `pip install datasets` and the network. "
                           + GSM8K_HELP.format(dir="data/gsm8k")) from e
    ds = datasets.load_dataset("openai/gsm8k", "main", split=split)
    return [{"question": r["question"], "answer": r["answer"]} for r in ds]
