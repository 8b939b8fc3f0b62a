"""GRPO on a language model: the training loop of chapter 8, and expert iteration.

``train_lm_grpo(policy, tok, train, test, cfg)`` is the loop, top to bottom: each iteration is
``grpo_iteration``, the one GRPO step every language model here takes (our GPT, a Hugging Face
model through ``grpo.lm.hf.grpo_step``, the benches):

    sample G completions per prompt and score them (a ``Batch``; chapter 7's sampler also returns
    pi_old's log-probs) -> read the frozen reference's log-probs (when beta > 0)
    -> ``grpo.lm.grpo.grpo_update`` (K steps of ``grpo_loss``) -> log -> evaluate now and then.

Every choice is a field of ``RunConfig``, so an ablation is a one-field change; how a batch is drawn
(the random reward, DAPO's dynamic sampling) is ``GroupDraws``', outside the loop. Evaluation lives
in ``grpo.lm.eval``; the optimizer's settings are ``lm_adam``'s, stated once. Runs that start from
chapter 7's stored checkpoint are ``grpo.runstore.models.run_from_sft``.
"""
from __future__ import annotations

import copy
import math
import random
import time
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from grpo import checks
from grpo.seeding import seeded_generator

from .data import PROTOCOL, encode_problem
from .eval import EvalConfig, completions, evaluate, outcomes, reward_by_kind, rewards
from .grpo import LossOptions, dynamic_sampling, grpo_update
from .model import DTYPE, Sampling, completion_logprobs, sample
from .verifier import random_rewards, reference_answer, reward, strict_reward
from .train import SFTConfig, check_betas, length_batches, sft, sft_loss


REWARDS = ("verifier", "strict", "short", "random")


@dataclass(frozen=True)
class RunConfig(LossOptions):
    """The loop's settings. The loss's own (advantage, clip, eps_low, eps_high, beta, kl_ratio,
    aggregation, ratio_level) come from ``grpo.lm.grpo.LossOptions``, and ``cfg.loss_options()``
    passes exactly those; what the run measures, and when, is ``evaluation`` (an ``EvalConfig``)."""
    iterations: int = 60
    prompts: int = 32                  # B: prompts per iteration
    G: int = 8                         # completions per prompt
    lr: float = 1e-4
    warmup: int = 5                    # iterations of linear lr warm-up
    temperature: float = 0.7           # sampling, and every log-prob (pi_theta, pi_old, pi_ref)
    max_new_tokens: int = 96
    reuse: int = 1                     # K: optimizer steps per sampled batch
    dynamic_sampling: bool = False     # DAPO: refill the batch with groups that are not all-equal
    grad_clip: float = 1.0
    # "verifier" | "strict" (and every <<a=b>> right) | "short" (sanity)
    reward: str = "verifier"
    #                                    | "random": Bernoulli at the batch's verifier success rate
    # > 0: practise on the first N training problems only, and evaluate them too
    train_pool: int = 0
    evaluation: EvalConfig = EvalConfig()
    seed: int = 0

    def __post_init__(self):
        """Every setting, at construction: a ValueError naming the field and its value."""
        super().__post_init__()
        for name, low in (("iterations", 0), ("prompts", 1), ("G", 2), ("reuse", 1),
                          ("max_new_tokens", 1), ("warmup", 0), ("train_pool", 0), ("seed", 0)):
            checks.integer(f"RunConfig.{name}", getattr(self, name), minimum=low)
        for name in ("lr", "temperature"):
            checks.positive(f"RunConfig.{name}", getattr(self, name))
        checks.optional(checks.positive, "RunConfig.grad_clip", self.grad_clip)
        checks.boolean("RunConfig.dynamic_sampling", self.dynamic_sampling)
        checks.choice("RunConfig.reward", self.reward, REWARDS)
        if not isinstance(self.evaluation, EvalConfig):
            raise ValueError("RunConfig.evaluation must be an EvalConfig, got "
                             f"{type(self.evaluation).__name__}")
        if 0 < self.train_pool < self.prompts:
            raise ValueError("RunConfig.train_pool must be 0 (all) or >= prompts = "
                             f"{self.prompts}, got {self.train_pool}")


