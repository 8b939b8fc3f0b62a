"""Chapter 7's stored answer-only control (``python -m grpo.experiments.ch07_small_lm.answer_only``): the
checkpoint on disk scores the stored test outcomes to the bit. Its first SFT steps are replayed with chapter
7's SFT run's, in ``test_lm_sft_run.py``."""
from dataclasses import replace

import numpy as np
import pytest
import torch

from grpo.experiments.ch07_small_lm import answer_only
from grpo.runstore.models import load_sft


@pytest.fixture(scope="module")
def record():
    return answer_only.load_record()


def test_the_checkpoint_scores_the_stored_outcomes(record):
    torch.set_num_threads(1)
    model, _ = answer_only.load_answer_only_model()
    tok = load_sft()[1]
    now = answer_only.score_answer_only(model, tok, answer_only.splits()[1])
    np.testing.assert_array_equal(now["greedy"], record["test"]["greedy"])
    np.testing.assert_array_equal(now["sampled"], record["test"]["sampled"])


def test_another_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match="cfg must be the config stored"):
        answer_only.load_record(replace(answer_only.SFT, steps=999))
    with pytest.raises(FileNotFoundError, match="answer_only"):
        answer_only.load_record(directory=tmp_path)
