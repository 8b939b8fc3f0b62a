"""GRPO's loss for language models (chapter 8): hand-computed values, autograd, options, bad input."""
import math

import numpy as np
import pytest
import torch

from grpo.lm.grpo import PRESETS, LossOptions, dynamic_sampling, grpo_loss, grpo_update
from loss_args import loss_args
from grpo.lm.model import logprobs_at_temperature
from grpo.objectives import group_advantages

torch.set_num_threads(1)
A = 0.5 / (0.5 + 1e-8)         # the z-score of rewards [1, 0]: +A and -A


def random_batch(B=3, G=4, T=6, seed=0, spread=0.3, dtype=torch.float64):
    """Log-probs of sampled tokens, an old policy and a reference nearby, ragged lengths, 0/1 rewards."""
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B * G, T, generator=g, dtype=dtype) * 3
    logp_old = logp + spread * torch.randn(B * G, T, generator=g, dtype=dtype)
    logp_ref = logp + spread * torch.randn(B * G, T, generator=g, dtype=dtype)
    lengths = torch.randint(1, T + 1, (B * G,), generator=g)
    mask = torch.arange(T)[None, :] < lengths[:, None]
    rewards = torch.randint(0, 2, (B, G), generator=g).to(dtype)
    rewards[0] = 1.0                                         # one degenerate (all-right) group
    rewards[1, :2] = torch.tensor([0.0, 1.0], dtype=dtype)   # and one with contrast
    return logp.requires_grad_(), logp_old, logp_ref, mask, rewards


def reference_loss(logp, logp_old, logp_ref, mask, rewards, advantage="zscore", clip=True,
                   eps_low=0.2, eps_high=None, beta=0.04, kl_ratio=False, aggregation="sequence",
                   max_tokens=None, ratio_level="token"):
    """DeepSeekMath eq. 3 and its variants, token by token in plain Python floats (token ratios:
    GSPO's sequence ratio has its own reference test)."""
    assert ratio_level == "token", ratio_level
    eps_high = eps_low if eps_high is None else eps_high
    B, G = rewards.shape
    N, T = logp.shape
    adv = []
    for r in rewards.tolist():
        mean = sum(r) / G
        std = math.sqrt(sum((x - mean) ** 2 for x in r) / G)
        same = all(x == r[0] for x in r)
        adv += [x if advantage == "raw" else 0.0 if same else
                (x - mean) / (std + 1e-8) if advantage == "zscore" else x - mean for x in r]
    total, n_tokens = 0.0, 0
    for i in range(N):
        seq = 0.0
        for t in range(T):
            if not mask[i, t]:
                continue
            lp, old, ref = (float(x[i, t]) for x in (logp.detach(), logp_old, logp_ref))
            rho = math.exp(lp - old)
            surr = rho * adv[i]
            if clip:
                surr = min(surr, min(max(rho, 1 - eps_low), 1 + eps_high) * adv[i])
            k3 = math.exp(ref - lp) - (ref - lp) - 1
            seq += -(surr - beta * (rho * k3 if kl_ratio else k3))
            n_tokens += 1
        total += seq / int(mask[i].sum()) / N if aggregation == "sequence" else seq
    if aggregation == "token":
        return total / n_tokens
    if aggregation == "constant":
        return total / (N * (max_tokens or T))
    return total


# ---------------------------------------------------------------------------------------------
# The loss, by hand and against autograd

def test_hand_computed_two_completions():
    """rewards [1, 0] -> A = +-A; rho = 0.5/0.4 = 1.25 is clipped to 1.2 for the winner (flat: no
    gradient); the loser is on-policy (rho = 1). loss = -(1.2A - A)/2 = -0.1A, grad = [0, A/2]."""
    logp = torch.tensor([[math.log(0.5)], [math.log(0.25)]], dtype=torch.float64, requires_grad=True)
    logp_old = torch.tensor([[math.log(0.4)], [math.log(0.25)]], dtype=torch.float64)
    mask = torch.ones(2, 1, dtype=torch.bool)
    loss, stats = grpo_loss(logp, logp_old, None, mask, torch.tensor([[1.0, 0.0]], dtype=torch.float64),
                            LossOptions(beta=0.0))
    loss.backward()
    assert loss.item() == pytest.approx(-0.1 * A, abs=1e-15)
    assert logp.grad[:, 0].tolist() == pytest.approx([0.0, A / 2], abs=1e-15)
    assert stats["clip_fraction"] == 0.5 and stats["degenerate_fraction"] == 0.0


