"""Tests that catch a mis-wired trainer (issue: the library's second pass). For each trainer, one
full iteration is recomputed by a plain reference (autograd, the loss written out as the book's
equations say) from the same random draws, and the updated weights must agree. A no-op update,
or pi_old and pi_ref swapped, gives other weights, and each test shows that too: the same
comparison, made against the broken trainer, fails.
"""
import copy
from dataclasses import replace

import numpy as np
import pytest
import torch

from grpo import lander
from grpo.toy import algos, lava
from grpo.lander import trainers as lander_trainers
from grpo.lm.eval import EvalConfig
from grpo.objectives import grpo_advantages


# ---------------------------------------------------------------------------------------------
# The toy (chapter 4): one GRPO update of W
# ---------------------------------------------------------------------------------------------
def toy_reference(seed, c):
    """algos.train_grpo's first update, by autograd of the clipped surrogate over the group."""
    rng = np.random.default_rng(seed)
    g = lava.play_steps(lava.make_floor(rng), np.zeros((lava.N_SENSORS, 2)), c.G, rng)
    adv = torch.tensor(grpo_advantages(g.scores)[g.run])
    d = torch.tensor(algos.step_divisors(g.run, c.G, c.averaging), dtype=torch.float64)
    S, a = torch.tensor(g.S), torch.tensor(g.moves)
    W = torch.zeros(lava.N_SENSORS, 2, dtype=torch.float64)
    logp_old = torch.log_softmax(S @ W, -1)[torch.arange(len(a)), a]
    for _ in range(c.passes):
        W = W.clone().requires_grad_()
        rho = torch.exp(torch.log_softmax(S @ W, -1)[torch.arange(len(a)), a] - logp_old)
        surrogate = torch.minimum(rho * adv, torch.clamp(rho, 1 - c.eps, 1 + c.eps) * adv)
        (grad,) = torch.autograd.grad((surrogate / d).sum(), W)
        W = (W + c.lr * grad).detach()
    return W.numpy()


def test_one_toy_grpo_update_is_the_autograd_reference(monkeypatch):
    c = replace(algos.ToyGRPOConfig(), updates=1, eval_every=1)
    want = toy_reference(3, c)
    assert np.abs(algos.train_grpo(3, c).W - want).max() < 1e-12
    assert np.abs(want).max() > 1e-3                                   # the update moved W
    monkeypatch.setattr(algos, "clipped_update", lambda W, *a, **k: W)   # a no-op update
    assert np.abs(algos.train_grpo(3, c).W - want).max() > 1e-3


# ---------------------------------------------------------------------------------------------
# The lander (chapter 6): one GRPO iteration and one PPO iteration of the NumPy path
# ---------------------------------------------------------------------------------------------
def _adam(params, cfg):
    return torch.optim.Adam(params, lr=cfg.lr, eps=cfg.adam_eps)


def lander_grpo_reference(spec, iterations=2):
    """lander.train_lander_grpo's first iterations with torch modules and autograd: the same episodes
    (the same generator, drawn in the same order), outcome advantages, 1/L weights, the clipped
    surrogate minus beta * k3 to the reference (refreshed every ref_every iterations),
    clip_grad_norm_, Adam. Returns the weights and the env steps after each iteration. From the
    second iteration on pi_ref (the start) and pi_old (the current policy) differ."""
    cfg = spec.resolved_config()
    rng = np.random.default_rng(spec.seed)
    actor = lander.make_actor(spec.seed)
    envs = [lander.make_env() for _ in range(cfg.group_size * cfg.prompts)]
    opt = _adam(actor.parameters(), cfg)
    steps = []
    for it in range(iterations):
        if it % cfg.ref_every == 0:
            ref = copy.deepcopy(actor)
        prompts = rng.integers(*lander.TRAIN_SEEDS, size=cfg.prompts)
        ep = lander.play_episodes(envs, np.repeat(prompts, cfg.group_size), actor, rng)
        steps.append(int(ep.lengths.sum()) + (steps[-1] if steps else 0))
        obs = torch.tensor(np.concatenate(ep.obs), dtype=torch.float64)
        act = torch.tensor(np.concatenate(ep.actions))
        adv = torch.tensor(np.repeat(lander.outcome_advantages(ep.returns, cfg.group_size), ep.lengths))
        w = torch.tensor(lander.step_weights(ep.lengths))
        rows = torch.arange(len(act))
        with torch.no_grad():
            logp_old = torch.log_softmax(actor(obs), -1)[rows, act]
            logp_ref = torch.log_softmax(ref(obs), -1)[rows, act]
        for _ in range(cfg.epochs):
            for mb in np.split(rng.permutation(len(act)), range(cfg.minibatch, len(act), cfg.minibatch)):
                mb = torch.tensor(mb)
                logp = torch.log_softmax(actor(obs[mb]), -1)[torch.arange(len(mb)), act[mb]]
                rho = torch.exp(logp - logp_old[mb])
                clipped = torch.clamp(rho, 1 - cfg.clip, 1 + cfg.clip)
                surrogate = torch.minimum(rho * adv[mb], clipped * adv[mb])
                k3 = torch.exp(logp_ref[mb] - logp) - (logp_ref[mb] - logp) - 1
                loss = -(w[mb] * (surrogate - cfg.beta * k3)).mean()
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(actor.parameters(), cfg.max_grad_norm)
                opt.step()
    return {k: v.detach().clone() for k, v in actor.state_dict().items()}, steps


