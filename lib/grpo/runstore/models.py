"""The checkpoints the chapters start from, in ``data/models/``, and runs that start from them.

Chapter 7 trains a small GPT on worked solutions and writes it here
(``grpo.experiments.ch07_small_lm.sft_run``), with its twin trained on final answers alone
(``answer_only``) and their tokenizer; chapters 8, 10 and 12 start their runs from them:

    model, tok = load_sft()                        # chapter 7's SFT model (eval mode) and tokenizer
    results = run_lm_configs([RunConfig(...), SFTConfig(...)], workers=2)

``run_lm_configs`` runs each config in its own process from a fresh copy of the checkpoint
(``run_from_sft``), so its results do not depend on which worker ran what.
"""
from __future__ import annotations

from pathlib import Path

import torch

from grpo.lm.data import PROTOCOL, answer_only
from grpo.lm.model import load
from grpo.lm.rl import RunConfig, continued_sft, train_lm_grpo
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.train import SFTConfig
from grpo.pool import parallel_map

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
    """One of ``run_lm_configs``'s jobs, in this process: ``cfg`` (a ``RunConfig`` or an
    ``SFTConfig``) from chapter 7's checkpoint, as ``run_lm_configs`` describes."""
    torch.set_num_threads(1)
    short = getattr(cfg, "answer_format", "worked") == "answer_only"
    model, tok = load_sft(checkpoint=ANSWER_ONLY_CHECKPOINT if short else SFT_CHECKPOINT)
    train, test = PROTOCOL.splits()
    if short:
        train, test = answer_only(train), answer_only(test)
    if isinstance(cfg, SFTConfig):
        return continued_sft(model, tok, train, test, cfg, held_out=sft_held_out)
    return train_lm_grpo(model, tok, train, test, cfg)


def _run_packed_job(job: tuple) -> dict:
    return run_from_sft(*job)


def run_lm_configs(configs, workers: int = 2, sft_held_out: int = 0) -> list[dict]:
    """From chapter 7's SFT checkpoint (or, with ``answer_format="answer_only"``, its answer-only
    twin on answer-only problems), run each config (a ``RunConfig``: ``train_lm_grpo``; an
    ``SFTConfig``: ``continued_sft``, scored on ``PROTOCOL.held_out(sft_held_out)`` when > 0) in
    ``workers`` spawned processes with one torch thread each; results in config order, independent
    of which worker ran what."""
    if not all(isinstance(c, (RunConfig, SFTConfig)) for c in configs):
        raise ValueError("each config must be a RunConfig or an SFTConfig")
    return parallel_map(_run_packed_job, [(c, sft_held_out) for c in configs], workers,
                        desc="GRPO runs")


__all__ = ["MODELS_DIR", "SFT_CHECKPOINT", "ANSWER_ONLY_CHECKPOINT", "SFT_TOKENIZER", "load_sft",
           "run_from_sft", "run_lm_configs"]
