"""``grpo.lm.trl``: the book's recipe as TRL's GRPOConfig (chapter 11's YAML is the same mapping of its
recipe), its refusals, and the trainer it builds taking one real optimizer step offline on the stand-in
model, called as chapter 8 shows it."""
import dataclasses
import math
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

datasets = pytest.importorskip("datasets")
trl = pytest.importorskip("trl")

from grpo.lm import data  # noqa: E402
from grpo.lm.hf import HFConfig, trl_dataset, trl_reward  # noqa: E402
from grpo.lm.trl import trl_grpo_settings, trl_grpo_trainer  # noqa: E402
from hf_stand_in import saved_tiny_causal_lm  # noqa: E402

torch.set_num_threads(1)


def test_the_settings_of_chapter_11s_recipe_are_its_yaml(tmp_path):
    from grpo.experiments.ch11_pretrained import smollm2_runs, trl_launch
    parser = trl.TrlParser((trl_launch.LaunchArgs, trl.GRPOConfig))
    _, yaml_config = parser.parse_args_and_config(args=["--config", str(trl_launch.CONFIG),
                                                        "--output_dir", str(tmp_path)])
    settings = trl_grpo_settings(smollm2_runs.RECIPE)
    assert {k: getattr(yaml_config, k) for k in settings} == settings
    assert yaml_config.bf16 is False                       # trl_grpo_trainer's float32, as the YAML's


def test_every_setting_that_changes_training_is_stated():
    """Nothing is left to TRL's defaults that the book does otherwise; TRL's 1e-6 rate among them."""
    settings = trl_grpo_settings(HFConfig(lr=1e-5))
    defaults = {f.name: f.default for f in dataclasses.fields(trl.GRPOConfig)}
    assert set(settings) <= set(defaults)
    assert settings["learning_rate"] == 1e-5 and defaults["learning_rate"] == 1e-6
    differ = {k for k in settings if settings[k] != defaults[k]}
    assert {"learning_rate", "lr_scheduler_type", "loss_type", "beta", "use_bias_correction_kl",
            "epsilon_high", "max_grad_norm", "num_generations", "max_completion_length"} <= differ
    assert settings["steps_per_generation"] == settings["gradient_accumulation_steps"] == 1
    assert settings["num_iterations"] == 1                 # so every ratio is 1 (test_trl_generation_reuse)


@pytest.mark.parametrize("options, expected", [
    ({}, {"loss_type": "grpo", "scale_rewards": "group", "epsilon": 0.2, "epsilon_high": 0.2,
          "importance_sampling_level": "token", "use_bias_correction_kl": False}),
    ({"aggregation": "token", "eps_high": 0.28, "beta": 0.0}, {"loss_type": "dapo", "epsilon_high": 0.28,
                                                                "beta": 0.0}),
    ({"aggregation": "constant", "advantage": "center"}, {"loss_type": "dr_grpo", "scale_rewards": "none"}),
    ({"advantage": "trl", "ratio_level": "sequence", "kl_ratio": True, "reuse": 2},
     {"scale_rewards": "group", "importance_sampling_level": "sequence", "use_bias_correction_kl": True,
      "num_iterations": 2}),
    ({"prompts": 3, "G": 6, "steps": 7, "temperature": 0.7, "max_new_tokens": 96, "seed": 5},
     {"per_device_train_batch_size": 18, "num_generations": 6, "max_steps": 7, "temperature": 0.7,
      "max_completion_length": 96, "seed": 5}),
])
def test_each_option_maps_to_trls_name(options, expected):
    settings = trl_grpo_settings(HFConfig(**options))
    assert {k: settings[k] for k in expected} == expected


@pytest.mark.parametrize("cfg, message", [
    ({"lr": 1e-5}, "cfg must be an HFConfig"),
    (HFConfig(clip=False), "cfg.clip must be True"),
    (HFConfig(advantage="rloo"), "cfg.advantage must be one of"),
    (HFConfig(advantage="raw"), "cfg.advantage must be one of"),
])
def test_what_trl_cannot_run_is_refused(cfg, message):
    with pytest.raises(ValueError, match=message):
        trl_grpo_settings(cfg)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("tiny_lm")
    return str(model_dir), saved_tiny_causal_lm(model_dir)


def test_the_trainer_refuses_a_list_of_rewards_and_a_setting_the_recipe_sets(tiny, tmp_path):
    model, tokenizer = tiny
    dataset = datasets.Dataset.from_list([{"prompt": "2 + 3 =", "answer": "#### 5"}])
    with pytest.raises(ValueError, match="reward must be one reward function"):
        trl_grpo_trainer(model, tokenizer, dataset, [trl_reward(), trl_reward()], HFConfig(), str(tmp_path))
    with pytest.raises(ValueError, match="extra must not set learning_rate"):
        trl_grpo_trainer(model, tokenizer, dataset, trl_reward(), HFConfig(), str(tmp_path),
                         learning_rate=1e-6)


def test_one_optimizer_step_offline_as_chapter_8_calls_it(tiny, tmp_path):
    model, tokenizer = tiny
    rows = [data.make_problem(random.Random(i), 1) for i in range(2)]

    def any_digit(completion, answer):       # a verifier a random model passes: the updates need contrast
        return float(any(ch.isdigit() for ch in completion))

    cfg = HFConfig(model=model, steps=1, prompts=2, G=4, lr=1e-3, max_new_tokens=8, beta=0.04)
    dataset = trl_dataset(rows, tokenizer, cfg.instruction)
    trainer = trl_grpo_trainer(cfg.model, tokenizer, dataset, trl_reward(any_digit), cfg, str(tmp_path),
                               use_cpu=True, save_strategy="no", disable_tqdm=True)
    assert trainer.args.learning_rate == 1e-3 and trainer.args.bf16 is False
    assert trainer.args.loss_type == "grpo" and trainer.args.beta == 0.04
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.train()
    log = trainer.state.log_history[0]
    assert log["step"] == 1 and math.isfinite(log["loss"]) and log["learning_rate"] == 1e-3
    completions = list(trainer._logs["completion"])
    assert len(completions) == cfg.prompts * cfg.G
    assert log["rewards/gsm8k_reward/mean"] == pytest.approx(
        sum(any_digit(c, "") for c in completions) / len(completions))
    assert log["frac_reward_zero_std"] < 1 and "kl" in log
    assert not all(torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