def _close(a, b, tol=1e-9):
    return all(torch.allclose(a[k], b[k], rtol=0, atol=tol) for k in a)


GRPO_SPEC = lander.RunSpec("grpo", 1, 1, eval_every=10**9, val_episodes=1, test_episodes=1,
                           config=lander.LanderGRPOConfig(prompts=2, group_size=4, epochs=2))


@pytest.fixture(scope="module")
def grpo_two_iterations():
    """The reference's weights after two iterations, and the spec that runs exactly two."""
    want, steps = lander_grpo_reference(GRPO_SPEC, 2)
    return want, replace(GRPO_SPEC, total_steps=steps[0] + 1)


def test_two_lander_grpo_iterations_are_the_autograd_reference(grpo_two_iterations, monkeypatch):
    want, spec = grpo_two_iterations
    got = lander.train(spec)
    assert got.iterations == 2 and _close(got.final_state, want)
    start = lander.make_actor(spec.seed).state_dict()
    assert not _close(start, want, 1e-6)                              # the iterations moved the weights
    real = lander_trainers.grpo_loss_grad                             # pi_old and pi_ref swapped:

    def swapped(logits, actions, logp_old, logp_ref, *rest):
        return real(logits, actions, logp_ref, logp_old, *rest)
    monkeypatch.setattr(lander_trainers, "grpo_loss_grad", swapped)
    assert not _close(lander.train(spec).final_state, want, 1e-6)


def test_a_lander_grpo_trainer_that_never_steps_fails_the_reference(grpo_two_iterations, monkeypatch):
    want, spec = grpo_two_iterations
    monkeypatch.setattr(lander_trainers.Adam, "step", lambda self: 0.0)
    assert not _close(lander.train(spec).final_state, want, 1e-6)


PPO_SPEC = lander.RunSpec("ppo", 2, 1, eval_every=10**9, val_episodes=1, test_episodes=1,
                          config=lander.ActorCriticConfig(n_envs=2, n_steps=96, minibatch=32, epochs=2))


def lander_ppo_reference(spec):
    """train_actor_critic's first iteration with torch modules and autograd: the same rollout (the
    same collector, seeded alike), GAE with the time-limit bootstrap, minibatch-normalised
    advantages, the clipped surrogate, the entropy bonus and the value loss, one joint
    clip_grad_norm_, Adam on both networks."""
    cfg = spec.resolved_config()
    rng = np.random.default_rng(spec.seed)
    actor, critic = lander.make_actor(spec.seed), lander.make_critic(spec.seed)
    s = lander.StepCollector(cfg.n_envs, rng).collect(actor, cfg.n_steps)
    T, N = s.actions.shape
    with torch.no_grad():
        flat_obs = torch.tensor(s.obs.reshape(-1, 8), dtype=torch.float64)
        values = critic(flat_obs)[:, 0].numpy().reshape(T, N)
        last_v = critic(torch.tensor(s.next_obs, dtype=torch.float64))[:, 0].numpy()
        for t, i, o in s.truncated:
            s.rewards[t, i] += cfg.gamma * float(critic(torch.tensor(o[None], dtype=torch.float64))[0, 0])
    adv, ret = lander.gae(s.rewards, values, s.dones, last_v, cfg.gamma, cfg.lam)
    obs = torch.tensor(s.obs.reshape(-1, 8), dtype=torch.float64)
    act = torch.tensor(s.actions.reshape(-1))
    adv, ret = torch.tensor(adv.reshape(-1)), torch.tensor(ret.reshape(-1))
    with torch.no_grad():
        logp_old = torch.log_softmax(actor(obs), -1)[torch.arange(T * N), act]
    params = [*actor.parameters(), *critic.parameters()]
    opt = _adam(params, cfg)
    for _ in range(cfg.epochs):
        for mb in np.split(rng.permutation(T * N), range(cfg.minibatch, T * N, cfg.minibatch)):
            mb = torch.tensor(mb)
            a = (adv[mb] - adv[mb].mean()) / (adv[mb].std() + 1e-8)
            logp_all = torch.log_softmax(actor(obs[mb]), -1)
            logp = logp_all[torch.arange(len(mb)), act[mb]]
            rho = torch.exp(logp - logp_old[mb])
            surrogate = torch.minimum(rho * a, torch.clamp(rho, 1 - cfg.clip, 1 + cfg.clip) * a)
            entropy = -(logp_all.exp() * logp_all).sum(1)
            v = critic(obs[mb])[:, 0]
            value_loss = ((v - ret[mb]) ** 2).mean()
            loss = -surrogate.mean() - cfg.ent_coef * entropy.mean() + cfg.vf_coef * value_loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            opt.step()
    return {k: v.detach().clone() for k, v in actor.state_dict().items()}


