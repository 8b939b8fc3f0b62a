"""GRPO for language models: the loss over a batch of groups (chapter 8).

A batch holds B prompts with G sampled completions each, flattened to N = B*G rows of T tokens
(row b*G + g is completion g of prompt b). The caller computes, for every completion token, its
log-probability under the policy being trained (``logp``, differentiable), under the policy that
sampled it (``logp_old``) and under the frozen reference (``logp_ref``), all at the sampling
temperature (``logprobs_at_temperature``). For ``logp`` and ``logp_old`` that is required: the
completions were drawn from softmax(logits / T), so only at T is rho = pi_theta / pi_old the
importance ratio. For ``logp_ref`` it is a choice, the one this library makes: it sets which KL the
k3 term penalises (to the reference at T, rather than at 1). ``grpo_loss`` turns them and the
(B, G) rewards into DeepSeekMath's objective (eq. 3 of Shao et al. 2024), negated to a loss:

    loss = -1/N sum_i 1/|o_i| sum_t [ min(rho_it A_i, clip(rho_it, 1-eps_low, 1+eps_high) A_i)
                                      - beta * k3_it ],
    rho_it = pi_theta / pi_old,  A_i = (r_i - mean r) / std r within the group,
    k3_it = pi_ref/pi_theta - log(pi_ref/pi_theta) - 1.

It reuses the book's one home for each idea: the group advantages are
``grpo.objectives.group_advantages`` (chapter 4's z-score, batched: all-equal groups give exactly
0), the clip is ``grpo.surrogate.clipped_surrogate`` (chapter 3) and the KL is ``grpo.kl.kl_k3``
(chapter 5). The variants are the fields of ``LossOptions``, its one options argument:

- ``advantage``: "zscore" (DeepSeekMath), "center" (r - mean r, no std: Dr. GRPO), "rloo" (the
  leave-one-out baseline), "raw" (r: no baseline at all), "trl" (TRL's z-score: the unbiased std
  plus 1e-4);
- ``clip``, ``eps_low``, ``eps_high`` (clip-higher: DAPO's eps_high = 0.28), ``beta``;
- ``kl_ratio``: weight k3 by rho_it, so that its gradient is the unbiased gradient of
  KL(pi_theta || pi_ref) (chapter 5: plain k3's is that of KL(pi_ref || pi_theta)); TRL's
  ``use_bias_correction_kl`` (its default: chapter 12 reads it from the installed package);
- ``ratio_level``: "token" (DeepSeekMath) or "sequence" (GSPO's one ratio per completion);
- ``aggregation``: "sequence" (1/|o_i| per completion, then the mean: DeepSeekMath eq. 3), "token"
  (one mean over every token of the batch: DAPO's token-level loss), "constant" (the token sum
  over N * max_tokens: Dr. GRPO's constant normaliser).

``PRESETS`` names the three published recipes; ``grpo_update`` takes K optimizer steps on one
sampled batch; ``dynamic_sampling`` is DAPO's batch filler.
The three aggregations match TRL's ``loss_type`` "grpo", "dapo" and "dr_grpo" to float
precision (tests/test_lm_trl.py).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from grpo.objectives import GROUP_ADVANTAGES as ADVANTAGES
from grpo.objectives import group_advantages
from grpo import checks
from grpo.kl import kl_k3
from grpo.surrogate import clipped_surrogate


AGGREGATIONS = ("sequence", "token", "constant")
RATIO_LEVELS = ("token", "sequence")

@dataclass(frozen=True)
class LossOptions:
    """Every one of ``grpo_loss``'s options, in one frozen place: ``PRESETS`` are instances, and
    ``RunConfig`` (our GPT) and ``HFConfig`` (Hugging Face models) extend it, so
    ``grpo_loss(..., cfg)`` reads a config's loss options. ``loss_options()`` gives exactly these
    fields as a dict (``grpo_update(..., **cfg.loss_options())``, a table of presets)."""
    # "zscore" | "center" (no std) | "rloo" (leave-one-out) | "raw"
    advantage: str = "zscore"
    clip: bool = True
    eps_low: float = 0.2
    eps_high: float | None = None      # None: symmetric clip; 0.28: DAPO's clip-higher
    beta: float = 0.04                 # k3 KL to the frozen reference, in the loss
    kl_ratio: bool = False             # weight k3 by the ratio (TRL's use_bias_correction_kl)
    # "sequence" (1/|o_i|) | "token" (DAPO) | "constant" (Dr. GRPO)
    aggregation: str = "sequence"
    # "token" (one importance ratio per token) | "sequence" (GSPO: one per completion)
    ratio_level: str = "token"

    def __post_init__(self):
        name = type(self).__name__
        checks.choice(f"{name}.advantage", self.advantage, ADVANTAGES)
        checks.boolean(f"{name}.clip", self.clip)
        checks.number(f"{name}.eps_low", self.eps_low, minimum=0, maximum=1, low_open=True,
                      high_open=True)
        checks.optional(checks.positive, f"{name}.eps_high", self.eps_high)
        checks.non_negative(f"{name}.beta", self.beta)
        checks.boolean(f"{name}.kl_ratio", self.kl_ratio)
        checks.choice(f"{name}.aggregation", self.aggregation, AGGREGATIONS)
        checks.choice(f"{name}.ratio_level", self.ratio_level, RATIO_LEVELS)

    def loss_options(self) -> dict:
        """These fields as a dict: ``grpo_update(..., **cfg.loss_options())``."""
        return {f.name: getattr(self, f.name) for f in fields(LossOptions)}


PRESETS = {
    # DeepSeekMath (Shao et al. 2024), eq. 3 and sec. 4.2: z-scored advantages, 1/|o_i|, KL 0.04.
    "grpo": LossOptions(advantage="zscore", clip=True, eps_low=0.2, eps_high=None, beta=0.04,
                        aggregation="sequence"),
    # Dr. GRPO (Liu et al. 2025): no std division, no 1/|o_i| (a constant normaliser, the
    # generation budget, in their code); their runs use beta = 0.
    "dr_grpo": LossOptions(advantage="center", clip=True, eps_low=0.2, eps_high=None, beta=0.0,
                           aggregation="constant"),
    # DAPO (Yu et al. 2025): no KL term (sec. 2.3), clip-higher with eps_low 0.2 and eps_high 0.28
    # (sec. 3.1 and the experimental settings), token-level loss 1/sum|o_i| (sec. 3.3); dynamic
    # sampling (sec. 3.2) is `dynamic_sampling` below.
    "dapo": LossOptions(advantage="zscore", clip=True, eps_low=0.2, eps_high=0.28, beta=0.0,
                        aggregation="token"),
}




def grpo_loss(logp, logp_old, logp_ref, mask, rewards, options: LossOptions = LossOptions(), *,
              max_tokens: int | None = None, entropy=None):
    """GRPO's loss on B groups of G completions, and what to log.

    logp, logp_old, logp_ref: (B*G, T) token log-probs at the sampling temperature (logp_ref may be
    None when beta = 0); mask: (B*G, T), 1 on completion tokens; rewards: (B, G); ``options``: a
    ``LossOptions`` (or a config that extends it, such as ``RunConfig``), DeepSeekMath's by default;
    entropy: optional (B*G, T) per-token entropy, only logged. ``max_tokens``: the constant of
    aggregation="constant" (the generation budget; required there). ``options.ratio_level``:
    "token" (one ratio per token, as in DeepSeekMath and PPO) or "sequence" (GSPO, Zheng et al.
    2025: one ratio per completion, s_i = exp(mean_t log rho_it), clipped once; TRL's
    ``importance_sampling_level="sequence"``, whose k3 weighting under ``kl_ratio`` is s_i too).
    Returns ``(loss, stats)``.
    """
    if not isinstance(options, LossOptions):
        raise ValueError("options must be a LossOptions (grpo.lm.grpo.LossOptions(beta=..., ...)), "
                         f"got {type(options).__name__}")
    B, G, N = _check_loss_inputs(logp, logp_old, logp_ref, mask, rewards, options.beta,
                                 options.aggregation, max_tokens, entropy)
    m = mask.to(logp.dtype)
    lengths = m.sum(1)                                                     # |o_i|

    # 1. One advantage per completion, shared by all its tokens.
    adv = group_advantages(rewards, options.advantage).to(logp).reshape(N, 1)

    # 2. The ratio to the sampling policy, clipped as in PPO (chapter 3) or not: per token, or
    #    (GSPO) per completion, from the mean of its tokens' log-ratios, shared by all its tokens.
    if options.ratio_level == "token":
        new, old = logp, logp_old
    else:
        log_ratio = ((logp - logp_old) * m).sum(1, keepdim=True) / lengths[:, None]
        new, old = log_ratio.expand_as(logp), torch.zeros_like(logp)
    if options.clip:
        surrogate, clipped = clipped_surrogate(new, old, adv, options.eps_low, options.eps_high)
    else:
        surrogate, clipped = torch.exp(new - old) * adv, torch.zeros_like(mask, dtype=bool)

    # 3. k3 KL to the frozen reference, per token, inside the loss (chapter 5).
    kl = kl_k3(logp, logp_ref) if logp_ref is not None else torch.zeros_like(logp)
    kl_term = kl * torch.exp(new - old) if options.kl_ratio else kl
    per_token = -(surrogate - options.beta * kl_term)

    # 4. Average: per completion then over completions, over all tokens, or by a constant.
    if options.aggregation == "sequence":
        loss = ((per_token * m).sum(1) / lengths).mean()
    elif options.aggregation == "token":
        loss = (per_token * m).sum() / lengths.sum()
    else:
        loss = (per_token * m).sum() / (N * max_tokens)

    with torch.no_grad():
        r = rewards.detach()
        stats = {
            "reward_mean": float(r.mean()),
            "degenerate_fraction": float((r == r[:, :1]).all(1).double().mean()),
            # the share of tokens clipped; at the sequence level, of completions (TRL's metric)
            "clip_fraction": float(clipped[:, 0].to(m).mean()) if options.ratio_level == "sequence"
            else float((clipped.to(m) * m).sum() / lengths.sum()),
            "completion_length_mean": float(lengths.mean()),
        }
        if logp_ref is not None:
            stats["kl_mean"] = float((kl.detach() * m).sum() / lengths.sum())
        if entropy is not None:
            stats["entropy_mean"] = float((entropy.detach() * m).sum() / lengths.sum())
    return loss, stats


def grpo_update(logprobs, optimizer, mask, rewards, logp_old=None, logp_ref=None, reuse: int = 1,
                chunk_groups: int | None = None, max_grad_norm: float | None = None, **options):
    """``reuse`` optimizer steps (K) of ``grpo_loss`` on one sampled batch; the last step's stats.

    ``logprobs(rows)`` recomputes pi_theta's token log-probs (with grad) at the sampling temperature
    for the completions in ``rows``, a slice of the B*G rows; it returns them, or a pair (log-probs,
    entropies) to log the entropy too. ``logp_old`` is
    the sampler's log-probs; None takes pi_theta's on the first pass, before any step: the same
    policy, and no extra forward pass. Every pass keeps that pi_old, so from the second pass on the
    ratio moves away from 1 and the clip can engage. ``chunk_groups`` (default: all) groups go
    through each forward/backward, and the gradients add up to exactly the whole batch's: a large
    vocabulary's logits then fit in memory. ``max_grad_norm`` clips the gradient's global norm
    before each step (TRL's ``max_grad_norm`` does the same). ``options``: ``LossOptions``' fields
    by name (``**cfg.loss_options()``), and ``max_tokens``, both passed on to ``grpo_loss``.
    """
    max_tokens = options.pop("max_tokens", None)
    loss_options = LossOptions(**options)
    B, G = _check_rewards(rewards).shape
    N = B * G
    if not (isinstance(reuse, int) and reuse >= 1):
        raise ValueError(f"reuse must be an int >= 1, got {reuse!r}")
    if chunk_groups is not None and not (isinstance(chunk_groups, int) and chunk_groups >= 1):
        raise ValueError(f"chunk_groups must be an int >= 1 or None, got {chunk_groups!r}")
    if max_grad_norm is not None and not max_grad_norm > 0:
        raise ValueError(f"max_grad_norm must be > 0 or None, got {max_grad_norm!r}")
    params = [p for group in optimizer.param_groups for p in group["params"]]
    step = G * (chunk_groups or B)
    chunks = [slice(i, min(i + step, N)) for i in range(0, N, step)]
    old = [None if logp_old is None else logp_old[c] for c in chunks]
    tokens = mask.sum()
    for _ in range(reuse):
        optimizer.zero_grad(set_to_none=True)
        total = {}
        for j, c in enumerate(chunks):
            out = logprobs(c)
            logp, entropy = out if isinstance(out, tuple) else (out, None)
            old[j] = logp.detach() if old[j] is None else old[j]
            loss, stats = grpo_loss(logp, old[j], None if logp_ref is None else logp_ref[c],
                                    mask[c], rewards[c.start // G:c.stop // G], loss_options,
                                    max_tokens=max_tokens,
                                    entropy=None if entropy is None else entropy.detach())
            # each chunk's share of the whole batch's average: its tokens, or its completions
            by_tokens = float(mask[c].sum() / tokens)
            by_rows = (c.stop - c.start) / N
            share = by_tokens if loss_options.aggregation == "token" else by_rows
            (loss * share).backward()
            per_sequence = loss_options.ratio_level == "sequence"   # GSPO clips completions
            weights = {"loss": share, "clip_fraction": by_rows if per_sequence else by_tokens,
                       "kl_mean": by_tokens, "entropy_mean": by_tokens}  # the rest: per completion
            for key, value in {"loss": loss.item(), **stats}.items():
                total[key] = total.get(key, 0.0) + weights.get(key, by_rows) * value
        if max_grad_norm is not None:
            total["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(params, max_grad_norm))
        optimizer.step()
    return total


def dynamic_sampling(draw, n_groups: int, max_draws: int = 10):
    """DAPO's dynamic sampling: draw until ``n_groups`` groups whose rewards are not all equal.

    ``draw()`` samples a fresh batch and returns ``(groups, rewards)``: a list of b groups
    (anything: token ids, texts) and their (b, G) rewards. All-equal groups (accuracy 0 or 1) have
    zero advantage and give no gradient, so they are dropped, and the batch is filled to exactly
    ``n_groups`` (surplus dropped). Returns ``(groups, rewards, draws)``; after ``max_draws``
    draws it returns what it has, possibly fewer than ``n_groups``.
    """
    if not (isinstance(n_groups, int) and n_groups >= 1):
        raise ValueError(f"n_groups must be an int >= 1, got {n_groups!r}")
    if not (isinstance(max_draws, int) and max_draws >= 1):
        raise ValueError(f"max_draws must be an int >= 1, got {max_draws!r}")
    kept_groups, kept_rewards, draws = [], [], 0
    while len(kept_groups) < n_groups and draws < max_draws:
        groups, rewards = draw()
        rewards = _check_rewards(rewards)
        if len(groups) != rewards.shape[0]:
            raise ValueError(f"draw() returned {len(groups)} groups but {rewards.shape[0]} reward "
                             "rows")
        draws += 1
        informative = ~(rewards == rewards[:, :1]).all(1)
        for i in torch.nonzero(informative).flatten().tolist()[:n_groups - len(kept_groups)]:
            kept_groups.append(groups[i])
            kept_rewards.append(rewards[i])
    G = rewards.shape[1]
    stacked = torch.stack(kept_rewards) if kept_rewards else rewards.new_zeros((0, G))
    return kept_groups, stacked, draws


def _check_rewards(rewards) -> torch.Tensor:
    if not isinstance(rewards, torch.Tensor) or not rewards.is_floating_point():
        raise ValueError("rewards must be a floating-point torch tensor of shape (B, G)")
    checks.reward_groups("rewards", rewards.shape, bool(torch.isfinite(rewards).all()),
                         "completions")
    return rewards


def _check_loss_inputs(logp, logp_old, logp_ref, mask, rewards, beta, aggregation, max_tokens,
                       entropy):
    B, G = _check_rewards(rewards).shape
    N = B * G
    if not isinstance(logp, torch.Tensor) or logp.ndim != 2 or logp.shape[0] != N:
        raise ValueError(f"logp must be a (B*G, T) = ({N}, T) tensor, got "
                         f"{tuple(logp.shape) if isinstance(logp, torch.Tensor) else type(logp)}")
    named = {"logp_old": logp_old, "mask": mask, "logp_ref": logp_ref, "entropy": entropy}
    for name, x in named.items():
        if x is None and name in ("logp_ref", "entropy"):
            continue
        if not isinstance(x, torch.Tensor) or x.shape != logp.shape:
            raise ValueError(f"{name} must be a tensor of logp's shape {tuple(logp.shape)}, got "
                             f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x)}")
    for name, x in (("logp", logp), ("logp_old", logp_old), ("entropy", entropy)):
        if x is not None and not torch.isfinite(x.detach()).all():
            raise ValueError(f"{name} contains NaN or inf (fill padding positions with 0)")
    if logp_ref is not None and (torch.isnan(logp_ref).any()
                                 or (torch.isinf(logp_ref) & (mask == 0)).any()):
        raise ValueError("logp_ref contains NaN, or inf on padding (fill padding positions with 0)")
    if not ((mask == 0) | (mask == 1)).all():
        raise ValueError("mask must hold only 0/1 (or False/True)")
    empty = torch.nonzero(mask.sum(1) == 0).flatten().tolist()
    if empty:
        raise ValueError(f"completion(s) {empty} are empty (no mask tokens): every completion "
                         "has at least one token, its end-of-sequence")
    checks.non_negative("beta", beta)
    if beta > 0 and logp_ref is None:
        raise ValueError("beta > 0 needs logp_ref, the reference log-probs")
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if aggregation == "constant" and max_tokens is None:
        raise ValueError("aggregation='constant' needs max_tokens, the generation budget: dividing "
                         "by the batch's padded width would make the loss depend on the padding")
    if max_tokens is not None and not (isinstance(max_tokens, int)
                                       and max_tokens >= int(mask.sum(1).max())):
        raise ValueError(f"max_tokens must be an int >= the longest completion "
                         f"({int(mask.sum(1).max())}), got {max_tokens!r}")
    return B, G, N
