"""GRPO on a Hugging Face causal LM from the command line: ``grpo.lm.hf.train_hf_grpo`` on GSM8K.

A hub model needs the network once, to download it, and a GPU to be quick:

    python -m grpo.experiments.hf_cli --model Qwen/Qwen2.5-0.5B-Instruct --gsm8k data/gsm8k
    python -m grpo.experiments.hf_cli --model Qwen/Qwen2.5-0.5B-Instruct --gsm8k hf --preset dapo
    python -m grpo.experiments.hf_cli --model smollm2 --gsm8k data/gsm8k --device cpu   # offline
    python -m grpo.experiments.hf_cli --model DIR --gguf_file NAME.gguf --gsm8k data/gsm8k

The flags are ``grpo.lm.hf.HFConfig``'s fields, read by TRL's ``TrlParser`` (so ``--config
file.yaml`` works as in TRL's scripts), and ``--preset`` (a published recipe's loss options). The
library raises its errors; this command says them as a command line does, and stores nothing.
"""
from __future__ import annotations

import os
import sys
from dataclasses import asdict

import torch

from grpo.lm.data import load_gsm8k, load_gsm8k_hf, read_jsonl
from grpo.lm.grpo import PRESETS
from grpo.lm.hf import HFConfig, per_completion_reward, pick_device, train_hf_grpo
from grpo.seeding import seeded_generator

MODULE = "grpo.experiments.hf_cli"


def load_questions(source: str):
    """GSM8K rows ``{"question", "answer"}``: "hf" (the hub, online), a .jsonl file, or a dir."""
    try:
        if source == "hf":
            return load_gsm8k_hf("train")
        if source.endswith(".jsonl"):
            return read_jsonl(source)
        return load_gsm8k("train", data_dir=source)
    except (FileNotFoundError, RuntimeError) as e:
        raise FileNotFoundError(f"{e}\nHere: --gsm8k DIR (with train.jsonl), --gsm8k FILE.jsonl, "
                                "or --gsm8k hf (downloads openai/gsm8k: needs the network).") from e


def train_gsm8k(cfg: HFConfig, verifier=None, log=print):
    """``train_hf_grpo`` on GSM8K's train split (``cfg.gsm8k``), ``cfg.prompts`` questions a step
    in a seeded shuffle, one line of stats a step to ``log`` (``cpu_s``: CPU seconds); saves the
    model to ``cfg.out`` when given. Returns (policy, list of step stats)."""
    pick_device(cfg.device)                      # no GPU and no --device cpu: say so before loading
    rows = load_questions(cfg.gsm8k)
    order = torch.randperm(len(rows), generator=seeded_generator(cfg.seed)).tolist()

    def batches():
        for step in range(cfg.steps):
            batch = [rows[order[(step * cfg.prompts + i) % len(rows)]] for i in range(cfg.prompts)]
            yield [r["question"] for r in batch], [r["answer"] for r in batch]

    def say(step, stats):
        log(f"step {step + 1}/{cfg.steps}  loss {stats['loss']:+.4f}  reward "
            f"{stats['reward_mean']:.3f}  "
            f"degenerate {stats['degenerate_fraction']:.2f}  clip {stats['clip_fraction']:.3f}  "
            f"kl {stats.get('kl_mean', 0.0):.4f}  len {stats['completion_length_mean']:.0f}  "
            f"({stats['sample_cpu_s']:.1f} CPU-s sampling, {stats['update_cpu_s']:.1f} CPU-s "
            "update)")

    reward = None if verifier is None else per_completion_reward(verifier)  # None: chapter 7's
    policy, tokenizer, history = train_hf_grpo(cfg, batches(), reward, on_step=say)
    if cfg.out:
        policy.save_pretrained(cfg.out)
        tokenizer.save_pretrained(cfg.out)
    return policy, history


def parse_args(argv=None) -> HFConfig:
    """The config from the command line, read by TRL's ``TrlParser``: the defaults, then
    ``--preset``'s loss options, then the flags given, so ``--preset dapo --beta 0.01`` runs DAPO's
    recipe with beta 0.01. ``--eps_high none`` is the symmetric clip."""
    from trl import TrlParser
    parser = TrlParser(dataclass_types=[HFConfig], prog=f"python -m {MODULE}",
                       description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="a published recipe's loss options, under any flag given explicitly "
                             "(DAPO's dynamic sampling is not wired into this command: see "
                             "grpo.lm.grpo.dynamic_sampling)")
    preset = parser.parse_known_args(argv)[0].preset
    if preset:
        parser.set_defaults(**PRESETS[preset].loss_options())
    return parser.parse_args_and_config(argv)[0]


def main(argv=None) -> None:
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    try:
        cfg = parse_args(argv)
        print("config:", asdict(cfg), flush=True)
        train_gsm8k(cfg)
    except (OSError, RuntimeError, ValueError) as e:     # a library error, said as a command's
        raise SystemExit(f"error: {e}") from e


if __name__ == "__main__":
    sys.exit(main())