def test_hand_computed_kl_and_length_normalisation():
    """Two completions of 2 and 1 tokens, on-policy, beta 0.5, ref = logp - log 2 on every token:
    k3 = 1/2 - log(1/2) - 1 = log 2 - 1/2 per token, so with 1/|o_i|: loss = -(A - A)/2 + 0.5 k3."""
    logp = torch.log(torch.tensor([[0.5, 0.5], [0.25, 0.9]], dtype=torch.float64)).requires_grad_()
    mask = torch.tensor([[1, 1], [1, 0]])
    k3 = math.log(2) - 0.5
    loss, stats = grpo_loss(logp, logp.detach(), logp.detach() - math.log(2), mask,
                            torch.tensor([[1.0, 0.0]], dtype=torch.float64), LossOptions(beta=0.5))
    loss.backward()
    assert loss.item() == pytest.approx(0.5 * k3, abs=1e-15)
    assert stats["kl_mean"] == pytest.approx(k3, abs=1e-15)
    # d/dlogp: -(1/N)(1/|o_i|)[A_i - beta (1 - ref/pi)] with ref/pi = 1/2
    expected = [[-(A - 0.25) / 4, -(A - 0.25) / 4], [-(-A - 0.25) / 2, 0.0]]
    assert logp.grad.tolist()[0] == pytest.approx(expected[0], abs=1e-15)
    assert logp.grad.tolist()[1] == pytest.approx(expected[1], abs=1e-15)


OPTIONS = [dict(), dict(advantage="center"), dict(advantage="raw"), dict(clip=False),
           dict(eps_high=0.28), dict(beta=0.0), dict(beta=0.1), dict(aggregation="token"),
           dict(aggregation="constant", max_tokens=6), dict(aggregation="constant", max_tokens=9),
           dict(kl_ratio=True, beta=0.1), dict(kl_ratio=True, aggregation="token"),
           {**PRESETS["dr_grpo"].loss_options(), "max_tokens": 6}, PRESETS["dapo"].loss_options(),
           PRESETS["grpo"].loss_options()]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_loss_and_gradient_match_the_equation(options):
    """Every option against a token-by-token evaluation of the equation, and autograd against the
    closed-form gradient -w_i [rho A_i (unclipped tokens only) - beta (1 - pi_ref/pi_theta)], the
    KL part being d(rho k3) = rho (k3 + 1 - pi_ref/pi_theta) with kl_ratio."""
    logp, logp_old, logp_ref, mask, rewards = random_batch()
    loss, stats = grpo_loss(logp, logp_old, logp_ref, mask, rewards, **loss_args(options))
    assert loss.item() == pytest.approx(reference_loss(logp, logp_old, logp_ref, mask, rewards, **options),
                                        abs=1e-12)
    loss.backward()
    o = {**dict(advantage="zscore", clip=True, eps_low=0.2, eps_high=None, beta=0.04,
                kl_ratio=False, aggregation="sequence", max_tokens=None), **options}
    eps_high = o["eps_low"] if o["eps_high"] is None else o["eps_high"]
    adv = group_advantages(rewards, o["advantage"]).reshape(-1, 1)
    lp = logp.detach()
    rho = torch.exp(lp - logp_old)
    flat = ((rho > 1 + eps_high) & (adv > 0)) | ((rho < 1 - o["eps_low"]) & (adv < 0))
    d_surrogate = torch.where(flat & o["clip"], 0.0, rho * adv)
    d_k3 = 1 - torch.exp(logp_ref - lp)
    if o["kl_ratio"]:
        k3 = torch.exp(logp_ref - lp) - (logp_ref - lp) - 1
        d_k3 = rho * (k3 + d_k3)
    N, T = lp.shape
    m = mask.double()
    weight = {"sequence": 1 / (N * m.sum(1, keepdim=True)), "token": 1 / m.sum(),
              "constant": 1 / (N * (o["max_tokens"] or T))}[o["aggregation"]]
    expected = -weight * (d_surrogate - o["beta"] * d_k3) * mask
    assert (logp.grad - expected).abs().max().item() < 1e-14, (logp.grad - expected).abs().max()
    assert all(math.isfinite(v) for v in stats.values())