def test_one_lander_ppo_iteration_is_the_autograd_reference(monkeypatch):
    want = lander_ppo_reference(PPO_SPEC)
    got = lander.train(PPO_SPEC)
    assert got.iterations == 1 and _close(got.final_state, want)
    monkeypatch.setattr(lander_trainers.Adam, "step", lambda self: 0.0)     # a no-op update
    assert not _close(lander.train(PPO_SPEC).final_state, want, 1e-6)


# ---------------------------------------------------------------------------------------------
# The small LM (chapter 8): one GRPO iteration of lm.rl.train_lm_grpo
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lm_setup(tiny_lm):                 # tests/conftest.py: a 1-layer GPT after 40 SFT steps
    return tiny_lm


def lm_reference(model, tok, train, cfg):
    """train_lm_grpo's iterations written out: the same draws (prompts, then the sampler), log-probs of
    the full joined sequences (token_logprobs, not the grouped forward the loop uses), the loss term
    by term as DeepSeekMath's eq. 3 (1/|o_i|, z-scored advantages, the clip, beta * k3 to the
    start), clip_grad_norm_ and one Adam step at the warm-up's lr per iteration. From the second
    iteration on pi_old (the current policy) and pi_ref (the start) differ."""
    import random

    from grpo.lm import rl
    from grpo.lm.model import join, token_logprobs
    policy, ref = copy.deepcopy(model), copy.deepcopy(model)
    rng, gen, coins = random.Random(cfg.seed), torch.Generator().manual_seed(cfg.seed), random.Random(1)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr, betas=rl.ADAM_BETAS)
    for it in range(1, cfg.iterations + 1):
        opt.param_groups[0]["lr"] = cfg.lr * min(1.0, it / cfg.warmup)
        policy.eval()
        groups = rl.sample_groups(policy, tok, rng.sample(train, cfg.prompts), cfg, gen, coins)
        ids, cmask, old = join([g.prompt for g in groups], cfg.G, torch.cat([g.tokens for g in groups]),
                               torch.cat([g.mask for g in groups]),
                               logprobs=torch.cat([g.logp_old for g in groups]))
        r = torch.stack([g.rewards for g in groups])
        adv = (r - r.mean(1, keepdim=True)) / (r.std(1, unbiased=False, keepdim=True) + 1e-8)
        adv = torch.where((r == r[:, :1]).all(1, keepdim=True), 0.0, adv).reshape(-1, 1)
        with torch.no_grad():
            logp_ref = token_logprobs(ref, ids, cmask, cfg.temperature)
        policy.train()
        logp = token_logprobs(policy, ids, cmask, cfg.temperature)
        rho = torch.exp(logp - old)
        surrogate = torch.minimum(rho * adv, torch.clamp(rho, 1 - cfg.eps_low, 1 + cfg.eps_low) * adv)
        k3 = torch.exp(logp_ref - logp) - (logp_ref - logp) - 1
        m = cmask.double()
        loss = -(((surrogate - cfg.beta * k3) * m).sum(1) / m.sum(1)).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip)
        opt.step()
    return {k: v.detach().clone() for k, v in policy.state_dict().items()}


def test_two_lm_grpo_iterations_are_the_autograd_reference(lm_setup, monkeypatch):
    from grpo.lm import rl
    train, test, tok, model = lm_setup
    cfg = rl.RunConfig(iterations=2, prompts=3, G=4, max_new_tokens=12, lr=1e-2, warmup=5, beta=0.04,
                       evaluation=EvalConfig(every=10, problems=1, samples=1, at_start=False),
                       reward="short")
    want = lm_reference(model, tok, train, cfg)
    got = rl.train_lm_grpo(copy.deepcopy(model), tok, train, test, cfg)["state"]
    assert _close(got, want, 1e-10)
    assert not _close(model.state_dict(), want, 1e-6)                 # the steps moved the weights
    real = rl.grpo_update                                             # pi_old and pi_ref swapped:

    def swapped(logprobs, optimizer, mask, rewards, logp_old=None, logp_ref=None, **kw):
        return real(logprobs, optimizer, mask, rewards, logp_old=logp_ref, logp_ref=logp_old, **kw)
    monkeypatch.setattr(rl, "grpo_update", swapped)
    assert not _close(rl.train_lm_grpo(copy.deepcopy(model), tok, train, test, cfg)["state"], want, 1e-6)
    monkeypatch.setattr(rl, "grpo_update", lambda *a, **k: {"loss": 0.0, "reward_mean": 0.0,
                                                            "degenerate_fraction": 0.0, "clip_fraction": 0.0,
                                                            "completion_length_mean": 0.0,
                                                            "entropy_mean": 0.0})   # a no-op update
    assert not _close(rl.train_lm_grpo(copy.deepcopy(model), tok, train, test, cfg)["state"], want, 1e-6)
