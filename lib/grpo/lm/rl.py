"""GRPO on chapter 7's small GPT: the training loop of chapter 8, its evaluation and pass@k.

``train_grpo(policy, tok, train, test, cfg)`` is one flat loop, top to bottom:

    sample G completions per prompt (chapter 7's sampler, which also returns pi_old's log-probs)
    -> score them with the verifier -> read the frozen reference's log-probs (when beta > 0)
    -> ``grpo.lm.grpo.grpo_update`` (K steps of ``grpo_loss``) -> log -> evaluate now and then.

Every choice is a field of ``RunConfig``, so an ablation is a one-field change. ``evaluate`` gives
greedy and sampled accuracy on held-out problems; ``pass_at_k`` is the unbiased estimator of
Chen et al. (2021). ``run_all`` trains several configs in parallel worker processes.
"""
from __future__ import annotations

import copy
import math
import multiprocessing
import random
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np
import torch

from .data import reward
from .grpo import ADVANTAGES, AGGREGATIONS, grpo_update, logprobs_at_temperature
from .model import sample
from .train import SFTConfig, completions, encode_problem, rewards, sft


@dataclass(frozen=True)
class RunConfig:
    iterations: int = 60
    prompts: int = 32                  # B: prompts per iteration
    G: int = 8                         # completions per prompt
    lr: float = 1e-4
    warmup: int = 5                    # iterations of linear lr warm-up
    temperature: float = 0.7           # sampling, and every log-prob (pi_theta, pi_old, pi_ref)
    max_new_tokens: int = 96
    beta: float = 0.04                 # k3 KL to the frozen SFT reference, in the loss
    reuse: int = 1                     # K: optimizer steps per sampled batch
    advantage: str = "zscore"          # "zscore" | "center" (no std) | "raw" (no baseline)
    clip: bool = True
    eps_low: float = 0.2
    eps_high: float | None = None      # None: symmetric clip; 0.28: DAPO's clip-higher
    aggregation: str = "sequence"      # "sequence" (1/|o_i|) | "token" (DAPO) | "constant" (Dr. GRPO)
    dynamic_sampling: bool = False     # DAPO: refill the batch with groups that are not all-equal
    grad_clip: float = 1.0
    reward: str = "verifier"           # "verifier" | "short" (the sanity check: shorter scores more)
    eval_every: int = 20
    eval_problems: int = 500
    eval_samples: int = 4              # sampled completions per held-out problem (pass@1 at T)
    eval_temperature: float = 0.7      # the held-out sampled accuracy's T (chapter 7's 0.7)
    eval_at_start: bool = True         # False: skip iteration 0's evaluation (every run shares it)
    final_samples: int = 0            # > 0: at the end, this many samples per held-out problem (pass@k)
    train_pool: int = 0                # > 0: practise on the first N training problems only, evaluate them
    answer_format: str = "worked"      # run_all's start: "worked" (chapter 7) | "answer_only" (its twin)
    seed: int = 0


