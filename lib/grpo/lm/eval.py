"""Scoring a model on problems: completions, verifier rewards, per-problem outcomes, accuracy and
pass@k. Chapters 7-10 and the stored runs share these, so every evaluation is done one way.

``completions(model, tok, problems, n, temperature, generator)`` samples (or, with
``temperature=None``, decodes greedily) and returns texts; ``rewards`` scores them with the
verifier: a (problems, n) array of 0/1. ``reward_by_kind`` is the reward of one completion for the
GRPO loop (the verifier, the strict verifier, or the length reward of the sanity check).
``outcomes`` gives the per-problem greedy and sampled outcomes that paired tests need (and, on
request, whether every annotation of each sample is right); ``evaluate`` their means;
``pass_at_k`` the unbiased pass@k.
``EvalConfig`` is what a training run measures and when, apart from how it trains.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from grpo.seeding import seeded_generator

from grpo import checks
from grpo.stats import Lift, paired_lift

from .data import calculation_chain, chain_seen, encode_problem
from .model import Sampling, sample
from .verifier import check_annotations, reference_answer, reward, strict_reward


@dataclass(frozen=True)
class EvalConfig:
    """What a training run (``RunConfig.evaluation``, ``EIConfig.evaluation``) measures on held-out
    problems, and when; none of it changes the training."""
    every: int = 20                    # evaluate every this many iterations, and after the last
    problems: int = 500                # the first this many held-out problems
    samples: int = 4                   # sampled completions per problem (pass@1 at temperature)
    temperature: float = 0.7           # the sampled accuracy's T (chapter 7's 0.7)
    at_start: bool = True              # also at iteration 0 (False: skip it; every run shares it)
    final_samples: int = 0             # > 0: at the end, this many samples per problem (pass@k)
    held_out: int = 0                  # > 0: at the end, outcomes on PROTOCOL.held_out(held_out)

    def __post_init__(self):
        """Every setting, at construction: a ValueError naming the field and its value."""
        for name, low in (("every", 1), ("problems", 1), ("samples", 1), ("final_samples", 0),
                          ("held_out", 0)):
            checks.integer(f"EvalConfig.{name}", getattr(self, name), minimum=low)
        checks.positive("EvalConfig.temperature", self.temperature)
        checks.boolean("EvalConfig.at_start", self.at_start)


def completions(model, tok, problems, n=1, temperature=None, generator=None, max_new_tokens=96,
                batch=256) -> list[list[str]]:
    """``n`` completions (texts) per problem: greedy if ``temperature`` is None, else sampled."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1 (completions per problem), got {n!r}")
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be an int >= 1, got {batch!r}")
    if temperature is None and n != 1:
        raise ValueError("greedy decoding (temperature=None) gives one completion per problem, "
                         f"not n = {n}: pass a temperature to sample {n}")
    out = []
    per = max(1, batch // n)
    for i in range(0, len(problems), per):
        prompts = [encode_problem(tok, p)[0] for p in problems[i:i + per]]
        sampling = (Sampling(max_new_tokens=max_new_tokens, greedy=True) if temperature is None
                    else Sampling(n, max_new_tokens, temperature))
        tokens, _, mask = sample(model, prompts, sampling, generator, eos_id=tok.eos_id)
        texts = [tok.decode(row[m].tolist()) for row, m in zip(tokens, mask)]
        k = 1 if temperature is None else n
        out += [texts[j:j + k] for j in range(0, len(texts), k)]
    return out


def rewards(problems, texts) -> np.ndarray:
    """(problems, n) array of verifier rewards (0.0 / 1.0) for ``completions`` output.

    Raises ValueError when the lengths differ, there are no problems, or a reference answer is
    unreadable (it would score every completion 0).
    """
    if len(problems) != len(texts) or not problems:
        raise ValueError(f"need one row of texts per problem, and at least one problem: got "
                         f"{len(problems)} problems, {len(texts)} rows")
    if any(isinstance(row, str) for row in texts):
        raise ValueError("texts must be rows (lists) of completions, one row per problem, not "
                         "strings")
    for p in problems:
        reference_answer(p["answer"])
    return np.array([[reward(t, p["answer"]) for t in row]
                     for p, row in zip(problems, texts, strict=True)])


SCORES = ("verifier", "strict", "short")


def reward_by_kind(problem: dict, text: str, kind: str = "verifier", max_new_tokens: int = 96,
                   length: int = 0) -> float:
    """The reward of one completion: the verifier's 0/1, the strict one's (right answer and every
    annotation right), or (the sanity check) 1 - length / budget."""
    if kind not in SCORES:
        raise ValueError(f"kind must be one of {SCORES}, got {kind!r}")
    if kind == "short":
        return 1.0 - length / max_new_tokens
    if kind == "strict":
        return strict_reward(text, problem["answer"])
    return reward(text, problem["answer"])


@torch.no_grad()
def outcomes(model, tok, problems, samples: int = 4, temperature: float = 0.7, seed: int = 0,
             max_new_tokens: int = 96, annotations: bool = False) -> dict:
    """Per-problem held-out outcomes, what paired tests need: ``greedy`` (P,) and ``sampled``
    (P, samples) verifier rewards, the samples drawn at ``temperature`` from a generator seeded
    ``seed``; with ``annotations``, also ``annotations_ok`` (P, samples): the sample shows at least
    one ``<<a=b>>`` and every one is right."""
    model.eval()
    greedy_texts = completions(model, tok, problems, max_new_tokens=max_new_tokens)
    greedy = rewards(problems, greedy_texts)[:, 0]
    gen = seeded_generator(seed)
    texts = completions(model, tok, problems, n=samples, temperature=temperature, generator=gen,
                        max_new_tokens=max_new_tokens)
    out = {"greedy": greedy, "sampled": rewards(problems, texts)}
    if annotations:
        out["annotations_ok"] = np.array([[bool(notes) and all(a["ok"] for a in notes)
                                           for notes in map(check_annotations,
                                                            row)] for row in texts])
    return out


def evaluate(model, tok, problems, samples: int = 4, temperature: float = 0.7, seed: int = 0,
             max_new_tokens: int = 96) -> dict:
    """Held-out accuracy: greedy, and sampled at
    ``temperature`` (mean over ``samples`` per problem)."""
    o = outcomes(model, tok, problems, samples, temperature, seed, max_new_tokens)
    return {"greedy": float(o["greedy"].mean()), "sampled": float(o["sampled"].mean())}


def pass_at_k(correct, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021) from a (problems, n) 0/1 array, n >= k: the chance that at
    least one of k answers drawn without replacement from a problem's n is right, averaged."""
    return float(pass_at_k_per_problem(correct, k).mean())


def pass_at_k_per_problem(correct, k: int) -> np.ndarray:
    """``pass_at_k`` for each problem, (problems,) in [0, 1]: what a paired test of pass@k needs."""
    correct = np.asarray(correct)
    if correct.ndim != 2 or correct.shape[0] == 0:
        raise ValueError("correct must be a (problems, n) array with at least one problem, got "
                         f"shape {correct.shape}")
    if not np.isin(correct, (0, 1)).all():
        raise ValueError(f"correct must hold only 0/1 (or False/True), got values "
                         f"{sorted(set(np.unique(correct).tolist()) - {0, 1})[:5]}")
    n = correct.shape[1]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n = {n}, got k = {k}")
    c = correct.sum(1)
    return np.array([1.0 - math.comb(n - int(ci), k) / math.comb(n, k) for ci in c])


class ChainLifts(NamedTuple):
    """A paired lift split by whether training has each problem's calculation chain."""
    new: Lift                   # on the problems whose chain no training problem has
    seen: Lift                  # on the rest
    new_mask: np.ndarray        # (problems,) True on the new-chain problems
    new_chains: int             # distinct chains among the new-chain problems
    seen_chains: int            # ... and among the rest


def lift_by_chain(before, after, problems: list[dict], train: list[dict]) -> ChainLifts:
    """``paired_lift(before, after)`` on the new-chain problems and on the rest (``chain_seen``
    against ``train``), the distinct chains resampled as clusters, so that an interval counts how
    much another draw of calculations would differ. ``before`` and ``after``: outcomes whose last
    axis is ``problems`` (``after`` may hold seeds on its first)."""
    before, after = np.asarray(before), np.asarray(after)
    if before.shape[-1] != len(problems) or after.shape[-1] != len(problems):
        raise ValueError(f"before and after must end on len(problems) = {len(problems)}, got "
                         f"{before.shape} and {after.shape}")
    seen = np.array(chain_seen(problems, train), dtype=bool)
    chains = [calculation_chain(p) for p in problems]
    new, old = (paired_lift(before[..., m], after[..., m],
                            clusters=[c for c, k in zip(chains, m) if k]) for m in (~seen, seen))
    return ChainLifts(new, old, ~seen, len({c for c, k in zip(chains, ~seen) if k}),
                      len({c for c, k in zip(chains, seen) if k}))


__all__ = ["EvalConfig", "completions", "rewards", "reward_by_kind", "outcomes", "evaluate",
           "pass_at_k", "pass_at_k_per_problem", "ChainLifts", "lift_by_chain"]
