"""Two-digit addition: the small task on which GRPO lifts held-out accuracy (chapter 9).

The published small-task run (``grpo_small_task_cpu`` in the bibliography) trained GRPO on prompts
like ``24+48=`` with a 4-token answer. Here a problem is in GSM8K's schema, so chapter 7's verifier,
SFT and chapter 8's GRPO loop serve unchanged:

    {"question": "24+48=", "answer": "#### 72"}        # the model writes "#### 72<eos>"

With ``addition_tokenizer`` the answer ``#### 72`` is 4 tokens (``####``, ``▁``, ``7``, ``2``; a
3-digit sum is 5), then ``<eos>``. Every pair a, b in 10..99 is a problem (8,100 in all), shuffled
once by ``SPLIT_SEED`` and cut into a fixed held-out test set (2,000), a validation set (500, for
choosing where SFT stops and for training curves) and the training set (the other 5,600).

The task and its evaluation protocol live here; chapter 9's model, recipes and jobs (which chapter
12 shares) live in the run store, ``grpo.runstore.addition_jobs``.
"""
from __future__ import annotations

import random

from .tokenizer import Tokenizer

LOW, HIGH = 10, 99                # both addends are two-digit numbers
SPLIT_SEED = 0
N_TEST, N_VAL = 2000, 500
EVAL_SEED = 1234                  # the sampled test outcomes' generator
EVAL_SAMPLES = 16                 # samples per test problem at T 0.7 (sampled accuracy, pass@k)
EVAL_TEMPERATURE = 0.7
MANY_PROBLEMS = 500              # pass@k to large k is drawn on the first 500 test problems
MAX_NEW_TOKENS = 8                # '####', '▁', up to 3 digits, '<eos>', with room to spare


def problem(a: int, b: int) -> dict:
    """``a+b=`` and its answer, in GSM8K's schema."""
    return {"question": f"{a}+{b}=", "answer": f"#### {a + b}"}


def make_addition_splits() -> tuple[list[dict], list[dict], list[dict]]:
    """``(train, val, test)``: every pair of two-digit
    addends, shuffled once, cut 5,600 / 500 / 2,000."""
    pairs = [(a, b) for a in range(LOW, HIGH + 1) for b in range(LOW, HIGH + 1)]
    random.Random(SPLIT_SEED).shuffle(pairs)
    problems = [problem(a, b) for a, b in pairs]
    return problems[N_TEST + N_VAL:], problems[N_TEST:N_TEST + N_VAL], problems[:N_TEST]


def addends(problem: dict) -> tuple[int, int]:
    """(a, b) of a problem ``a+b=``."""
    a, b = problem["question"].rstrip("=").split("+")
    return int(a), int(b)


def carries(problem: dict) -> bool:
    """Whether the units digits carry: 24+48 (4 + 8 = 12) does, 24+35 does not."""
    a, b = addends(problem)
    return a % 10 + b % 10 >= 10


def commuted_twin_in_train(problems, train) -> list[bool]:
    """For each problem a+b, whether b+a (a different problem when a != b) is in ``train``."""
    seen = {addends(p) for p in train}
    return [(b, a) in seen and a != b for a, b in map(addends, problems)]


def addition_tokenizer() -> Tokenizer:
    """Chapter 7's BPE (single digits) trained on the
    task's text: 20 tokens, ``####`` one of them."""
    train, val, test = make_addition_splits()
    return Tokenizer.train([p["question"] + "\n" + p["answer"] for p in train + val + test],
                           vocab_size=20)


__all__ = ["problem", "make_addition_splits", "addends", "carries", "commuted_twin_in_train",
           "addition_tokenizer", "EVAL_SEED", "EVAL_SAMPLES", "EVAL_TEMPERATURE", "MAX_NEW_TOKENS",
           "MANY_PROBLEMS", "N_TEST", "N_VAL"]
