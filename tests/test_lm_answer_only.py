"""Chapter 7's stored answer-only control (``python -m grpo.lm.answer_only``): its first SFT steps
re-run here are the stored ones, a changed recipe is not, and the checkpoint on disk scores the
stored test outcomes to the bit."""
from dataclasses import replace

import numpy as np
import pytest
import torch

from grpo.lm import answer_only
from grpo.lm.train import load_sft
from grpo.results import mismatches

N = 2  # replayed SFT steps, inside the warm-up (after it the lr depends on the total steps)


@pytest.fixture(scope="module")
def record():
    return answer_only.load_record()


def _first_losses(cfg) -> list:
    torch.set_num_threads(1)
    assert N <= cfg.warmup
    return answer_only.train_model(replace(cfg, steps=N, eval_every=N, eval_problems=1))[2]["loss"]


def test_the_first_steps_are_what_the_code_produces(record):
    assert len(record["history"]["loss"]) == answer_only.SFT.steps
    now, want = _first_losses(answer_only.SFT), record["history"]["loss"][:N]
    assert not mismatches(want, now), "; ".join(mismatches(want, now))


def test_a_changed_recipe_fails_the_replay(record):
    now = _first_losses(replace(answer_only.SFT, lr=answer_only.SFT.lr / 2))
    assert mismatches(record["history"]["loss"][:N], now)


def test_the_checkpoint_scores_the_stored_outcomes(record):
    torch.set_num_threads(1)
    model, _ = answer_only.load_model()
    tok = load_sft()[1]
    now = answer_only.score(model, tok, answer_only.splits()[1])
    np.testing.assert_array_equal(now["greedy"], record["test"]["greedy"])
    np.testing.assert_array_equal(now["sampled"], record["test"]["sampled"])


def test_another_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match="cfg must be the config stored"):
        answer_only.load_record(replace(answer_only.SFT, steps=999))
    with pytest.raises(FileNotFoundError, match="answer_only"):
        answer_only.load_record(path=tmp_path / "none.json")