# ---------------------------------------------------------------------------------------------
# Degenerate groups

@pytest.mark.parametrize("advantage", ["zscore", "center"])
def test_degenerate_groups_give_exactly_zero_advantage(advantage):
    rewards = torch.tensor([[1.0] * 8, [0.0] * 8, [0.1] * 8, [1.0, 0, 0, 0, 0, 0, 0, 0]])
    adv = group_advantages(rewards, advantage)
    assert not torch.isnan(adv).any()
    assert (adv[:3] == 0).all()                            # exactly 0, not 1e-9: 0.1*8/8 != 0.1
    assert (adv[3] != 0).all()


def test_zscore_advantages_are_standardised_and_ignore_the_reward_scale():
    """Each informative group's z-scores have mean 0 and (population) std ~1, and an affine change of
    the rewards, a r + b with a > 0, leaves them unchanged (up to the 1e-8 guard)."""
    rewards = torch.tensor([[0.0, 1, 1, 0, 1], [0.3, 0.1, 0.7, 0.7, 0.2]], dtype=torch.float64)
    adv = group_advantages(rewards)
    assert torch.allclose(adv.mean(1), torch.zeros(2, dtype=adv.dtype), atol=1e-12)
    assert torch.allclose(adv.std(1, unbiased=False), torch.ones(2, dtype=adv.dtype), atol=1e-6)
    assert torch.allclose(group_advantages(3.0 * rewards - 7.0), adv, atol=1e-6)
    assert (adv[0, [1, 2, 4]] > 0).all() and (adv[0, [0, 3]] < 0).all()          # right answers up


def test_all_degenerate_batch_gives_zero_loss_and_zero_gradient_without_kl():
    logp, logp_old, logp_ref, mask, _ = random_batch()
    rewards = torch.tensor([[1.0] * 4, [0.0] * 4, [1.0] * 4], dtype=torch.float64)
    loss, stats = grpo_loss(logp, logp_old, logp_ref, mask, rewards, LossOptions(beta=0.0))
    loss.backward()
    assert loss.item() == 0.0 and (logp.grad == 0).all()
    assert stats["degenerate_fraction"] == 1.0 and stats["clip_fraction"] == 0.0


# ---------------------------------------------------------------------------------------------
# Each option changes exactly what it should

def loss_of(batch, **options):
    logp, logp_old, logp_ref, mask, rewards = batch
    return grpo_loss(logp, logp_old, logp_ref, mask, rewards, **loss_args(options))


def test_no_std_divides_nothing_and_no_baseline_is_the_raw_reward():
    rewards = torch.tensor([[0.0, 1, 1, 1], [2.0, 2, 2, 2], [0.0, 0.5, 1.0, 0.5]], dtype=torch.float64)
    centered = rewards - rewards.mean(1, keepdim=True)
    assert torch.allclose(group_advantages(rewards, "center"), centered, atol=0)
    assert torch.equal(group_advantages(rewards, "raw"), rewards)        # all-same group: 2, not 0
    std = rewards.std(1, unbiased=False, keepdim=True)
    z = group_advantages(rewards, "zscore")
    assert torch.allclose(z[[0, 2]] * (std[[0, 2]] + 1e-8), centered[[0, 2]], atol=1e-15)


