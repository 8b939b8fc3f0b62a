"""Chapter 7's stored SFT runs (``python -m grpo.experiments.ch07_small_lm.sft_run`` and its answer-only
control, ``python -m grpo.experiments.ch07_small_lm.answer_only``): their first steps re-run here are the
stored ones, a changed recipe is not; the float32 checkpoint chapter 8 starts from is the stored float64
weights rounded, and the store/load round trip is exact."""
import shutil
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file

from grpo.experiments.ch07_small_lm import answer_only, sft_run
from grpo.lm.model import GPTConfig
from grpo.runstore.models import MODELS_DIR, SFT_CHECKPOINT, SFT_TOKENIZER
from grpo.book.results import mismatches

N = 2  # replayed SFT steps, inside the warm-up (after it the lr depends on the total steps)
STORED = {"sft_run": sft_run, "answer_only": answer_only}  # chapter 7's two stored SFT runs


def _first_losses(module, cfg) -> list:
    torch.set_num_threads(1)
    assert N <= cfg.warmup
    return module.train_model(replace(cfg, steps=N, eval_every=N, eval_problems=1))[2]["loss"]


@pytest.mark.parametrize("name", list(STORED))
def test_the_first_steps_are_what_the_code_produces(name):
    module = STORED[name]
    history = module.load_record()["history"]
    assert len(history["loss"]) == module.SFT.steps
    assert history["eval_step"][-1] == module.SFT.steps
    now, want = _first_losses(module, module.SFT), history["loss"][:N]
    assert not mismatches(want, now), "; ".join(mismatches(want, now))


@pytest.mark.parametrize("name", list(STORED))
def test_a_changed_recipe_fails_the_replay(name):
    module = STORED[name]
    now = _first_losses(module, replace(module.SFT, lr=module.SFT.lr / 2))
    assert mismatches(module.load_record()["history"]["loss"][:N], now)


def test_the_checkpoint_is_the_stored_weights_in_float32():
    stored = load_file(str(sft_run.stored_dir() / sft_run.WEIGHTS))
    checkpoint = load_file(str(MODELS_DIR / SFT_CHECKPOINT))
    assert stored.keys() == checkpoint.keys()
    for k, v in stored.items():
        assert v.dtype == torch.float64
        assert torch.equal(v.to(torch.float32), checkpoint[k]), k


def test_load_is_what_was_stored(tmp_path):
    torch.set_num_threads(1)
    cfg = replace(sft_run.SFT, steps=3, eval_every=3, eval_problems=2)
    models = tmp_path / "models"  # the tokenizer it reads, and where it writes the checkpoint
    models.mkdir()
    shutil.copy(MODELS_DIR / SFT_TOKENIZER, models)
    assert sft_run.train_and_store(cfg, models_dir=models, directory=tmp_path) == tmp_path
    assert (models / SFT_CHECKPOINT).exists()
    model, history = sft_run.load_sft_model(cfg, directory=tmp_path)
    assert history["step"] == [1, 2, 3] and len(history["eval_greedy"]) == 1
    trained, _, again = sft_run.train_model(cfg)
    assert again == history
    for k, v in trained.state_dict().items():
        assert torch.equal(v, model.state_dict()[k]), k
    assert not model.training


def test_another_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match="cfg must be the config stored"):
        sft_run.load_record(replace(sft_run.SFT, steps=999))
    with pytest.raises(ValueError, match="model_cfg must be the model shape"):
        sft_run.load_sft_model(model_cfg=GPTConfig(vocab_size=7))
    with pytest.raises(FileNotFoundError, match="sft_run"):
        sft_run.load_record(directory=tmp_path)
