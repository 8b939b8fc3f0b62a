"""Chapter 12's stored runs (grpo.experiments.ch12_practice.failure_runs): the files hold exactly
the jobs the chapter builds, a job re-run reproduces its stored log, and the ratio-level config
reaches the loss (a config whose ratio_level never reached grpo_loss would train token ratios)."""
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from grpo.experiments.ch12_practice import failure_runs as F
from grpo.lm import addition as A
from grpo.runstore import addition_jobs as J
from grpo.lm.grpo import grpo_loss
from grpo.lm.rl import RunConfig, train_lm_grpo


@pytest.fixture(scope="module")
def starts():
    return F.addition_starts()


def test_the_stored_grids_hold_the_chapters_jobs(starts):
    _, _, start, low = starts
    assert (start, low) == (550, 190)                 # chapter 9's start, and its first level
    for name, jobs in F.grids(start, low).items():
        stored = json.loads((F.RUN_FOLDER / f"{name}.json").read_text())
        assert stored["jobs"] == [repr(j) for j in jobs], name
    stored = json.loads((F.RUN_FOLDER / "aggregation.json").read_text())
    assert stored["keys"]["jobs"] == [list(j) for j in F.aggregation_jobs()]
    assert [r["loss_type"] for r in stored["runs"]] == [t for t, _ in F.aggregation_jobs()]


@pytest.mark.parametrize("name, index", [("ratio_level", 3), ("dynamic", 4), ("truncation", 0)])
def test_a_stored_job_replays_its_first_iterations(starts, name, index):
    _, states, start, low = starts
    job = F.grids(start, low)[name][index]
    stored = F.stored_grid(name, F.grids(start, low)[name], states)[index]["log"]
    tok = A.addition_tokenizer()
    train, val, _ = A.make_addition_splits()
    model = J.addition_model(tok)
    model.load_state_dict(states[job.start])
    log = train_lm_grpo(model, tok, train, val, replace(job.cfg, iterations=2))["log"]   # in-process
    for key in ("reward_mean", "clip_fraction", "degenerate_fraction", "kl_mean"):
        np.testing.assert_allclose(log[key], stored[key][:2], rtol=1e-9, atol=1e-12, err_msg=key)


def test_an_aggregation_run_replays_its_first_iterations(monkeypatch):
    stored = json.loads((F.RUN_FOLDER / "aggregation.json").read_text())["runs"]
    monkeypatch.setattr(F, "WORD", replace(F.WORD, iterations=2))
    monkeypatch.setattr(F, "LENGTH_PROBLEMS", 2)
    out = F._aggregation_job(("dr_grpo", 0))
    want = next(r for r in stored if r["loss_type"] == "dr_grpo" and r["seed"] == 0)["log"]
    for key in ("reward_mean", "clip_fraction", "completion_length_mean", "kl_mean"):
        np.testing.assert_allclose(out["log"][key], want[key][:2], rtol=1e-9, atol=1e-12,
                                   err_msg=key)
    assert np.array(out["lengths"]).shape == (2, F.LENGTH_SAMPLES)


def test_the_ratio_level_reaches_the_loss():
    cfg = RunConfig(ratio_level="sequence", eps_low=3e-4, eps_high=4e-4)
    assert cfg.loss_options()["ratio_level"] == "sequence"
    assert RunConfig().loss_options()["ratio_level"] == "token"
    assert {j.cfg.ratio_level for j in F.grids(550, 250)["ratio_level"]} == {"token", "sequence"}
    with pytest.raises(ValueError, match="ratio_level"):
        RunConfig(ratio_level="per-word")
    torch.manual_seed(0)
    logp_old = -torch.rand(4, 3, dtype=torch.float64)
    logp = logp_old + 0.3 * torch.randn(4, 3, dtype=torch.float64)
    mask, rewards = torch.ones(4, 3), torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    loss = {level: grpo_loss(logp, logp_old, None, mask, rewards,      # a RunConfig is a LossOptions
                             RunConfig(beta=0.0, ratio_level=level))[0]
            for level in ("token", "sequence")}
    assert not torch.isclose(loss["token"], loss["sequence"])


def test_lengths_and_verdicts_shapes():
    from grpo.lm.data import PROTOCOL
    from grpo.runstore.models import load_sft
    model, tok = load_sft()
    L, right = F.lengths_and_verdicts(model, tok, PROTOCOL.held_out(3), 2, seed=0)
    assert L.shape == right.shape == (3, 2) and (L >= 1).all() and set(np.unique(right)) <= {0, 1}