def test_clip_off_changes_only_clipped_tokens():
    batch = random_batch(spread=0.5)
    loss_clip, stats_clip = loss_of(batch, beta=0.0)
    loss_free, stats_free = loss_of(batch, beta=0.0, clip=False)
    assert stats_clip["clip_fraction"] > 0 and stats_free["clip_fraction"] == 0.0
    assert loss_clip.item() != loss_free.item()
    small = random_batch(spread=1e-3)                      # every ratio inside the band
    assert loss_of(small, beta=0.0)[0].item() == loss_of(small, beta=0.0, clip=False)[0].item()


def test_clip_higher_moves_only_positive_advantage_tokens_in_the_new_band():
    batch = random_batch(spread=0.5)
    logp, logp_old, _, mask, rewards = batch
    rho = torch.exp(logp.detach() - logp_old)
    adv = group_advantages(rewards).reshape(-1, 1)
    newly_free = (rho > 1.2) & (rho <= 1.28) & (adv > 0) & mask
    assert newly_free.any()
    s_sym = loss_of(batch, beta=0.0)[1]["clip_fraction"]
    s_high = loss_of(batch, beta=0.0, eps_high=0.28)[1]["clip_fraction"]
    assert s_sym - s_high == pytest.approx(newly_free.sum().item() / mask.sum().item(), abs=1e-15)


def test_beta_adds_exactly_beta_times_the_aggregated_kl():
    batch = random_batch()
    for aggregation in ("sequence", "token", "constant"):
        budget = {"max_tokens": 6} if aggregation == "constant" else {}
        l0, _ = loss_of(batch, beta=0.0, aggregation=aggregation, **budget)
        kl_only = loss_of(random_batch(), beta=1.0, aggregation=aggregation, **budget)[0] - \
            loss_of(random_batch(), beta=0.0, aggregation=aggregation, **budget)[0]
        l1, _ = loss_of(batch, beta=0.04, aggregation=aggregation, **budget)
        assert (l1 - l0).item() == pytest.approx(0.04 * kl_only.item(), abs=1e-15)


def test_aggregations_agree_when_lengths_agree_and_differ_when_they_do_not():
    logp, logp_old, logp_ref, _, rewards = random_batch(T=5)
    full = torch.ones(logp.shape, dtype=torch.bool)
    seq = grpo_loss(logp, logp_old, logp_ref, full, rewards)[0].item()
    assert grpo_loss(logp, logp_old, logp_ref, full, rewards, LossOptions(aggregation="token"))[0].item() == \
        pytest.approx(seq, abs=1e-15)
    constant = LossOptions(aggregation="constant")
    assert grpo_loss(logp, logp_old, logp_ref, full, rewards, constant,
                     max_tokens=5)[0].item() == pytest.approx(seq, abs=1e-15)
    with pytest.raises(ValueError, match="needs max_tokens"):       # no silent padded-width default
        grpo_loss(logp, logp_old, logp_ref, full, rewards, LossOptions(aggregation="constant"))
    assert grpo_loss(logp, logp_old, logp_ref, full, rewards, constant,
                     max_tokens=10)[0].item() == pytest.approx(seq / 2, abs=1e-15)
    batch = random_batch(T=5)                               # ragged lengths
    assert loss_of(batch)[0].item() != pytest.approx(loss_of(batch, aggregation="token")[0].item())


def test_every_preset_is_a_complete_set_of_loss_options():
    """A preset's loss_options() are exactly the options grpo_loss takes (so they can be splatted
    into a call, a RunConfig or an HFConfig), and each one runs."""
    logp, logp_old, logp_ref, mask, rewards = random_batch()
    for name, preset in PRESETS.items():
        assert isinstance(preset, LossOptions), name
        options = preset.loss_options()
        assert set(options) == {"advantage", "clip", "eps_low", "eps_high", "beta", "kl_ratio",
                                "aggregation", "ratio_level"}, name
        budget = {"max_tokens": logp.shape[1]} if preset.aggregation == "constant" else {}
        loss, _ = grpo_loss(logp, logp_old, logp_ref, mask, rewards, **loss_args({**options, **budget}))
        assert torch.isfinite(loss), name


