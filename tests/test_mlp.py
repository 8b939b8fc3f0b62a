"""Chapter 6's NumPy training path against autograd and torch.optim: the gradients of the MLP and of
both losses, and Adam with gradient-norm clipping, must match the torch code they replace."""
import copy

import numpy as np
import pytest
import torch

from grpo.objectives import log_softmax
from grpo import lander
from grpo.mlp import Adam, FlatMLP
from grpo.surrogate import clipped_surrogate


def batch(n=64, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((n, lander.OBS_DIM)).astype(np.float64)
    return obs, rng.integers(0, lander.N_ACTIONS, n), rng


def torch_grads(net):
    return np.concatenate([p.grad.numpy().ravel() for p in net.parameters()])


def test_flat_mlp_shares_weights_with_the_module_and_forward_matches():
    actor = lander.make_actor(3)
    reference = copy.deepcopy(actor)
    pi = FlatMLP(actor)
    obs, _, _ = batch()
    with torch.no_grad():
        want = reference(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(pi.forward(obs), want, rtol=1e-5, atol=1e-6)
    pi.flat += 1.0                      # an in-place update is what the module computes with
    assert torch.allclose(actor[0].bias, reference[0].bias + 1.0)
    np.testing.assert_allclose(lander.policy_logits(actor, obs), pi.forward(obs), rtol=1e-5, atol=1e-5)


def test_flat_mlp_backward_matches_autograd():
    critic = lander.make_critic(1)
    twin = copy.deepcopy(critic)
    vf = FlatMLP(critic)
    obs, _, rng = batch()
    d_out = rng.standard_normal((len(obs), 1)).astype(np.float64)
    vf.forward(obs)
    vf.backward(d_out)
    (twin(torch.from_numpy(obs)) * torch.from_numpy(d_out)).sum().backward()
    np.testing.assert_allclose(vf.grad, torch_grads(twin), rtol=1e-4, atol=1e-6)


def test_flat_mlp_rejects_another_architecture():
    with pytest.raises(ValueError, match="Linear, Tanh"):
        FlatMLP(torch.nn.Sequential(torch.nn.Linear(8, 4)))


def trained_logits(seed=0):
    """Logits, actions and old/ref log-probs where the clip really engages in both directions."""
    obs, act, rng = batch(seed=seed)
    actor = lander.make_actor(seed)
    with torch.no_grad():
        for p in actor.parameters():
            p.add_(0.3 * torch.from_numpy(rng.standard_normal(p.shape).astype(np.float64)))
    logits = actor(torch.from_numpy(obs)).detach().numpy()
    logp_old = (log_softmax(logits)[np.arange(len(act)), act]
                + rng.normal(0, 0.3, len(act))).astype(np.float64)
    logp_ref = (logp_old + rng.normal(0, 0.2, len(act))).astype(np.float64)
    adv = rng.standard_normal(len(act)).astype(np.float64)
    return logits, act, logp_old, logp_ref, adv, rng


def test_grpo_loss_grad_matches_autograd_of_grpo_loss():
    logits, act, logp_old, logp_ref, adv, rng = trained_logits()
    w = rng.uniform(0.5, 2, len(act)).astype(np.float64)
    z = torch.tensor(logits, requires_grad=True)
    logp = torch.log_softmax(z, -1).gather(1, torch.from_numpy(act)[:, None])[:, 0]
    loss, clipped_t, k3_t = lander.lander_grpo_loss(logp, torch.from_numpy(logp_old),
                                                    torch.from_numpy(logp_ref), torch.from_numpy(adv),
                                                    torch.from_numpy(w), 0.2, 0.04)
    loss.backward()
    d, clipped, k3 = lander.grpo_loss_grad(logits, act, logp_old, logp_ref, adv, w, 0.2, 0.04)
    assert 0 < clipped.sum() < len(act)            # both branches are exercised
    np.testing.assert_array_equal(clipped, clipped_t.numpy())
    np.testing.assert_allclose(k3, k3_t.detach().numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(d, z.grad.numpy(), rtol=1e-4, atol=1e-7)


def test_ppo_loss_grad_matches_autograd_with_the_entropy_bonus():
    logits, act, logp_old, _, adv, _ = trained_logits(1)
    z = torch.tensor(logits, requires_grad=True)
    logp_all = torch.log_softmax(z, -1)
    logp = logp_all.gather(1, torch.from_numpy(act)[:, None])[:, 0]
    surr, clipped_t = clipped_surrogate(logp, torch.from_numpy(logp_old), torch.from_numpy(adv), 0.2)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    (-surr.mean() - 0.01 * entropy.mean()).backward()
    d, clipped = lander.ppo_loss_grad(logits, act, logp_old, adv, 0.2, 0.01)
    assert 0 < clipped.sum() < len(act)
    np.testing.assert_array_equal(clipped, clipped_t.numpy())
    np.testing.assert_allclose(d, z.grad.numpy(), rtol=1e-4, atol=1e-7)


def test_a_wrong_gradient_is_caught():
    """The comparison above can fail: drop the clip and the gradients no longer match."""
    logits, act, logp_old, logp_ref, adv, _ = trained_logits()
    w = np.ones(len(act))
    right, _, _ = lander.grpo_loss_grad(logits, act, logp_old, logp_ref, adv, w, 0.2, 0.04)
    wrong, _, _ = lander.grpo_loss_grad(logits, act, logp_old, logp_ref, adv, w, 0.9, 0.04)
    assert not np.allclose(right, wrong, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("max_norm", [0.5, 1e6])     # clipping on, and effectively off
def test_adam_matches_clip_grad_norm_then_torch_adam(max_norm):
    a, b = lander.make_actor(0), lander.make_critic(0)
    ta, tb = copy.deepcopy(a), copy.deepcopy(b)
    nets = [FlatMLP(a), FlatMLP(b)]
    opt = Adam(nets, lr=3e-4, eps=1e-5, max_grad_norm=max_norm)
    params = list(ta.parameters()) + list(tb.parameters())
    topt = torch.optim.Adam(params, lr=3e-4, eps=1e-5)
    rng = np.random.default_rng(0)
    for _ in range(5):
        grads = [rng.standard_normal(n.flat.shape).astype(np.float64) for n in nets]
        for n, g in zip(nets, grads):
            n.grad[:] = g
        for p, g in zip(params, np.split(np.concatenate(grads),
                                         np.cumsum([p.numel() for p in params])[:-1])):
            p.grad = torch.from_numpy(g.reshape(p.shape).copy())
        norm = opt.step()
        tnorm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        topt.step()
        assert norm == pytest.approx(float(tnorm), rel=1e-5)
    want = np.concatenate([p.detach().numpy().ravel() for p in params])
    np.testing.assert_allclose(np.concatenate([n.flat for n in nets]), want, rtol=1e-5, atol=1e-7)


def test_adam_rejects_bad_settings_and_nan_gradients():
    net = FlatMLP(lander.make_actor(0))
    for bad in ({"lr": 0}, {"lr": -1e-3}, {"lr": 1e-3, "eps": 0}, {"lr": 1e-3, "max_grad_norm": 0}):
        with pytest.raises(ValueError):
            Adam([net], **bad)
    opt = Adam([net], lr=1e-3)
    net.grad[0] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        opt.step()


def test_loss_grads_reject_logits_of_the_wrong_shape():
    logits, act, logp_old, logp_ref, adv, _ = trained_logits()
    w = np.ones(len(act))
    with pytest.raises(ValueError, match="logits must be"):
        lander.grpo_loss_grad(logits[:, :3], act, logp_old, logp_ref, adv, w, 0.2, 0.04)
    with pytest.raises(ValueError, match="logits must be"):
        lander.ppo_loss_grad(logits[:-1], act, logp_old, adv, 0.2, 0.01)
    with pytest.raises(ValueError, match="every per-step array"):
        lander.ppo_loss_grad(logits, act, logp_old[:-1], adv[:-1], 0.2, 0.01)
