"""Supervised fine-tuning (SFT) of the small GPT on worked solutions, and its evaluation.

``sft(model, tok, train, evals, cfg)`` trains with AdamW, a linear warm-up and a cosine decay, on
the solution tokens only (the question is context, not a target). Batches hold problems of similar
length (shuffled, then sorted within chunks of ``64 * batch_size``), so almost no compute goes to
padding; positions stay exact, since every row starts at position 0. It returns the loss at every
step and the held-out greedy accuracy every ``eval_every`` steps.

Its evaluations use ``grpo.lm.eval`` (``completions``, ``rewards``).

Chapter 7's trained checkpoint is read back by ``grpo.runstore.models.load_sft``.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from grpo import checks

from .data import encode_problem
from .eval import completions, rewards


@dataclass(frozen=True)
class SFTConfig:
    steps: int = 600
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 20
    min_lr_frac: float = 0.05          # cosine decays to lr * min_lr_frac
    weight_decay: float = 0.1
    betas: tuple = (0.9, 0.95)
    grad_clip: float = 1.0
    eval_every: int = 100
    eval_problems: int = 200
    bucket: bool = True                # batch problems of similar length (less padding)
    seed: int = 0

    def __post_init__(self):
        """Every setting, at construction: a ValueError naming the field and its value."""
        for name, low in (("steps", 1), ("batch_size", 1), ("warmup", 0), ("eval_every", 1),
                          ("eval_problems", 1), ("seed", 0)):
            checks.integer(f"SFTConfig.{name}", getattr(self, name), minimum=low)
        checks.positive("SFTConfig.lr", self.lr)
        checks.number("SFTConfig.min_lr_frac", self.min_lr_frac, minimum=0, maximum=1)
        checks.non_negative("SFTConfig.weight_decay", self.weight_decay)
        check_betas("SFTConfig.betas", self.betas)
        checks.positive("SFTConfig.grad_clip", self.grad_clip)
        checks.boolean("SFTConfig.bucket", self.bucket)


def check_betas(name: str, betas) -> tuple:
    """Adam's ``(beta1, beta2)``: two numbers in [0, 1)."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"{name} must be a pair (beta1, beta2), got {betas!r}")
    for i, b in enumerate(betas):
        checks.number(f"{name}[{i}]", b, minimum=0, maximum=1, high_open=True)
    return tuple(betas)


def lr_at(step: int, cfg: SFTConfig) -> float:
    """Linear warm-up to ``lr``, then cosine decay to ``lr * min_lr_frac`` at the last step."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * frac)))


def length_batches(encoded, cfg: SFTConfig, rng: random.Random):
    """Endless length-bucketed batches: (ids, targets) with target -100 off the solution tokens."""
    chunk = 64 * cfg.batch_size if cfg.bucket else cfg.batch_size
    while True:
        order = list(range(len(encoded)))
        rng.shuffle(order)
        batches = []
        for i in range(0, len(order), chunk):
            part = sorted(order[i:i + chunk], key=lambda j: len(encoded[j][0]) + len(encoded[j][1]))
            batches += [part[k:k + cfg.batch_size] for k in range(0, len(part), cfg.batch_size)]
        rng.shuffle(batches)
        for rows in batches:
            T = max(len(encoded[j][0]) + len(encoded[j][1]) for j in rows)
            ids = torch.zeros(len(rows), T, dtype=torch.long)
            tgt = torch.full((len(rows), T), -100, dtype=torch.long)
            for r, j in enumerate(rows):
                p, a = encoded[j]
                ids[r, :len(p) + len(a)] = torch.tensor(p + a)
                # predict each solution token
                tgt[r, len(p) - 1:len(p) + len(a) - 1] = torch.tensor(a)
            yield ids[:, :-1], tgt[:, :-1]


def sft_loss(model, ids, tgt):
    """Mean cross-entropy of the solution tokens (targets
    -100 elsewhere), one ``length_batches`` batch."""
    logits = model(ids)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100)


def sft(model, tok, train: list[dict], evals: list[dict], cfg: SFTConfig,
        keep_states: bool = False, progress=None) -> dict:
    """Train ``model`` in place on ``train``; return ``{"step", "loss", "eval_step",
    "eval_greedy"}``. ``keep_states=True`` adds ``"states"``: a copy of the weights at every
    evaluation step (the snapshots a start-point study needs; with a constant lr, a run stopped
    there is the same run). ``progress``, if given, wraps the steps (``progress(range(steps),
    "SFT")``, e.g. ``grpo.book.display.progress`` for a bar in Jupyter)."""
    if not train:                       # cfg checked its own fields at construction
        raise ValueError("train must hold at least one training problem, got none")
    if not evals:
        raise ValueError("evals must hold at least one held-out problem: sft evaluates on them")
    rng = random.Random(cfg.seed)
    encoded = [encode_problem(tok, p) for p in train]
    max_len = getattr(getattr(model, "cfg", None), "max_len", None)
    longest = max(range(len(encoded)), key=lambda j: len(encoded[j][0]) + len(encoded[j][1]))
    if max_len is not None and sum(map(len, encoded[longest])) - 1 > max_len:
        raise ValueError(f"training problem {longest} is {sum(map(len, encoded[longest]))} tokens "
                         "(question, solution, <eos>), more than the model's max_len + 1 = "
                         f"{max_len + 1}")
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=cfg.betas)
    hist = {"step": [], "loss": [], "eval_step": [], "eval_greedy": []}
    if keep_states:
        hist["states"] = []
    batches = length_batches(encoded, cfg, rng)
    steps = range(cfg.steps) if progress is None else progress(range(cfg.steps), "SFT")
    for step in steps:
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        model.train()
        ids, tgt = next(batches)
        loss = sft_loss(model, ids, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        hist["step"].append(step + 1)
        hist["loss"].append(loss.item())
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            model.eval()
            held_out = evals[:cfg.eval_problems]
            acc = rewards(held_out, completions(model, tok, held_out)).mean()
            hist["eval_step"].append(step + 1)
            hist["eval_greedy"].append(float(acc))
            if keep_states:
                state = model.state_dict()
                hist["states"].append({k: v.detach().clone() for k, v in state.items()})
    model.eval()
    return hist

