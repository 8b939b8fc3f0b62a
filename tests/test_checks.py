"""``grpo.checks``, the one way to check an argument, and the same bad values run through every
config and public entry point that uses it: each refuses them with a ValueError that names the
argument, at construction for a config; NumPy scalars pass where Python numbers do."""
import numpy as np
import pytest
import torch

from grpo import checks
from grpo.toy.algos import ToyGRPOConfig
from grpo.toy.algos import ToyPPOConfig, ReinforceConfig
from grpo.lander import ActorCriticConfig
from grpo.lander import LanderGRPOConfig
from grpo.lm.grpo import LossOptions, grpo_loss
from grpo.lm.rl import EIConfig, RunConfig
from grpo.lm.train import SFTConfig
from grpo.objectives import grpo_advantages
from grpo.surrogate import clipped_surrogate


def test_numpy_scalars_are_numbers_and_bools_are_not():
    assert checks.positive("lr", np.float32(1e-4)) == pytest.approx(1e-4)
    assert checks.integer("G", np.int64(8), minimum=2) == 8 and type(checks.integer("G", np.int64(8))) is int
    assert checks.boolean("clip", np.bool_(True)) is True
    for bad in (True, np.bool_(False), "1", None, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="lr"):
            checks.positive("lr", bad)
    for bad in (True, 2.0, "2", np.float64(2.0)):
        with pytest.raises(ValueError, match="G must be an int"):
            checks.integer("G", bad)
    for bad in ("no", "false", 0, 1, None):
        with pytest.raises(ValueError, match="clip must be True or False"):
            checks.boolean("clip", bad)


def test_bounds_and_messages_name_the_argument_and_the_value():
    with pytest.raises(ValueError, match=r"top_p must be a finite number in \(0, 1\], got 0"):
        checks.probability("top_p", 0, low_open=True)
    assert checks.probability("top_p", 1, low_open=True) == 1.0
    with pytest.raises(ValueError, match=r"eps must be a finite number >= 0, got -1e-09"):
        checks.non_negative("eps", -1e-9)
    with pytest.raises(ValueError, match=r"G must be an int >= 2 and <= 64, got 65"):
        checks.integer("G", 65, minimum=2, maximum=64)
    with pytest.raises(ValueError, match=r"aggregation must be one of \('sequence', 'token'\), got 'tokn'"):
        checks.choice("aggregation", "tokn", ("sequence", "token"))
    assert checks.optional(checks.positive, "eps_high", None) is None
    assert len(str(pytest.raises(ValueError, checks.positive, "x", "y" * 500).value)) < 120


# Every config refuses the same kinds of bad value at construction: a negative or zero count, a bool
# or a string where a number goes, a non-bool flag, an unknown choice.
CONFIGS = [
    (ReinforceConfig, {"updates": 0, "G": 1.5, "lr": -0.1, "eval_every": 2.0}),
    (ToyPPOConfig, {"eps": -0.1, "passes": 0, "critic_lr": True, "adv_norm": "yes"}),
    (ToyGRPOConfig, {"averaging": "per_step", "G": 1}),
    (LossOptions, {"advantage": "zscor", "clip": "off", "beta": -0.01, "aggregation": "tokens"}),
    (RunConfig, {"iterations": -1, "G": 1, "lr": 0, "reuse": 2.0, "dynamic_sampling": "no",
                 "reward": "strictt", "temperature": True}),
    (SFTConfig, {"steps": 0, "batch_size": 2.5, "lr": True, "betas": (0.9,), "bucket": 1}),
    (EIConfig, {"G": 1, "keep": "any", "lr": 0, "betas": (0.9, 1.0)}),
    (ActorCriticConfig, {"epochs": 0.5, "gamma": 0.0, "clip": 1.0, "normalize_adv": "yes"}),
    (LanderGRPOConfig, {"group_size": 2.5, "beta": -1.0, "baseline": "critic", "process": 0}),
]


@pytest.mark.parametrize("config, field, value",
                         [(c, f, v) for c, bad in CONFIGS for f, v in bad.items()],
                         ids=lambda x: x.__name__ if isinstance(x, type) else repr(x))
def test_a_config_refuses_a_bad_field_at_construction(config, field, value):
    config()                                            # the defaults are valid
    with pytest.raises(ValueError, match=field.split(".")[-1]):
        config(**{field: value})


@pytest.mark.parametrize("value", [0.0, -1e-3, True, "1e-8", float("nan")])
def test_public_functions_refuse_a_bad_eps_in_their_first_line(value):
    scores = np.array([1.0, 0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="eps"):
        grpo_advantages(scores, eps=value)
    logp = torch.zeros(4)
    if value == 0.0:                    # a clip of width 0 is a valid (if frozen) surrogate
        return
    with pytest.raises(ValueError, match="eps_low"):
        clipped_surrogate(logp, logp, torch.ones(4), eps_low=value)


@pytest.mark.parametrize("value", [-0.04, True, "0.04", float("inf")])
def test_the_lm_loss_refuses_a_bad_beta(value):
    logp = torch.zeros(4, 3, dtype=torch.float64)
    mask = torch.ones(4, 3)
    rewards = torch.tensor([[1.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    grpo_loss(logp, logp, logp, mask, rewards, LossOptions(beta=0.04))         # the same call, a good beta
    with pytest.raises(ValueError, match="beta"):
        grpo_loss(logp, logp, logp, mask, rewards, LossOptions(beta=value))


def test_numpy_values_pass_where_python_values_do():
    assert RunConfig(lr=np.float64(5e-5), G=np.int64(8), reuse=np.int32(2)).G == 8
    assert SFTConfig(lr=np.float32(1e-3), steps=np.int64(10)).steps == 10
    np.testing.assert_array_equal(grpo_advantages(np.array([1.0, 0.0]), eps=np.float32(1e-4)),
                                  grpo_advantages(np.array([1.0, 0.0]), eps=float(np.float32(1e-4))))


def test_the_toy_configs_take_numpy_scalars_and_refuse_a_float_count():
    c = ReinforceConfig(lr=np.float32(0.25), G=np.int64(4), updates=np.int32(3))
    assert c.G == 4 and c.updates == 3
    with pytest.raises(ValueError, match=r"passes must be an int >= 1, got 2.0"):
        ToyGRPOConfig(passes=2.0)