def _check_config(cfg: RunConfig) -> None:
    if cfg.G < 2:
        raise ValueError(f"a group needs G >= 2 completions, got G = {cfg.G}")
    if not (cfg.lr > 0 and math.isfinite(cfg.lr)):
        raise ValueError(f"lr must be a finite number > 0, got {cfg.lr}")
    if cfg.iterations < 0 or cfg.prompts < 1 or cfg.reuse < 1 or cfg.eval_every < 1:
        raise ValueError("prompts, reuse and eval_every must be >= 1, and iterations >= 0")
    if cfg.advantage not in ADVANTAGES or cfg.aggregation not in AGGREGATIONS:
        raise ValueError(f"advantage must be in {ADVANTAGES}, aggregation in {AGGREGATIONS}")
    if cfg.reward not in ("verifier", "short"):
        raise ValueError(f"reward must be 'verifier' or 'short', got {cfg.reward!r}")
    if cfg.answer_format not in ("worked", "answer_only"):
        raise ValueError(f"answer_format must be 'worked' or 'answer_only', got {cfg.answer_format!r}")
    if cfg.train_pool < 0 or 0 < cfg.train_pool < cfg.prompts:
        raise ValueError(f"train_pool must be 0 (all) or >= prompts = {cfg.prompts}, got {cfg.train_pool}")
    for name, low in (("warmup", 0), ("eval_problems", 1), ("eval_samples", 1), ("final_samples", 0),
                      ("max_new_tokens", 1)):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    from .model import check_temperature
    for name in ("temperature", "eval_temperature"):
        check_temperature(getattr(cfg, name), name)
    if not 0 < cfg.eps_low < 1:
        raise ValueError(f"eps_low must be in (0, 1), got {cfg.eps_low!r}")
    if cfg.eps_high is not None and not (0 < cfg.eps_high and math.isfinite(cfg.eps_high)):
        raise ValueError(f"eps_high must be None or a finite number > 0, got {cfg.eps_high!r}")
    if not (math.isfinite(cfg.beta) and cfg.beta >= 0):
        raise ValueError(f"beta must be a finite number >= 0, got {cfg.beta!r}")
    if cfg.grad_clip is not None and not (math.isfinite(cfg.grad_clip) and cfg.grad_clip > 0):
        raise ValueError(f"grad_clip must be None or a finite number > 0, got {cfg.grad_clip!r}")


def score(problem: dict, text: str, kind: str = "verifier", max_new_tokens: int = 96,
          length: int = 0) -> float:
    """The reward of one completion: the verifier's 0/1, or (the sanity check) 1 - length / budget."""
    if kind == "short":
        return 1.0 - length / max_new_tokens
    return reward(text, problem["answer"])


@torch.no_grad()
def evaluate(model, tok, problems, samples: int = 4, temperature: float = 0.7, seed: int = 0,
             max_new_tokens: int = 96) -> dict:
    """Held-out accuracy: greedy, and sampled at ``temperature`` (mean over ``samples`` per problem)."""
    model.eval()
    greedy = rewards(problems, completions(model, tok, problems, max_new_tokens=max_new_tokens))[:, 0]
    gen = torch.Generator().manual_seed(seed)
    sampled = rewards(problems, completions(model, tok, problems, n=samples, temperature=temperature,
                                            generator=gen, max_new_tokens=max_new_tokens))
    return {"greedy": float(greedy.mean()), "sampled": float(sampled.mean())}


def pass_at_k(correct, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021) from a (problems, n) 0/1 array, n >= k: the chance that at
    least one of k answers drawn without replacement from a problem's n is right, averaged."""
    correct = np.asarray(correct)
    if correct.ndim != 2 or correct.shape[0] == 0:
        raise ValueError(f"correct must be a (problems, n) array with at least one problem, got shape "
                         f"{correct.shape}")
    if not np.isin(correct, (0, 1)).all():
        raise ValueError(f"correct must hold only 0/1 (or False/True), got values "
                         f"{sorted(set(np.unique(correct).tolist()) - {0, 1})[:5]}")
    n = correct.shape[1]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n = {n}, got k = {k}")
    c = correct.sum(1)
    return float(np.mean([1.0 - math.comb(n - int(ci), k) / math.comb(n, k) for ci in c]))