# Adam, the optimizer of every GRPO loop on a language model, stated once. beta2 is 0.99 rather than
# PyTorch's 0.999, so that the second-moment estimate forgets within ~100 steps, the length of these
# runs. Chapter 11's runs on a Hugging Face model were stored with PyTorch's defaults: the Hugging
# Face loop keeps them (HF_ADAM_BETAS), so that those runs replay bit for bit.
ADAM_BETAS = (0.9, 0.99)
HF_ADAM_BETAS = (0.9, 0.999)


def lm_adam(params, lr: float, betas: tuple = ADAM_BETAS) -> torch.optim.Adam:
    """The Adam every GRPO loop on a language model steps with (no weight decay, eps 1e-8)."""
    return torch.optim.Adam(params, lr=lr, betas=betas)


def _check_config(cfg: RunConfig, train=None, test=None):
    """The data a run needs, before any compute (the config checked itself at construction);
    returns the training problems it practises on (the first ``cfg.train_pool``, or all)."""
    if train is not None and len(train[:cfg.train_pool or None]) < cfg.prompts:
        raise ValueError(f"{len(train[:cfg.train_pool or None])} training problems cannot fill a "
                         f"batch of prompts = {cfg.prompts}")
    if test is not None and len(test) == 0:
        raise ValueError("the held-out test set is empty: evaluation needs at least one problem")
    # an unreadable reference would score every sample 0
    for problems in (train, test):
        for p in problems or ():
            reference_answer(p["answer"])
    return train[:cfg.train_pool] if cfg.train_pool and train is not None else train


LOG_KEYS = ("iteration", "reward_mean", "verifier_reward_mean", "degenerate_fraction",
            "entropy_mean", "kl_mean", "clip_fraction", "completion_length_mean",
            "sample_cpu_s", "ref_cpu_s", "update_cpu_s")


def warmed_up_lr(lr: float, iteration: int, warmup: int) -> float:
    """The learning rate at ``iteration`` (from 1) of a linear warm-up over ``warmup`` iterations
    (0: none), then constant."""
    return lr * min(1.0, iteration / warmup) if warmup else lr


class Group(NamedTuple):
    """One prompt and its G sampled completions: what the sampler and the verifier give GRPO."""
    prompt: list                       # the question's token ids
    tokens: torch.Tensor               # (G, L) completions, padded after <eos>
    logp_old: torch.Tensor             # (G, L) the sampler's log-probs: pi_old's, at the sampling T
    mask: torch.Tensor                 # (G, L) True on completion tokens, <eos> included
    rewards: torch.Tensor              # (G,) the rewards GRPO trains on
    # (G,) the verifier's 0/1 (the rewards, unless cfg.reward differs)
    verifier: torch.Tensor


