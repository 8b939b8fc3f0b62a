"""Chapter 11's recipe through TRL's GRPOTrainer, from one YAML file: the path to several GPUs.

    YAML=lib/grpo/experiments/ch11_pretrained/trl_launch.yaml
    accelerate launch -m grpo.experiments.ch11_pretrained.trl_launch --config $YAML
    accelerate launch --num_processes 8 -m grpo.experiments.ch11_pretrained.trl_launch \\
        --config $YAML --model HuggingFaceTB/SmolLM2-135M-Instruct --bf16 true   # GPUs, unquantized

The YAML holds ``smollm2_runs.RECIPE`` (beside this module) in TRL's terms
(``tests/test_trl_launch.py`` checks that they agree, and runs one step of it offline on CPU); any
flag after it overrides the file. The problems are chapter 11's training split (one-step word
problems, the question alone in the chat template) and the reward is the book's verifier on the
last number (``last_number_reward``).
``model``: a name in ``grpo.lm.hf.GGUF_MODELS`` (``smollm2``: the wheel's GGUF, dequantized once
into ``output_dir/start_model``, since TRL loads its reference model from the policy's path), a
local directory, or a hub id. Where TRL differs from ``grpo.lm.hf.grpo_step``: its advantages divide
by the unbiased std + 1e-4 (ours: the population std + 1e-8), and it samples with ``generate``, each
prompt repeated G times, so the same seed draws other completions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grpo.lm.hf import GGUF_MODELS, load_model, save_plain, trl_dataset, trl_reward
from grpo.lm.verifier import last_number_reward

CONFIG = Path(__file__).with_name("trl_launch.yaml")


@dataclass
class LaunchArgs:
    """What the YAML holds beside TRL's ``GRPOConfig``."""
    model: str = field(default="smollm2",
                       metadata={"help": "a name in GGUF_MODELS, a directory, or a hub id"})
    gguf_file: str = field(default="",
                           metadata={"help": "with a directory as model: the .gguf file in it"})
    problems: int = field(default=0, metadata={"help": "the first N training problems (0: all)"})


def model_path(args: LaunchArgs, output_dir: str) -> str:
    """What TRL loads: a GGUF model dequantized into ``output_dir/start_model`` (once, by the main
    process), else ``args.model`` as given."""
    if args.model not in GGUF_MODELS and not args.gguf_file:
        return args.model
    from accelerate import PartialState
    state, directory = PartialState(), Path(output_dir) / "start_model"
    if state.is_main_process and not (directory / "config.json").is_file():
        save_plain(*load_model(args.model, "cpu", args.gguf_file), directory)
    state.wait_for_everyone()
    return str(directory)


def build_trainer(args: LaunchArgs, config):
    """TRL's ``GRPOTrainer`` on chapter 11's training problems with the book's verifier."""
    import trl
    from transformers import AutoTokenizer

    from grpo.experiments.ch11_pretrained.smollm2_runs import problems
    path = model_path(args, config.output_dir)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    rows = problems()["train"]
    if args.problems:
        rows = rows[:args.problems]
    return trl.GRPOTrainer(model=path, reward_funcs=trl_reward(last_number_reward), args=config,
                           train_dataset=trl_dataset(rows, tokenizer, instruction=""),
                           processing_class=tokenizer)


def main(argv=None):
    import trl
    parser = trl.TrlParser((LaunchArgs, trl.GRPOConfig),
                           prog="accelerate launch -m grpo.experiments.ch11_pretrained.trl_launch")
    args, config = parser.parse_args_and_config(args=argv)
    trainer = build_trainer(args, config)
    trainer.train()
    trainer.save_model(config.output_dir)
    trainer.accelerator.print(f"saved the trained model to {config.output_dir}")


if __name__ == "__main__":
    main()
