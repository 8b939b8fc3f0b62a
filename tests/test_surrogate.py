import numpy as np
import pytest
import torch

from grpo.objectives import clip_mask
from grpo.surrogate import clipped_surrogate


def _batch(seed=0, n=64):
    g = torch.Generator().manual_seed(seed)
    logp_old = -torch.rand(n, generator=g, dtype=torch.float64) * 2
    logp = logp_old + (torch.rand(n, generator=g, dtype=torch.float64) - 0.5)  # rho in [0.61, 1.65]
    adv = torch.randn(n, generator=g, dtype=torch.float64)
    return logp, logp_old, adv


def test_values_match_the_definition_by_hand():
    logp = torch.log(torch.tensor([1.5, 1.5, 0.5, 0.5, 1.1], dtype=torch.float64))
    logp_old = torch.zeros(5, dtype=torch.float64)
    adv = torch.tensor([2.0, -2.0, 2.0, -2.0, 1.0], dtype=torch.float64)
    surr, clipped = clipped_surrogate(logp, logp_old, adv, eps_low=0.2)
    # rho=1.5,A>0: clip to 1.2 -> 2.4 (clipped); rho=1.5,A<0: -3.0 (correction, unclipped);
    # rho=0.5,A>0: 1.0 (correction); rho=0.5,A<0: clip to 0.8 -> -1.6 (clipped); inside band: 1.1
    np.testing.assert_allclose(surr.numpy(), [2.4, -3.0, 1.0, -1.6, 1.1])
    assert clipped.tolist() == [True, False, False, True, False]


def test_clipped_steps_agree_with_the_numpy_toy_and_get_no_gradient():
    logp, logp_old, adv = _batch()
    logp = logp.clone().requires_grad_(True)
    surr, clipped = clipped_surrogate(logp, logp_old, adv, eps_low=0.2)
    rho = torch.exp(logp - logp_old).detach().numpy()
    assert clipped.numpy().tolist() == clip_mask(rho, adv.numpy(), 0.2).tolist()
    assert 0 < clipped.sum() < len(clipped)
    surr.sum().backward()
    grad = logp.grad.numpy()
    assert np.all(grad[clipped.numpy()] == 0)
    # elsewhere d(rho*A)/dlogp = rho*A, checked against autograd
    np.testing.assert_allclose(grad[~clipped.numpy()], (rho * adv.numpy())[~clipped.numpy()])


def test_clip_higher_widens_the_band_upward_only():
    logp = torch.log(torch.tensor([1.25, 0.75]))
    zeros = torch.zeros(2)
    up = torch.tensor([1.0, -1.0])
    _, sym = clipped_surrogate(logp, zeros, up, eps_low=0.2)
    _, high = clipped_surrogate(logp, zeros, up, eps_low=0.2, eps_high=0.28)
    assert sym.tolist() == [True, True]
    assert high.tolist() == [False, True]


def test_adv_broadcasts_over_tokens():
    logp = torch.zeros(3, 5)
    surr, _ = clipped_surrogate(logp, logp, torch.tensor([[1.0], [0.0], [-2.0]]))
    assert surr.tolist() == [[1.0] * 5, [0.0] * 5, [-2.0] * 5]


@pytest.mark.parametrize("kwargs, match", [
    (dict(logp=torch.zeros(3), logp_old=torch.zeros(4), adv=torch.zeros(3)), "same shape"),
    (dict(logp=torch.zeros(3), logp_old=torch.zeros(3), adv=torch.zeros(2)), "broadcast"),
    (dict(logp=torch.tensor([float("nan")]), logp_old=torch.zeros(1), adv=torch.zeros(1)), "NaN"),
    (dict(logp=torch.zeros(1), logp_old=torch.zeros(1), adv=torch.zeros(1), eps_low=-0.1), "eps_low"),
    (dict(logp=torch.zeros(1), logp_old=torch.zeros(1), adv=torch.zeros(1), eps_low=1.0), "eps_low"),
    (dict(logp=torch.zeros(1), logp_old=torch.zeros(1), adv=torch.zeros(1), eps_high="0.3"), "eps_high"),
])
def test_bad_input_is_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        clipped_surrogate(**kwargs)


def test_numpy_input_is_a_type_error():
    with pytest.raises(TypeError):
        clipped_surrogate(np.zeros(2), np.zeros(2), np.zeros(2))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("which", ["logp", "logp_old", "adv"])
@pytest.mark.parametrize("n, at", [(1, 0), (64, 0), (64, 37), (64, 63), (1000, 999)])
def test_any_nan_or_inf_anywhere_is_refused(bad, which, n, at):
    args = {"logp": torch.zeros(n, requires_grad=True), "logp_old": torch.zeros(n), "adv": torch.ones(n)}
    x = torch.zeros(n)
    x[at] = bad
    args[which] = x
    with pytest.raises(ValueError, match="NaN or inf"):
        clipped_surrogate(**args)


def test_empty_and_broadcast_inputs_pass_the_checks():
    surr, clipped = clipped_surrogate(torch.zeros(0), torch.zeros(0), torch.zeros(0))
    assert surr.shape == clipped.shape == (0,)
    surr, _ = clipped_surrogate(torch.zeros(2, 3), torch.zeros(2, 3), torch.tensor(1.0))
    assert surr.tolist() == [[1.0] * 3] * 2


def test_an_advantage_that_would_broaden_the_shape_is_refused():
    """Regression: logp (3,) with adv (3, 1) broadcast to a (3, 3) outer product."""
    logp = torch.zeros(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="does not broadcast"):
        clipped_surrogate(logp, logp, torch.ones(3, 1, dtype=torch.float64))
    surr, _ = clipped_surrogate(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2, 1))   # per row: fine
    assert surr.shape == (2, 3)
