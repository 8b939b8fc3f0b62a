"""The checkpoints the chapters start from, in ``data/models/``, and runs that start from them.

Chapter 7 trains a small GPT on worked solutions and writes it here
(``grpo.experiments.ch07_small_lm.sft_run``), with its twin trained on final answers alone
(``answer_only``) and their tokenizer; chapters 8, 10 and 12 start their runs from them:

    model, tok = load_sft()                        # chapter 7's SFT model (eval mode) and tokenizer
    result = run_from_sft(RunConfig(...))          # one run from a fresh copy of the checkpoint

An experiment runs several in worker processes (``grpo.pool.parallel_map`` over ``run_from_sft``:
``grpo.experiments.ch08_grpo_math.main_runs.run_and_store``); each starts from its own fresh copy,
so its result does not depend on which worker ran what.
"""
from __future__ import annotations

from pathlib import Path

import torch

from grpo.lm.data import PROTOCOL
from grpo.lm.model import load
from grpo.lm.eval import EvalConfig
from grpo.lm.rl import RunConfig, continued_sft, train_lm_grpo
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.train import SFTConfig

from . import DATA_DIR

MODELS_DIR = DATA_DIR / "models"
SFT_CHECKPOINT = "07_small_lm_sft.safetensors"
# its twin trained on answers alone
ANSWER_ONLY_CHECKPOINT = "07_small_lm_answer_only.safetensors"
SFT_TOKENIZER = "07_small_lm_tokenizer.json"


def load_sft(models_dir=MODELS_DIR, checkpoint=SFT_CHECKPOINT):
    """Chapter 7's SFT model (eval mode) and its tokenizer: ``(model, tok)``. ``checkpoint`` may
    also be ``ANSWER_ONLY_CHECKPOINT``, the same model trained on final answers alone."""
    model_path, tok_path = Path(models_dir) / checkpoint, Path(models_dir) / SFT_TOKENIZER
    if not model_path.exists() or not tok_path.exists():
        raise FileNotFoundError(f"no SFT checkpoint in {models_dir}: run "
                                "chapters/07_small_lm.ipynb (make execute "
                                "NB=chapters/07_small_lm.ipynb) to write it")
    return load(model_path), Tokenizer.load(tok_path)


def run_from_sft(cfg, sft_held_out: int = 0) -> dict:
    """One run in this process, from a fresh copy of chapter 7's SFT checkpoint: a ``RunConfig``
    is ``train_lm_grpo``, an ``SFTConfig`` ``continued_sft`` (scored on
    ``PROTOCOL.held_out(sft_held_out)`` when > 0). One torch thread."""
    if not isinstance(cfg, (RunConfig, SFTConfig)):
        raise ValueError(f"cfg must be a RunConfig or an SFTConfig, got {type(cfg).__name__}")
    torch.set_num_threads(1)
    model, tok = load_sft()
    train, test = PROTOCOL.splits()
    if isinstance(cfg, SFTConfig):
        return continued_sft(model, tok, train, test, cfg, EvalConfig(held_out=sft_held_out))
    return train_lm_grpo(model, tok, train, test, cfg)


__all__ = ["MODELS_DIR", "SFT_CHECKPOINT", "ANSWER_ONLY_CHECKPOINT", "SFT_TOKENIZER", "load_sft",
           "run_from_sft"]