def test_stats():
    logp, logp_old, logp_ref, mask, rewards = random_batch()
    entropy = torch.rand(logp.shape, dtype=torch.float64)
    _, stats = grpo_loss(logp, logp_old, logp_ref, mask, rewards, entropy=entropy)
    m = mask.double()
    assert stats["reward_mean"] == pytest.approx(rewards.mean().item())
    assert stats["degenerate_fraction"] == pytest.approx(1 / 3)
    assert stats["completion_length_mean"] == pytest.approx(m.sum(1).mean().item())
    assert stats["entropy_mean"] == pytest.approx(((entropy * m).sum() / m.sum()).item())
    k3 = torch.exp(logp_ref - logp.detach()) - (logp_ref - logp.detach()) - 1
    assert stats["kl_mean"] == pytest.approx(((k3 * m).sum() / m.sum()).item())
    assert set(grpo_loss(logp, logp_old, None, mask, rewards, LossOptions(beta=0.0))[1]) == \
        {"reward_mean", "degenerate_fraction", "clip_fraction", "completion_length_mean"}


# ---------------------------------------------------------------------------------------------
# Log-probs at the sampling temperature

def test_logprobs_at_temperature_are_the_sampling_distribution():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 7, generator=g, dtype=torch.float64)
    tokens = torch.randint(0, 7, (2, 3), generator=g)
    for T in (0.7, 1.0, 1.3):
        logp, entropy = logprobs_at_temperature(logits, tokens, T)
        p = torch.softmax(logits / T, -1)
        assert torch.allclose(logp.exp(), p.gather(-1, tokens[..., None])[..., 0], atol=1e-6)
        assert torch.allclose(entropy, -(p * p.log()).sum(-1), atol=1e-5)
    for bad in (0, -1.0, float("nan"), True, "0.7"):
        with pytest.raises(ValueError, match="temperature"):
            logprobs_at_temperature(logits, tokens, bad)
    # a NumPy float is a temperature (it was refused as "not finite"); it gives the float's numbers
    for T in (np.float32(0.5), np.float64(0.7)):
        ours = logprobs_at_temperature(logits, tokens, T)
        assert all(torch.equal(a, b) for a, b in zip(ours, logprobs_at_temperature(logits, tokens, float(T))))



def test_the_entropy_is_logged_without_a_gradient_and_can_be_skipped():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 3, 7, generator=g, dtype=torch.float64, requires_grad=True)
    tokens = torch.randint(0, 7, (2, 3), generator=g)
    logp, entropy = logprobs_at_temperature(logits, tokens, 0.7)
    assert logp.requires_grad and not entropy.requires_grad
    only, none = logprobs_at_temperature(logits, tokens, 0.7, entropy=False)
    assert none is None and torch.equal(only, logp)
    grad = torch.autograd.grad(logp.sum(), logits)[0]               # d log p(tok) / d logits / T
    p = torch.softmax(logits.detach() / 0.7, -1)
    expected = (torch.nn.functional.one_hot(tokens, 7) - p) / 0.7
    assert torch.allclose(grad, expected)


# ---------------------------------------------------------------------------------------------
# K optimizer steps on one sampled batch

