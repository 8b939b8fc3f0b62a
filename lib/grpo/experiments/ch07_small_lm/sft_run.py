"""Chapter 7's SFT run, stored: the worked-solution model, 1,000 steps from its seeded
initialisation on chapter 7's split, with chapter 7's tokenizer.

Why it is stored. The run is most of chapter 7's CPU (its record's ``cpu_s``), and it is not
the same bits on every CPU. The model computes in float64, so a first step agrees across
kernel paths to the last bits; but a long run amplifies the last bits. Re-trained under ATen's
default kernels instead of the book's AVX2 ones, it ends with other weights and other sampled
answers (README, "Long training is chaotic"). So the chapter reads the run, and
``python -m grpo.experiments.ch07_small_lm.sft_run`` (or ``make full``, first) writes

    data/runs/07_small_lm/sft.json                its SFT config, model shape, init seed, the SFT
                                                  log (every step's loss, the greedy evaluations)
                                                  and CPU seconds
    data/runs/07_small_lm/sft_weights.safetensors the final weights in float64, exactly as trained
    data/models/07_small_lm_sft.safetensors       the same weights in float32: chapter 8's start

``load_sft_model(cfg, model_cfg)`` returns ``(model, history)`` as ``sft`` left them, and refuses a
run stored for another config or model shape. ``tests/test_lm_sft_run.py`` re-runs the first SFT
steps against the stored log and checks the float32 checkpoint against the float64 weights.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

from grpo.files import json_ready
from grpo.runstore import command_line, cpu_timed, read_json, read_weights, run_dir, write_json
from grpo.runstore import write_weights

from grpo.lm.data import PROTOCOL
from grpo.lm.model import GPT, GPTConfig, save
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.train import SFTConfig, sft
from grpo.runstore.models import MODELS_DIR, SFT_CHECKPOINT, SFT_TOKENIZER

# Chapter 7's SFT settings, model shape and initialisation seed (the chapter checks its own).
SFT = SFTConfig(steps=1000, batch_size=32, lr=3e-3, warmup=20, eval_every=200, eval_problems=200)
SHAPE = {"n_layer": 4, "n_head": 4, "d_model": 128, "max_len": 192}  # vocab_size: the tokenizer's
INIT_SEED = 0
WEIGHTS = "sft_weights.safetensors"


MODULE = "grpo.experiments.ch07_small_lm.sft_run"


def stored_dir() -> Path:
    return run_dir("07_small_lm")


def model_config(tok: Tokenizer) -> GPTConfig:
    """Chapter 7's model shape for ``tok``'s vocabulary."""
    return GPTConfig(vocab_size=tok.vocab_size, **SHAPE)


def train_model(cfg: SFTConfig = SFT, models_dir: Path = MODELS_DIR):
    """``(model, tok, history)``: a fresh model of chapter 7's shape (seeded ``INIT_SEED``),
    trained with ``sft`` on chapter 7's split, with chapter 7's stored tokenizer."""
    tok = Tokenizer.load(Path(models_dir) / SFT_TOKENIZER)
    train, test = PROTOCOL.splits()
    torch.manual_seed(INIT_SEED)
    model = GPT(model_config(tok))
    return model, tok, sft(model, tok, train, test, cfg)


def _record(cfg: SFTConfig, model_cfg: GPTConfig) -> dict:
    return {"config": json_ready(asdict(cfg)), "model": asdict(model_cfg), "init_seed": INIT_SEED}


def train_and_store(
    cfg: SFTConfig = SFT, models_dir: Path = MODELS_DIR, directory: Path | None = None
) -> Path:
    """Train, then write the float64 weights, the float32 checkpoint and the record."""
    torch.set_num_threads(1)
    (model, _, history), cpu_s = cpu_timed(train_model, cfg, models_dir)
    directory = Path(directory or stored_dir())
    write_weights(directory / WEIGHTS, model.state_dict())
    save(model, Path(models_dir) / SFT_CHECKPOINT)
    record = {**_record(cfg, model.cfg), "history": json_ready(history), "cpu_s": round(cpu_s, 1)}
    write_json(directory / "sft.json", record)
    return directory


def load_record(cfg: SFTConfig = SFT, directory: Path | None = None) -> dict:
    """The stored record; ``cfg`` must be the stored one."""
    path = Path(directory or stored_dir()) / "sft.json"
    record = read_json(path, MODULE)
    if record["config"] != json_ready(asdict(cfg)):
        raise ValueError(
            f"cfg must be the config stored in {path}: re-run `python -m {MODULE}` after "
            "changing it"
        )
    return record


def load_sft_model(cfg: SFTConfig = SFT, model_cfg: GPTConfig | None = None,
                   directory: Path | None = None):
    """``(model, history)``: the stored run's model (float64, eval mode, the weights ``sft`` left)
    and its SFT log, as ``sft`` returned it; ``cfg`` (and ``model_cfg``, if given) must be the
    stored ones."""
    directory = Path(directory or stored_dir())
    record = load_record(cfg, directory)
    if model_cfg is not None and record["model"] != asdict(model_cfg):
        raise ValueError(f"model_cfg must be the model shape stored in {directory / 'sft.json'}, "
                         f"{record['model']}")
    model = GPT(GPTConfig(**record["model"]))
    model.load_state_dict(read_weights(directory / WEIGHTS))
    return model.eval(), record["history"]


def main(argv=None) -> None:
    command_line(MODULE, __doc__, train_and_store, argv)


__all__ = [
    "SFT",
    "SHAPE",
    "INIT_SEED",
    "stored_dir",
    "model_config",
    "train_model",
    "train_and_store",
    "load_record",
    "load_sft_model",
]

if __name__ == "__main__":
    main()
