"""Chapter 7's answer-only control, stored: chapter 7's model trained from the same initialisation,
with the same SFT budget, on final answers alone (``data.answer_only``).

The same bits on every CPU (the model computes in float64), and minutes of CPU (its record's
``cpu_s``), so the chapter reads it: ``python -m grpo.experiments.ch07_small_lm.answer_only`` (or
``make full``) writes

    data/models/07_small_lm_answer_only.safetensors   the weights (float32, as every checkpoint)
    data/runs/07_small_lm/answer_only.json           its config, SFT log and CPU seconds, and its
                                                     outcomes on the test split, scored from the
                                                     checkpoint as stored (``score_answer_only``)

``load_answer_only_model(cfg)`` returns the model and the record, and refuses a record written for
another config.
``tests/test_lm_answer_only.py`` re-runs the first SFT steps against the stored log and re-scores
test problems from the checkpoint.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

from grpo.files import json_ready
from grpo.seeding import seeded_generator
from grpo.runstore import bits, command_line, cpu_timed, read_json, run_dir, unbits, write_json

from grpo.lm.data import PROTOCOL, answer_only
from grpo.lm.eval import completions, rewards
from grpo.lm.model import GPT, load, save
from grpo.experiments.ch07_small_lm import sft_run
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.train import SFTConfig, sft
from grpo.runstore.models import ANSWER_ONLY_CHECKPOINT, MODELS_DIR, SFT_CHECKPOINT, SFT_TOKENIZER

# Chapter 7's SFT budget and initialisation seed: the worked-solution run's (``sft_run``).
SFT, INIT_SEED = sft_run.SFT, sft_run.INIT_SEED
MAX_NEW_TOKENS = 8  # "#### 24" and <eos> fit
SAMPLES, TEMPERATURE, SAMPLE_SEED = 8, 0.7, 0


MODULE = "grpo.experiments.ch07_small_lm.answer_only"

__all__ = [
    "SFT",
    "INIT_SEED",
    "splits",
    "train_model",
    "score_answer_only",
    "train_and_store",
    "load_record",
    "load_answer_only_model",
]


RECORD = "answer_only.json"


def stored_path() -> Path:
    return run_dir("07_small_lm") / RECORD


def splits() -> tuple[list, list]:
    """Chapter 7's split, each solution cut to its final answer."""
    train, test = PROTOCOL.splits()
    return answer_only(train), answer_only(test)


def train_model(cfg: SFTConfig = SFT, models_dir: Path = MODELS_DIR):
    """``(model, tok, history)``: a fresh model of chapter 7's shape (seeded ``INIT_SEED``), trained
    with ``sft`` on the answer-only split, with chapter 7's tokenizer."""
    tok = Tokenizer.load(Path(models_dir) / SFT_TOKENIZER)
    shape = load(Path(models_dir) / SFT_CHECKPOINT).cfg
    train, test = splits()
    torch.manual_seed(INIT_SEED)
    model = GPT(shape)
    return model, tok, sft(model, tok, train, test, cfg)


def score_answer_only(model, tok, problems) -> dict:
    """Greedy and sampled (``SAMPLES`` at ``TEMPERATURE``, a generator seeded ``SAMPLE_SEED``)
    verifier rewards, as chapter 7 scores the control: ``{"greedy": (P,), "sampled": (P, n)}``."""
    greedy_texts = completions(model, tok, problems, max_new_tokens=MAX_NEW_TOKENS)
    greedy = rewards(problems, greedy_texts)[:, 0]
    texts = completions(
        model,
        tok,
        problems,
        n=SAMPLES,
        temperature=TEMPERATURE,
        generator=seeded_generator(SAMPLE_SEED),
        max_new_tokens=MAX_NEW_TOKENS,
    )
    return {"greedy": greedy, "sampled": rewards(problems, texts)}


def train_and_store(
    cfg: SFTConfig = SFT, models_dir: Path = MODELS_DIR, directory: Path | None = None
) -> Path:
    """Train, write the checkpoint, score it as stored on the test split, write the record."""
    torch.set_num_threads(1)
    (history, s), cpu_s = cpu_timed(_train_and_score, cfg, Path(models_dir))
    record = {
        "config": json_ready(asdict(cfg)),
        "init_seed": INIT_SEED,
        "history": json_ready(history),
        "test": {"greedy": bits(s["greedy"]), "sampled": bits(s["sampled"]), "samples": SAMPLES},
        "cpu_s": round(cpu_s, 1),
    }
    return write_json(Path(directory) / RECORD if directory else stored_path(), record)


def _train_and_score(cfg: SFTConfig, models_dir: Path) -> tuple:
    model, tok, history = train_model(cfg, models_dir)
    save(model, models_dir / ANSWER_ONLY_CHECKPOINT)
    stored = load(models_dir / ANSWER_ONLY_CHECKPOINT)
    return history, score_answer_only(stored, tok, splits()[1])


def load_record(cfg: SFTConfig = SFT, directory: Path | None = None) -> dict:
    """The stored record, with its test outcomes as 0/1 arrays; ``cfg`` must be the stored one."""
    path = Path(directory) / RECORD if directory else stored_path()
    record = read_json(path, MODULE)
    if record["config"] != json_ready(asdict(cfg)):
        raise ValueError(
            f"cfg must be the config stored in {path}: re-run `python -m {MODULE}` after "
            "changing it"
        )
    t = record["test"]
    record["test"] = {"greedy": unbits(t["greedy"]), "sampled": unbits(t["sampled"], t["samples"])}
    return record


def load_answer_only_model(cfg: SFTConfig = SFT, models_dir: Path = MODELS_DIR):
    """``(model, record)``: the stored checkpoint (computing in float64), ``load_record(cfg)``."""
    record = load_record(cfg)
    return load(Path(models_dir) / ANSWER_ONLY_CHECKPOINT), record


def main(argv=None) -> None:
    command_line(MODULE, __doc__, train_and_store, argv)


if __name__ == "__main__":
    main()
