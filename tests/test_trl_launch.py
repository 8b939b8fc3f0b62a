"""Chapter 11's scale-out path: ``lib/grpo/experiments/ch11_pretrained/trl_launch.yaml`` is the recipe, and
one step of it runs offline on CPU through ``accelerate launch``, on SmolLM2-135M from the wheel, with the
verifier."""
import ast
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

trl = pytest.importorskip("trl")

from grpo.experiments.ch11_pretrained import smollm2_runs as pretrained, trl_launch as trl_grpo  # noqa: E402

R = pretrained.RECIPE


def parse(*flags):
    parser = trl.TrlParser((trl_grpo.LaunchArgs, trl.GRPOConfig))
    return parser.parse_args_and_config(args=["--config", str(trl_grpo.CONFIG), *flags])


def test_the_yaml_is_chapter_11s_recipe(tmp_path):
    args, config = parse("--output_dir", str(tmp_path))
    assert args.model == R.model == "smollm2" and args.gguf_file == "" and args.problems == 0
    assert config.per_device_train_batch_size == R.prompts * R.G and config.num_generations == R.G
    assert config.max_completion_length == R.max_new_tokens and config.max_steps == R.steps
    assert config.temperature == R.temperature and (config.top_k, config.top_p) == (0, 1.0)
    assert config.learning_rate == R.lr and config.beta == R.beta and config.num_iterations == R.reuse
    assert config.epsilon == R.eps_low and config.epsilon_high == R.eps_low and R.eps_high is None
    assert config.loss_type == "grpo" and R.aggregation == "sequence"        # 1/|o_i|, DeepSeekMath
    assert config.use_bias_correction_kl is R.kl_ratio is False
    assert config.importance_sampling_level == R.ratio_level == "token"
    assert config.scale_rewards == "group" and R.advantage == "zscore" and R.clip
    assert config.lr_scheduler_type == "constant" and config.warmup_steps == 0
    assert config.weight_decay == 0 and config.max_grad_norm == 0          # Adam, no clipping: ours
    assert config.bf16 is False and config.gradient_checkpointing is False
    assert set(asdict(R)) == {"model", "gguf_file", "gsm8k", "steps", "prompts", "G", "lr", "reuse",
                              "chunk_groups", "temperature", "max_new_tokens", "instruction", "seed",
                              "device", "out", "advantage", "clip", "eps_low", "eps_high", "beta",
                              "kl_ratio", "aggregation", "ratio_level"}, \
        "a new recipe field: map it in the YAML"


def test_a_flag_overrides_the_file(tmp_path):
    _, config = parse("--output_dir", str(tmp_path), "--max_steps", "1", "--beta", "0")
    assert config.max_steps == 1 and config.beta == 0


def test_one_step_through_accelerate_launch_offline_on_cpu(tmp_path):
    """One small step (2 prompts x 2 samples, 24 tokens) of the YAML's recipe, as a user launches it."""
    out = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    accelerate = Path(sys.executable).with_name("accelerate")
    command = [str(accelerate), "launch", "--cpu", "--num_processes", "1", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no",
               "-m", "grpo.experiments.ch11_pretrained.trl_launch",
               "--config", str(trl_grpo.CONFIG), "--output_dir", str(out), "--max_steps", "1",
               "--per_device_train_batch_size", "4", "--num_generations", "2",
               "--max_completion_length", "24", "--problems", "4", "--disable_tqdm", "true"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    logs = [ast.literal_eval(line) for line in done.stdout.splitlines() if line.startswith("{'loss'")]
    assert len(logs) == 1, done.stdout[-3000:]
    log = logs[0]
    assert "rewards/gsm8k_reward/mean" in log                     # the book's verifier is the reward
    assert float(log["learning_rate"]) == R.lr and float(log["entropy"]) > 0
    assert float(log["completions/max_length"]) <= 24
    assert (out / "model.safetensors").is_file() and f"saved the trained model to {out}" in done.stdout

    assert (out / "start_model" / "model.safetensors").is_file()      # saved once, TRL read it twice

def test_a_local_directory_or_hub_id_goes_to_trl_as_given(tmp_path):
    assert trl_grpo.model_path(trl_grpo.LaunchArgs(model=str(tmp_path)), str(tmp_path)) == str(tmp_path)
    assert trl_grpo.model_path(trl_grpo.LaunchArgs(model="org/name"), str(tmp_path)) == "org/name"