def train_grpo(policy, tok, train: list[dict], test: list[dict], cfg: RunConfig, progress=None) -> dict:
    """Train ``policy`` in place with GRPO; return its per-iteration log and held-out evaluations."""
    _check_config(cfg)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    ref = copy.deepcopy(policy).eval().requires_grad_(False) if cfg.beta > 0 else None
    optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.lr, betas=(0.9, 0.99))
    loss_options = dict(advantage=cfg.advantage, clip=cfg.clip, eps_low=cfg.eps_low,
                        eps_high=cfg.eps_high, beta=cfg.beta, aggregation=cfg.aggregation,
                        max_tokens=cfg.max_new_tokens)
    log = {k: [] for k in ("iteration", "reward_mean", "degenerate_fraction", "entropy_mean", "kl_mean",
                           "clip_fraction", "completion_length_mean", "sample_s", "ref_s", "update_s")}
    evals = {"iteration": [], "greedy": [], "sampled": []}
    if cfg.train_pool:
        train = train[:cfg.train_pool]
        evals.update(pool_greedy=[], pool_sampled=[])

    def run_eval(it):
        e = evaluate(policy, tok, test[:cfg.eval_problems], cfg.eval_samples, cfg.eval_temperature,
                     seed=1234, max_new_tokens=cfg.max_new_tokens)
        evals["iteration"].append(it)
        evals["greedy"].append(e["greedy"])
        evals["sampled"].append(e["sampled"])
        if cfg.train_pool:                           # the practised problems themselves
            e = evaluate(policy, tok, train, cfg.eval_samples, cfg.eval_temperature, seed=1234,
                         max_new_tokens=cfg.max_new_tokens)
            evals["pool_greedy"].append(e["greedy"])
            evals["pool_sampled"].append(e["sampled"])

    if cfg.eval_at_start:
        run_eval(0)
    for it in range(1, cfg.iterations + 1):
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr * min(1.0, it / cfg.warmup) if cfg.warmup else cfg.lr

        # 1. Sample G completions per prompt; the sampler returns pi_old's log-probs too.
        t0 = time.process_time()
        policy.eval()
        prompts, tokens, logp_old, mask, r, degenerate = [], [], [], [], [], []
        for draw in range(10 if cfg.dynamic_sampling else 1):
            batch = rng.sample(train, cfg.prompts)
            ids = [encode_problem(tok, p)[0] for p in batch]
            tok_b, lp_b, m_b = sample(policy, ids, cfg.G, cfg.max_new_tokens, cfg.temperature,
                                      generator=gen, eos_id=tok.eos_id)
            texts = [tok.decode(row[m].tolist()) for row, m in zip(tok_b, m_b)]
            lengths = m_b.sum(1).tolist()
            r_b = torch.tensor([score(batch[i // cfg.G], t, cfg.reward, cfg.max_new_tokens, n)
                                for i, (t, n) in enumerate(zip(texts, lengths))]).reshape(-1, cfg.G)
            same = (r_b == r_b[:, :1]).all(1)
            degenerate.append(float(same.double().mean()))
            keep = (~same).nonzero().flatten().tolist() if cfg.dynamic_sampling else list(range(len(batch)))
            last = not cfg.dynamic_sampling or draw == 9
            if last and not prompts and not keep:            # nothing informative: an all-zero batch
                keep = list(range(len(batch)))
            for i in keep[:cfg.prompts - len(prompts)]:
                rows = slice(i * cfg.G, (i + 1) * cfg.G)
                prompts.append(ids[i])
                tokens += list(tok_b[rows])
                logp_old += list(lp_b[rows])
                mask += list(m_b[rows])
                r.append(r_b[i])
            if len(prompts) == cfg.prompts:
                break
        rewards_bg = torch.stack(r).double()
        # right-padded (prompt, completion) rows, and pi_old's log-probs in the same layout
        seqs = [p + t[m].tolist() for p, (t, m) in zip([p for p in prompts for _ in range(cfg.G)],
                                                        zip(tokens, mask))]
        T = max(map(len, seqs))
        ids = torch.zeros(len(seqs), T, dtype=torch.long)
        cmask = torch.zeros(len(seqs), T, dtype=torch.bool)
        old = torch.zeros(len(seqs), T)
        for b, (s, m, lp) in enumerate(zip(seqs, mask, logp_old)):
            n, start = int(m.sum()), len(s) - int(m.sum())
            ids[b, :len(s)] = torch.tensor(s)
            cmask[b, start:len(s)] = True
            old[b, start:len(s)] = lp[:n]
        t1 = time.process_time()

        # 2. The frozen reference's log-probs at the sampling temperature (for the KL term).
        logp_ref = None
        if ref is not None:
            with torch.no_grad():
                logp_ref, _ = logprobs_at_temperature(ref(ids[:, :-1]), ids[:, 1:], cfg.temperature)
                logp_ref = torch.nn.functional.pad(logp_ref, (1, 0)) * cmask
        t2 = time.process_time()

        # 3. K optimizer steps of the GRPO loss on this batch.
        def logprobs(rows):
            lp, ent = logprobs_at_temperature(policy(ids[rows, :-1]), ids[rows, 1:], cfg.temperature)
            pad = torch.nn.functional.pad
            return pad(lp, (1, 0)) * cmask[rows], pad(ent, (1, 0)) * cmask[rows]

        policy.train()
        stats = grpo_update(logprobs, optimizer, cmask.float(), rewards_bg, logp_old=old,
                            logp_ref=logp_ref, reuse=cfg.reuse,
                            max_grad_norm=cfg.grad_clip, **loss_options)
        policy.eval()
        t3 = time.process_time()

        log["iteration"].append(it)
        log["degenerate_fraction"].append(float(np.mean(degenerate)))
        for key in ("reward_mean", "entropy_mean", "clip_fraction", "completion_length_mean"):
            log[key].append(stats[key])
        log["kl_mean"].append(stats.get("kl_mean", float("nan")))
        log["sample_s"].append(t1 - t0)
        log["ref_s"].append(t2 - t1)
        log["update_s"].append(t3 - t2)
        if it % cfg.eval_every == 0 or it == cfg.iterations:
            run_eval(it)
        if progress is not None:
            progress(it, log, evals)
    out = {"config": asdict(cfg), "log": log, "evals": evals,
           "state": {k: v.detach().clone() for k, v in policy.state_dict().items()}}
    if cfg.final_samples:
        held_out = test[:cfg.eval_problems]
        texts = completions(policy, tok, held_out, n=cfg.final_samples, temperature=cfg.eval_temperature,
                            generator=torch.Generator().manual_seed(4321), max_new_tokens=cfg.max_new_tokens)
        out["final_correct"] = rewards(held_out, texts)
    return out


def continued_sft(model, tok, train, test, cfg: SFTConfig, eval_problems: int = 500, eval_samples: int = 4,
                  eval_temperature: float = 0.7) -> dict:
    """The control: more SFT from the same checkpoint, evaluated as ``train_grpo`` evaluates."""
    history = sft(model, tok, train, test, cfg)
    return {"history": history, "evals": evaluate(model, tok, test[:eval_problems], eval_samples,
                                                  eval_temperature, seed=1234)}


def _job(cfg) -> dict:
    from .data import answer_only, make_splits
    from .train import ANSWER_ONLY_CHECKPOINT, SFT_CHECKPOINT, load_sft
    torch.set_num_threads(1)
    short = getattr(cfg, "answer_format", "worked") == "answer_only"
    model, tok = load_sft(checkpoint=ANSWER_ONLY_CHECKPOINT if short else SFT_CHECKPOINT)
    train, test = make_splits(n_train=20_000, n_test=500, seed=0, step_weights=(0.3, 0.35, 0.25, 0.1))
    if short:
        train, test = answer_only(train), answer_only(test)
    if isinstance(cfg, SFTConfig):
        return continued_sft(model, tok, train, test, cfg)
    return train_grpo(model, tok, train, test, cfg)


def run_all(configs, workers: int = 2) -> list[dict]:
    """From chapter 7's SFT checkpoint (or, with ``answer_format="answer_only"``, its answer-only
    twin on answer-only problems), run each config (a ``RunConfig``: ``train_grpo``; an
    ``SFTConfig``: ``continued_sft``) in ``workers`` spawned processes with one torch thread each;
    results in config order, independent of which worker ran what."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if not all(isinstance(c, (RunConfig, SFTConfig)) for c in configs):
        raise ValueError("each config must be a RunConfig or an SFTConfig")
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_job, configs))


__all__ = ["RunConfig", "train_grpo", "evaluate", "pass_at_k", "continued_sft", "run_all", "score"]
