"""One batched group advantage for the lander and the language model: row by row it is chapter 4's
``grpo_advantages`` to the bit, every baseline gives exactly 0 on an all-equal group, a torch
tensor comes back as a tensor, and bad input is a ValueError naming the argument."""
import numpy as np
import pytest
import torch

from grpo.objectives import GROUP_ADVANTAGES, group_advantages, grpo_advantages


@pytest.mark.parametrize("G", [2, 3, 8, 16, 33])
@pytest.mark.parametrize("eps", [1e-8, 1e-4])
def test_zscore_is_grpo_advantages_row_by_row_to_the_bit(G, eps):
    rng = np.random.default_rng(G)
    for r in (rng.normal(size=(40, G)) * 300.0, (rng.random((40, G)) < 0.3).astype(float)):
        expected = np.stack([grpo_advantages(row, eps) for row in r])
        assert np.array_equal(group_advantages(r, "zscore", eps), expected)


def test_the_baselines_are_their_definitions():
    r = np.array([[1.0, 0.0, 0.0, 1.0], [3.0, 5.0, 10.0, 2.0]])
    mean = r.mean(1, keepdims=True)
    assert np.allclose(group_advantages(r, "center"), r - mean, atol=0)
    others = (r.sum(1, keepdims=True) - r) / (r.shape[1] - 1)         # the leave-one-out mean
    assert np.allclose(group_advantages(r, "rloo"), r - others, rtol=1e-15)
    assert np.array_equal(group_advantages(r, "raw"), r)


@pytest.mark.parametrize("advantage", ["zscore", "center", "rloo"])
def test_an_all_equal_group_gives_exactly_zero(advantage):
    r = np.array([[0.1] * 7, [0.3, 0.1, 0.2, 0.1, 0.1, 0.1, 0.1]])
    adv = group_advantages(r, advantage)
    assert (adv[0] == 0).all() and (adv[1] != 0).any()
    assert not np.isnan(adv).any()


def test_a_torch_tensor_comes_back_as_a_tensor_of_its_dtype():
    r = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]], dtype=torch.float32)
    adv = group_advantages(r)
    assert isinstance(adv, torch.Tensor) and adv.dtype == torch.float32
    assert torch.equal(adv, torch.as_tensor(group_advantages(r.double().numpy()), dtype=torch.float32))


@pytest.mark.parametrize("rewards, kwargs, name", [
    (np.zeros((2, 1)), {}, "G >= 2"),
    (np.zeros(4), {}, "shape"),
    (np.array([[1.0, np.nan]]), {}, "NaN"),
    (np.zeros((2, 2)), {"advantage": "ppo"}, "advantage"),
    (np.zeros((2, 2)), {"eps": 0.0}, "eps"),
])
def test_bad_input_is_a_value_error_naming_it(rewards, kwargs, name):
    with pytest.raises(ValueError, match=name):
        group_advantages(rewards, **kwargs)
    assert set(GROUP_ADVANTAGES) == {"zscore", "center", "rloo", "raw", "trl"}


def test_trl_advantages_use_the_unbiased_std_and_trls_epsilon():
    r = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [3.0, 1.0]])
    adv = group_advantages(r, "trl")
    assert adv[0, 0] == pytest.approx(0.5 / (0.5 ** 0.5 + 1e-4), rel=1e-15)   # std of (1, 0): 0.707
    assert np.array_equal(adv[1], [0.0, 0.0])                                    # all equal: 0
    r8 = np.random.default_rng(0).integers(0, 2, (50, 8)).astype(float)
    r8 = r8[~(r8 == r8[:, :1]).all(1)]
    assert np.allclose(group_advantages(r8, "trl"),
                       group_advantages(r8, "zscore") * (7 / 8) ** 0.5, rtol=1e-3)