def toy_policy(seed=0, B=2, G=4, T=5, V=6):
    """A policy with one free logit vector per position: enough to check the update loop."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.nn.Parameter(torch.randn(T, V, generator=g, dtype=torch.float64))
    tokens = torch.randint(0, V, (B * G, T), generator=g)
    mask = torch.arange(T)[None] < torch.randint(1, T + 1, (B * G, 1), generator=g)
    rewards = torch.tensor([[1.0, 0, 0, 1], [0.0, 1, 1, 1]], dtype=torch.float64)

    def logprobs(rows=slice(None), weights=logits):
        return logprobs_at_temperature(weights.expand(B * G, T, V)[rows], tokens[rows], 0.7)
    return logits, logprobs, mask, rewards


def test_grpo_update_once_is_one_adam_step_on_the_loss_with_pi_old_its_own_start():
    logits, logprobs, mask, rewards = toy_policy()
    twin = torch.nn.Parameter(logits.detach().clone())
    stats = grpo_update(logprobs, torch.optim.Adam([logits], lr=0.1), mask, rewards, beta=0.0)
    optimizer = torch.optim.Adam([twin], lr=0.1)
    logp, _ = logprobs(weights=twin)
    loss, _ = grpo_loss(logp, logp.detach(), None, mask, rewards, LossOptions(beta=0.0))
    loss.backward()
    optimizer.step()
    assert torch.equal(logits, twin) and stats["loss"] == loss.item()
    assert stats["clip_fraction"] == 0.0                   # pass 1: rho = 1 exactly
    assert "entropy_mean" in stats
    logits, logprobs, mask, rewards = toy_policy()          # log-probs alone, no entropy: also fine
    stats = grpo_update(lambda rows: logprobs(rows)[0], torch.optim.Adam([logits], lr=0.1), mask, rewards,
                        beta=0.0)
    assert torch.equal(logits, twin) and "entropy_mean" not in stats


@pytest.mark.parametrize("aggregation", ["sequence", "token", "constant"])
def test_grpo_update_in_chunks_takes_the_same_step(aggregation):
    """Gradient accumulation over chunks of groups: the same gradient, loss and stats as one pass."""
    results = []
    for chunk_groups in (None, 1):
        logits, logprobs, mask, rewards = toy_policy(B=3, G=4)
        logp_ref = logprobs()[0].detach() - 0.1
        stats = grpo_update(logprobs, torch.optim.SGD([logits], lr=1.0), mask, rewards[[0, 1, 1]],
                            logp_ref=logp_ref, reuse=2, chunk_groups=chunk_groups,
                            aggregation=aggregation, beta=0.1,
                            max_tokens=5 if aggregation == "constant" else None)
        results.append((logits.detach(), stats))
    (whole, s_whole), (chunked, s_chunked) = results
    assert (whole - chunked).abs().max() < 1e-14
    assert s_whole.keys() == s_chunked.keys()
    assert all(s_chunked[k] == pytest.approx(s_whole[k], abs=1e-14) for k in s_whole)


def test_grpo_update_reuses_pi_old_so_the_clip_engages_on_later_passes():
    logits, logprobs, mask, rewards = toy_policy()
    logp_old = logprobs()[0].detach()
    stats = grpo_update(logprobs, torch.optim.Adam([logits], lr=0.3), mask, rewards, logp_old=logp_old,
                        reuse=4, beta=0.0)
    assert stats["clip_fraction"] > 0
    assert not torch.equal(logprobs()[0].detach(), logp_old)
    with pytest.raises(ValueError, match="reuse"):
        grpo_update(logprobs, torch.optim.Adam([logits]), mask, rewards, reuse=0)
    with pytest.raises(ValueError, match="chunk_groups"):
        grpo_update(logprobs, torch.optim.Adam([logits]), mask, rewards, chunk_groups=0)


def test_grpo_update_clips_the_gradient_norm_before_the_step():
    logits, logprobs, mask, rewards = toy_policy()
    start = logits.detach().clone()
    free = grpo_update(logprobs, torch.optim.SGD([logits], lr=1.0), mask, rewards, beta=0.0)
    step_free = logits.detach() - start
    logits, logprobs, mask, rewards = toy_policy()
    clipped = grpo_update(logprobs, torch.optim.SGD([logits], lr=1.0), mask, rewards, beta=0.0,
                          max_grad_norm=1e-3)
    step_clipped = logits.detach() - start
    assert "grad_norm" not in free and clipped["grad_norm"] > 1e-3      # the norm before clipping
    assert step_clipped.norm().item() == pytest.approx(1e-3, rel=1e-4)  # SGD: the step is the gradient
    assert torch.allclose(step_clipped / step_clipped.norm(), step_free / step_free.norm(), atol=1e-12)
    with pytest.raises(ValueError, match="max_grad_norm"):
        grpo_update(logprobs, torch.optim.SGD([logits], lr=1.0), mask, rewards, max_grad_norm=0.0)


# ---------------------------------------------------------------------------------------------
# DAPO's dynamic sampling

def test_dynamic_sampling_keeps_drawing_until_no_group_is_degenerate():
    draws = iter([(["a", "b", "c"], torch.tensor([[1.0, 1], [0, 1], [0, 0]])),
                  (["d", "e"], torch.tensor([[0.0, 0], [1, 1]])),
                  (["f", "g", "h"], torch.tensor([[1.0, 0], [0, 1], [1, 0]]))])
    groups, rewards, n = dynamic_sampling(lambda: next(draws), n_groups=3)
    assert groups == ["b", "f", "g"] and n == 3
    assert rewards.tolist() == [[0, 1], [1, 0], [0, 1]]
    assert (group_advantages(rewards) != 0).all()


def test_dynamic_sampling_gives_up_after_max_draws():
    groups, rewards, n = dynamic_sampling(lambda: (["x"], torch.ones(1, 4)), n_groups=2, max_draws=3)
    assert groups == [] and rewards.shape == (0, 4) and n == 3
    with pytest.raises(ValueError, match="n_groups"):
        dynamic_sampling(lambda: None, n_groups=0)
    with pytest.raises(ValueError, match="groups but"):
        dynamic_sampling(lambda: (["x"], torch.ones(2, 4)), n_groups=1)


# ---------------------------------------------------------------------------------------------
# Bad input gets a clear ValueError

def test_bad_input():
    logp, logp_old, logp_ref, mask, rewards = random_batch()
    ok = dict(logp=logp, logp_old=logp_old, logp_ref=logp_ref, mask=mask, rewards=rewards)

    def call(**changes):
        args = {**ok, **{k: v for k, v in changes.items() if k in ok}}
        options = {k: v for k, v in changes.items() if k not in ok}
        return grpo_loss(args["logp"], args["logp_old"], args["logp_ref"], args["mask"],
                         args["rewards"], **loss_args(options))

    with pytest.raises(ValueError, match="G >= 2"):
        call(rewards=torch.ones(12, 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="G >= 2"):
        group_advantages(torch.ones(3, 1))
    with pytest.raises(ValueError, match=r"\(B, G\)"):
        call(rewards=torch.ones(12, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"\(B\*G, T\)"):
        call(rewards=torch.ones(4, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="logp_old must be"):
        call(logp_old=logp_old[:, :-1])
    with pytest.raises(ValueError, match="mask must be"):
        call(mask=mask[:-1])
    with pytest.raises(ValueError, match="logp_ref must be"):
        call(logp_ref=logp_ref.T)
    empty = mask.clone()
    empty[5] = False
    with pytest.raises(ValueError, match=r"completion\(s\) \[5\] are empty"):
        call(mask=empty)
    bad = logp.detach().clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="logp contains NaN"):
        call(logp=bad)
    bad_rewards = rewards.clone()
    bad_rewards[1, 1] = float("nan")
    with pytest.raises(ValueError, match="rewards contain NaN"):
        call(rewards=bad_rewards)
    with pytest.raises(ValueError, match="logp_ref contains NaN"):
        call(logp_ref=torch.full_like(logp_ref, float("nan")))
    with pytest.raises(ValueError, match="inf on padding"):
        call(logp_ref=logp_ref.masked_fill(~mask, -math.inf))
    ruled_out = logp_ref.masked_fill(torch.zeros_like(mask).index_fill(1, torch.tensor([0]), True), -math.inf)
    assert call(logp_ref=ruled_out)[0].item() == math.inf       # a token the reference rules out
    with pytest.raises(ValueError, match="0/1"):
        call(mask=mask * 2)
    with pytest.raises(ValueError, match="beta"):
        call(beta=-0.1)
    with pytest.raises(ValueError, match="needs logp_ref"):
        call(logp_ref=None)
    with pytest.raises(ValueError, match="aggregation"):
        call(aggregation="mean")
    with pytest.raises(ValueError, match="advantage"):
        call(advantage="none")
    with pytest.raises(ValueError, match="max_tokens"):
        call(aggregation="constant", max_tokens=2)
    with pytest.raises(ValueError, match="eps_low"):
        call(eps_low=1.5)
    with pytest.raises(ValueError, match="floating-point"):
        call(rewards=torch.ones(3, 4, dtype=torch.long))
    assert np.isfinite(call()[0].item())


def test_rloo_is_each_reward_minus_the_mean_of_the_others():
    r = torch.tensor([[0.0, 1, 1, 1], [2.0, 2, 2, 2], [0.0, 0.5, 1.0, 0.5]], dtype=torch.float64)
    adv = group_advantages(r, "rloo")
    others = (r.sum(1, keepdim=True) - r) / (r.shape[1] - 1)
    assert torch.allclose(adv, r - others, atol=1e-15)
    assert (adv[1] == 0).all()                                   # an all-equal group: exactly 0


def test_sequence_level_ratio_gradient_is_gspos_by_hand():
    """GSPO (ratio_level="sequence"): s_i = exp(mean_t log rho_it), one clip per completion. With
    beta = 0 and the sequence mean, loss = -1/N sum_i min(s_i A_i, clip(s_i) A_i), so
    d loss / d logp_it = -A_i s_i / (N |o_i|) on an unclipped completion's tokens, and 0 on a
    clipped one's: autograd must give exactly that."""
    g = torch.Generator().manual_seed(0)
    B, G, T = 3, 4, 6
    logp = -2 * torch.rand(B * G, T, generator=g, dtype=torch.float64)
    logp_old = logp + 0.3 * torch.randn(B * G, 1, generator=g, dtype=torch.float64) \
        + 0.05 * torch.randn(B * G, T, generator=g, dtype=torch.float64)
    mask = torch.arange(T)[None] < torch.randint(1, T + 1, (B * G, 1), generator=g)
    rewards = torch.tensor([[1.0, 0, 0, 1], [0, 0, 1, 1], [1, 0, 1, 1]], dtype=torch.float64)
    x = logp.clone().requires_grad_()
    loss, stats = grpo_loss(x, logp_old, None, mask, rewards, LossOptions(beta=0.0, ratio_level="sequence"))
    loss.backward()
    m = mask.double()
    n = m.sum(1)
    s = torch.exp(((logp - logp_old) * m).sum(1) / n)
    adv = group_advantages(rewards).flatten()
    clipped = ((s > 1.2) & (adv > 0)) | ((s < 0.8) & (adv < 0))
    assert 0 < clipped.sum() < B * G                          # both cases are exercised
    by_hand = torch.where(clipped, 0.0, -adv * s / (B * G * n))[:, None] * m
    torch.testing.assert_close(x.grad, by_hand, rtol=0, atol=1e-15)
    assert stats["clip_fraction"] == pytest.approx(clipped.double().mean().item())
    with pytest.raises(ValueError, match="ratio_level"):
        grpo_loss(logp, logp_old, None, mask, rewards, LossOptions(beta=0.0, ratio_level="completion"))


def test_the_options_are_one_checked_object():
    """grpo_loss takes its options as a LossOptions (or a config extending it), never loose words:
    a dict is refused by name, and a bad option fails when the options are made."""
    logp, logp_old, logp_ref, mask, rewards = random_batch()
    with pytest.raises(ValueError, match="options must be a LossOptions"):
        grpo_loss(logp, logp_old, logp_ref, mask, rewards, {"beta": 0.0})
    with pytest.raises(ValueError, match="LossOptions.aggregation"):
        LossOptions(aggregation="mean")
    from grpo.lm.rl import RunConfig
    by_config = grpo_loss(logp, logp_old, logp_ref, mask, rewards, RunConfig(beta=0.1))[0]
    assert by_config.item() == grpo_loss(logp, logp_old, logp_ref, mask, rewards,
                                         LossOptions(beta=0.1))[0].item()