def sample_groups(policy, tok, problems, cfg: RunConfig, generator,
                  coins: random.Random) -> list[Group]:
    """G completions of each problem, sampled at ``cfg.temperature`` and scored
    (``reward_by_kind``). With ``cfg.reward="random"`` the rewards ignore the answers: each is 1
    with probability the batch's verifier success rate (``coins`` flips them), so the expected
    gradient carries no signal."""
    prompts = [encode_problem(tok, p)[0] for p in problems]
    sampling = Sampling(n=cfg.G, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature)
    tokens, logp, mask = sample(policy, prompts, sampling, generator, eos_id=tok.eos_id)
    texts = [tok.decode(t[m].tolist()) for t, m in zip(tokens, mask)]
    kind = "verifier" if cfg.reward == "random" else cfg.reward
    r = torch.tensor([reward_by_kind(problems[i // cfg.G], x, kind, cfg.max_new_tokens,
                                     int(m.sum()))
                      for i, (x, m) in enumerate(zip(texts, mask))], dtype=DTYPE).reshape(-1, cfg.G)
    right = torch.tensor([reward(x, problems[i // cfg.G]["answer"]) for i, x in enumerate(texts)],
                         dtype=DTYPE).reshape(-1, cfg.G) if kind != "verifier" else r
    if cfg.reward == "random":
        rate = float(right.mean())
        flips = random_rewards([coins.random() for _ in range(r.numel())], rate)
        r = torch.tensor(flips, dtype=DTYPE).reshape(r.shape)
    rows = [slice(i * cfg.G, (i + 1) * cfg.G) for i in range(len(problems))]
    return [Group(prompts[i], tokens[s], logp[s], mask[s], r[i], right[i])
            for i, s in enumerate(rows)]


class Batch(NamedTuple):
    """One iteration's groups as one batch, what the reference and the update read: any language
    model's (our GPT's, ``stack_groups``; a Hugging Face model's, ``grpo.lm.hf.grpo_step``)."""
    prompts: object                    # the B prompts, as the model's ``logprobs`` reads them
    tokens: torch.Tensor               # (B*G, L) completions, padded to the widest group
    logp_old: torch.Tensor | None      # (B*G, L) the sampler's log-probs (None: pi_theta's own,
    #                                    read on the first pass before any step)
    mask: torch.Tensor                 # (B*G, L) True on completion tokens
    rewards: torch.Tensor              # (B, G)


def stack_groups(groups: list[Group]) -> Batch:
    """One batch from groups of possibly different widths, padded to the widest."""
    L = max(g.tokens.shape[1] for g in groups)
    pad = [(0, L - g.tokens.shape[1]) for g in groups]
    return Batch([g.prompt for g in groups],
                 torch.cat([F.pad(g.tokens, w) for g, w in zip(groups, pad)]),
                 torch.cat([F.pad(g.logp_old, w) for g, w in zip(groups, pad)]),
                 torch.cat([F.pad(g.mask, w) for g, w in zip(groups, pad)]),
                 torch.stack([g.rewards for g in groups]))


def _degenerate(groups: list[Group]) -> float:
    """The share of groups whose G rewards are all equal (zero advantage: no gradient)."""
    return float(np.mean([bool((g.rewards == g.rewards[0]).all()) for g in groups]))


class GroupDraws:
    """How ``train_lm_grpo`` draws each iteration's batch, attached from outside the loop it
    prints: the run's seeded streams (the prompts, the sampler's draws, the random reward's
    coins), DAPO's dynamic sampling (``cfg.dynamic_sampling``: draw again until ``cfg.prompts``
    groups have rewards that differ; with none after ``dynamic_sampling``'s last draw, that draw
    is the batch), and what the log keeps of every draw: the share of degenerate groups and the
    verifier's mean."""

    def __init__(self, policy, tok, train: list[dict], cfg: RunConfig):
        self.policy, self.tok, self.train, self.cfg = policy, tok, train, cfg
        self.rng, self.gen = random.Random(cfg.seed), seeded_generator(cfg.seed)
        self.coins = random.Random(cfg.seed + 1_000_003)      # the random reward's own stream
        self.drawn: list[list[Group]] = []

    def _draw(self):
        problems = self.rng.sample(self.train, self.cfg.prompts)
        self.drawn.append(sample_groups(self.policy, self.tok, problems, self.cfg, self.gen,
                                        self.coins))
        return self.drawn[-1], torch.stack([g.rewards for g in self.drawn[-1]])

    def batch(self) -> Batch:
        """The next batch, sampled with the policy in eval mode."""
        self.policy.eval()
        self.drawn = []
        if self.cfg.dynamic_sampling:
            groups = dynamic_sampling(self._draw, self.cfg.prompts)[0] or self.drawn[-1]
        else:
            groups = self._draw()[0]
        return stack_groups(groups)

    def stats(self) -> dict:
        """The last batch's draws: ``degenerate_fraction`` and ``verifier_reward_mean``."""
        return {"degenerate_fraction": float(np.mean([_degenerate(d) for d in self.drawn])),
                "verifier_reward_mean": float(np.mean(
                    [float(torch.stack([g.verifier for g in d]).mean()) for d in self.drawn]))}


def batch_logprobs(model, batch: Batch, rows: slice, cfg: RunConfig, entropy: bool = True):
    """Our GPT's log-probs and entropies (None without ``entropy``) of ``rows`` of ``batch``, whole
    groups (each prompt read once), at the sampling temperature: ``grpo_iteration``'s
    ``logprobs``. Differentiable: pi_theta's, for the update, and the reference's."""
    groups = slice(rows.start // cfg.G, rows.stop // cfg.G)
    out = completion_logprobs(model, batch.prompts[groups], cfg.G, batch.tokens[rows],
                              batch.mask[rows], cfg.temperature, entropy=entropy)
    return out if entropy else (out, None)


def grpo_iteration(policy, ref, optimizer, draw, logprobs, cfg, chunk_groups: int | None = None,
                   max_grad_norm: float | None = None) -> tuple[Batch, dict]:
    """One GRPO iteration on any language model that gives log-probs: ``draw()`` samples and scores
    a ``Batch`` (``GroupDraws.batch``, or a Hugging Face model's sampler), ``logprobs(model, batch,
    rows, cfg, entropy)`` reads a model's log-probs of ``rows`` (whole groups; ``batch_logprobs``
    for our GPT), ``ref`` is the frozen reference (read when ``cfg.beta > 0``), and ``cfg`` (a
    ``LossOptions`` with ``reuse``, ``max_new_tokens``) says the loss. ``chunk_groups`` groups go
    through each forward pass (memory, not math); ``max_grad_norm`` clips the gradient. Returns the
    batch and ``grpo_update``'s stats with the CPU-seconds of each part."""
    # 1. Sample and score G completions per prompt; a sampler's log-probs are pi_old's.
    t0 = time.process_time()
    b = draw()
    # 2. The frozen reference's log-probs at the sampling temperature (for the KL term).
    t1 = time.process_time()
    step = b.rewards.shape[1] * (chunk_groups or b.rewards.shape[0])
    logp_ref = None
    if cfg.beta > 0:
        with torch.inference_mode():
            logp_ref = torch.cat([logprobs(ref, b, slice(i, i + step), cfg, entropy=False)[0]
                                  for i in range(0, len(b.tokens), step)])
        logp_ref = logp_ref.clone()    # a plain tensor again, usable beside autograd
    # 3. K optimizer steps of the GRPO loss on this batch (pi_theta's log-probs with grad).
    t2 = time.process_time()
    policy.train()
    stats = grpo_update(lambda rows: logprobs(policy, b, rows, cfg), optimizer, b.mask, b.rewards,
                        logp_old=b.logp_old, logp_ref=logp_ref, reuse=cfg.reuse,
                        chunk_groups=chunk_groups, max_grad_norm=max_grad_norm,
                        max_tokens=cfg.max_new_tokens, **cfg.loss_options())
    return b, {**stats, "sample_cpu_s": t1 - t0, "ref_cpu_s": t2 - t1,
               "update_cpu_s": time.process_time() - t2}


def train_lm_grpo(policy, tok, train: list[dict], test: list[dict], cfg: RunConfig,
                  progress=None) -> dict:
    """Train ``policy`` in place with GRPO; return its per-iteration log and held-out evaluations.
    How a batch is drawn (its streams, the random reward, dynamic sampling) is ``GroupDraws``'."""
    train = _check_config(cfg, train, test)
    draws = GroupDraws(policy, tok, train, cfg)
    ref = copy.deepcopy(policy).eval().requires_grad_(False) if cfg.beta > 0 else None
    optimizer = lm_adam(policy.parameters(), cfg.lr)
    log, evals = {k: [] for k in LOG_KEYS}, {}
    pool = train if cfg.train_pool else None   # with train_pool, the practised problems are scored
    if cfg.evaluation.at_start:
        _evaluate_into(evals, 0, policy, tok, test, cfg, pool)
    for it in range(1, cfg.iterations + 1):
        optimizer.param_groups[0]["lr"] = warmed_up_lr(cfg.lr, it, cfg.warmup)
        # Sample and score, read the reference, take K steps of the loss (CPU seconds of each).
        _, stats = grpo_iteration(policy, ref, optimizer, draws.batch, batch_logprobs, cfg,
                                  max_grad_norm=cfg.grad_clip)
        # Log, and now and then evaluate.
        row = {"kl_mean": float("nan"), **stats, **draws.stats(), "iteration": it}
        for k in LOG_KEYS:
            log[k].append(row[k])
        if it % cfg.evaluation.every == 0 or it == cfg.iterations:
            _evaluate_into(evals, it, policy, tok, test, cfg, pool)
        if progress is not None:
            progress(it, log, evals)
    return {"config": asdict(cfg), "log": log, "evals": evals,
            "state": {k: v.detach().clone() for k, v in policy.state_dict().items()},
            **_final_outcomes(policy, tok, test, cfg)}


def _final_outcomes(policy, tok, test, cfg: RunConfig) -> dict:
    """After training: ``final_correct``, ``final_samples`` samples per validation problem
    (pass@k), and ``held_out``, per-problem outcomes on ``PROTOCOL.held_out(held_out)`` (both of
    ``cfg.evaluation``); each only when asked for."""
    out, ev = {}, cfg.evaluation
    if ev.final_samples:
        held_out = test[:ev.problems]
        texts = completions(policy, tok, held_out, n=ev.final_samples, temperature=ev.temperature,
                            generator=seeded_generator(PROTOCOL.final_seed),
                            max_new_tokens=cfg.max_new_tokens)
        out["final_correct"] = rewards(held_out, texts)
    if ev.held_out:
        out["held_out"] = outcomes(policy, tok, PROTOCOL.held_out(ev.held_out), ev.samples,
                                   ev.temperature, PROTOCOL.eval_seed, cfg.max_new_tokens)
    return out


def _evaluate_into(evals, it, policy, tok, test, cfg, pool=None) -> None:
    """Append iteration ``it``'s held-out greedy and sampled accuracy (``cfg.evaluation``'s) to
    ``evals``, and with ``pool``, the practised problems' own (keys ``pool_greedy``,
    ``pool_sampled``)."""
    ev = cfg.evaluation
    sets = {"": test[:ev.problems], "pool_": pool}
    evals.setdefault("iteration", []).append(it)
    for prefix, problems in sets.items():
        if problems is not None:
            e = evaluate(policy, tok, problems, ev.samples, ev.temperature,
                         seed=PROTOCOL.eval_seed, max_new_tokens=cfg.max_new_tokens)
            for key in ("greedy", "sampled"):
                evals.setdefault(prefix + key, []).append(e[key])


def continued_sft(model, tok, train, test, cfg: SFTConfig,
                  evaluation: EvalConfig = EvalConfig()) -> dict:
    """The control: more SFT from the same checkpoint, then evaluated once as ``train_lm_grpo``
    evaluates (``evaluation``'s problems, samples and temperature; with ``evaluation.held_out``,
    also its per-problem outcomes on ``PROTOCOL.held_out(held_out)``)."""
    if not isinstance(evaluation, EvalConfig):
        raise ValueError(f"evaluation must be an EvalConfig, got {type(evaluation).__name__}")
    ev = evaluation
    history = sft(model, tok, train, test, cfg)
    out = {"history": history, "evals": evaluate(model, tok, test[:ev.problems], ev.samples,
                                                 ev.temperature, seed=PROTOCOL.eval_seed)}
    if ev.held_out:
        out["held_out"] = outcomes(model, tok, PROTOCOL.held_out(ev.held_out), ev.samples,
                                   ev.temperature, PROTOCOL.eval_seed)
    return out


@dataclass(frozen=True)
class EIConfig:
    """Expert iteration (rejection-sampling fine-tuning):
    GRPO's sampling, then SFT on the right samples."""
    iterations: int = 240
    prompts: int = 32                  # B prompts, G completions each, as GRPO samples them
    G: int = 8
    temperature: float = 0.7
    max_new_tokens: int = 96
    lr: float = 3e-4                   # chapter 8's continued-SFT control's AdamW settings
    warmup: int = 0                    # iterations of linear lr warm-up (then constant)
    weight_decay: float = 0.1
    betas: tuple = (0.9, 0.95)
    batch_size: int = 32               # one pass over the kept completions, in batches of this size
    # keep samples "verifier" marks right | "strict" (and every <<a=b>>)
    keep: str = "verifier"
    grad_clip: float = 1.0
    # what it measures, and when: by default not at iteration 0; final_samples and held_out stay 0
    evaluation: EvalConfig = EvalConfig(every=40, at_start=False)
    seed: int = 0

    def __post_init__(self):
        """Every setting, at construction: a ValueError naming the field and its value."""
        for name, low in (("iterations", 1), ("prompts", 1), ("G", 2), ("max_new_tokens", 1),
                          ("warmup", 0), ("batch_size", 1), ("seed", 0)):
            checks.integer(f"EIConfig.{name}", getattr(self, name), minimum=low)
        for name in ("lr", "temperature", "grad_clip"):
            checks.positive(f"EIConfig.{name}", getattr(self, name))
        checks.non_negative("EIConfig.weight_decay", self.weight_decay)
        check_betas("EIConfig.betas", self.betas)
        checks.choice("EIConfig.keep", self.keep, ("verifier", "strict"))
        if not isinstance(self.evaluation, EvalConfig):
            raise ValueError("EIConfig.evaluation must be an EvalConfig, got "
                             f"{type(self.evaluation).__name__}")
        for name in ("final_samples", "held_out"):
            if getattr(self.evaluation, name):
                raise ValueError(f"EIConfig.evaluation.{name} must be 0: expert iteration measures "
                                 f"only along the way, got {getattr(self.evaluation, name)}")


def expert_iteration(policy, tok, train: list[dict], test: list[dict], cfg: EIConfig) -> dict:
    """Train ``policy`` in place: each iteration samples G completions for B training prompts,
    keeps the ones the verifier marks right, and takes one SFT pass over them (the question is
    context, the kept completion the target). Returns the log and the held-out evaluations."""
    if cfg.prompts > len(train):        # cfg checked its own fields at construction
        raise ValueError(f"train must hold at least EIConfig.prompts = {cfg.prompts} problems, "
                         f"got {len(train)}")
    if not test:
        raise ValueError("test must hold at least one held-out problem, got none")
    rng, gen = random.Random(cfg.seed), seeded_generator(cfg.seed)
    decay = [p for p in policy.parameters() if p.dim() >= 2]
    rest = [p for p in policy.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": rest, "weight_decay": 0.0}], lr=cfg.lr, betas=cfg.betas)
    batching = SFTConfig(batch_size=cfg.batch_size)
    log, evals = {"iteration": [], "reward_mean": [], "kept": [], "loss_mean": []}, {}
    if cfg.evaluation.at_start:
        policy.eval()
        _evaluate_into(evals, 0, policy, tok, test, cfg)
    for it in range(1, cfg.iterations + 1):
        for group in opt.param_groups:
            group["lr"] = warmed_up_lr(cfg.lr, it, cfg.warmup)
        batch = rng.sample(train, cfg.prompts)
        policy.eval()
        texts = completions(policy, tok, batch, n=cfg.G, temperature=cfg.temperature, generator=gen,
                            max_new_tokens=cfg.max_new_tokens)
        r = rewards(batch, texts)
        kept = [{"question": p["question"], "answer": t} for p, row, right in zip(batch, texts, r)
                for t, ok in zip(row, right)
                if ok and (cfg.keep == "verifier" or strict_reward(t, p["answer"]))]
        losses = []
        if kept:
            policy.train()
            batches = length_batches([encode_problem(tok, k) for k in kept], batching, rng)
            for _ in range(math.ceil(len(kept) / cfg.batch_size)):
                loss = sft_loss(policy, *next(batches))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip)
                opt.step()
                losses.append(loss.item())
        for key, value in (("iteration", it), ("reward_mean", float(r.mean())), ("kept", len(kept)),
                           ("loss_mean", float(np.mean(losses)) if losses else float("nan"))):
            log[key].append(value)
        if it % cfg.evaluation.every == 0 or it == cfg.iterations:
            policy.eval()
            _evaluate_into(evals, it, policy, tok, test, cfg)
    policy.eval()
    return {"config": asdict(cfg), "log": log, "evals": evals}


__all__ = ["RunConfig", "train_lm_grpo", "grpo_iteration", "lm_adam", "GroupDraws", "EIConfig",
           "expert_iteration", "continued_sft"]
