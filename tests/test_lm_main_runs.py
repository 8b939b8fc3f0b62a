"""Chapter 8's stored main runs (data/runs/08_grpo_math/main/, written by `python -m
grpo.experiments.ch08_grpo_math.main_runs`): the file holds the jobs the code defines, each main run's first
iterations and the control's first SFT steps re-run here are the stored ones, the stored weights score the
stored held-out outcomes, and a changed trainer fails the replay."""

import copy
from dataclasses import replace

import numpy as np
import pytest
import torch

from grpo.experiments.ch08_grpo_math import main_runs
from grpo.experiments.ch10_word_problems import long_runs as runs
from grpo.lm.data import PROTOCOL
from grpo.lm.eval import outcomes
from grpo.lm.rl import RunConfig, train_lm_grpo
from grpo.lm.train import sft
from grpo.runstore.models import load_sft
from grpo.book.results import mismatches
from grpo.runstore import without_timings

N = 2  # replayed iterations (and SFT steps)


@pytest.fixture(scope="module")
def stored():
    return main_runs.load_stored()


def _replayed_log(cfg: RunConfig, n: int = N) -> dict:
    torch.set_num_threads(1)
    model, tok = load_sft()
    train, val = PROTOCOL.splits()
    short = replace(cfg, iterations=n, evaluation=replace(
        cfg.evaluation, problems=1, at_start=False, final_samples=0, held_out=0))
    log = train_lm_grpo(model, tok, train, val, short)["log"]
    return without_timings(log)


def test_the_stored_jobs_are_the_ones_the_code_defines(stored):
    *grpo_runs, continued, baseline = stored
    assert len(grpo_runs) == len(main_runs.SEEDS)
    for run in grpo_runs:
        assert len(run["log"]["iteration"]) == main_runs.MAIN.iterations
        assert run["held_out"]["greedy"].shape == (runs.HELD_OUT,)
        assert run["held_out"]["sampled"].shape == (runs.HELD_OUT, main_runs.MAIN.evaluation.samples)
        assert run["final_correct"].shape == (
            main_runs.MAIN.evaluation.problems,
            main_runs.MAIN.evaluation.final_samples,
        )
    assert len(continued["history"]["loss"]) == main_runs.CONTINUED_SFT.steps
    assert continued["held_out"]["greedy"].shape == (runs.HELD_OUT,)
    assert baseline["evals"]["iteration"] == [0] and not baseline["log"]["iteration"]
    assert set(stored[0]["state"]) == set(load_sft()[0].state_dict())
    assert all(v.dtype == torch.float64 for v in stored[0]["state"].values())
    with pytest.raises(ValueError, match="runs must be"):
        main_runs.load_stored(main_runs.jobs()[:-1])
    with pytest.raises(ValueError, match="runs must be"):
        main_runs.load_stored([replace(j, seed=j.seed + 1) for j in main_runs.jobs()])


def test_the_main_runs_are_the_sweep_s_first_iterations(stored):
    """The main recipe is the lr sweep's 5e-5 arm stopped at 40 iterations: evaluations draw from
    their own generators, so its 40 logged iterations are the stored sweep runs' first 40, seed by
    seed, to the last bit (two files written by different jobs agree past the warm-up)."""
    for seed, run in zip(main_runs.SEEDS, stored):
        sweep = runs.load_run("grpo_lr5e-05" + (f"_seed{seed}" if seed else ""))["log"]
        n = main_runs.MAIN.iterations
        ours = without_timings(run["log"])
        theirs = {k: sweep[k][:n] for k in ours}
        assert not mismatches(theirs, ours, rtol=0, atol=0), "; ".join(
            mismatches(theirs, ours, rtol=0, atol=0)
        )


@pytest.mark.parametrize("seed", main_runs.SEEDS)
def test_each_main_run_s_first_iterations_are_what_the_code_produces(seed, stored):
    run = stored[main_runs.SEEDS.index(seed)]
    now = _replayed_log(replace(main_runs.MAIN, seed=seed))
    want = {k: run["log"][k][:N] for k in now}
    assert not mismatches(want, now), "; ".join(mismatches(want, now))


def test_a_changed_trainer_fails_the_replay(stored):
    """The replay can fail: the same run at twice the learning rate logs the same first iteration
    (its numbers are read before the update) and another second one."""
    now = _replayed_log(replace(main_runs.MAIN, lr=2 * main_runs.MAIN.lr))
    want = {k: stored[0]["log"][k][:N] for k in now}
    found = mismatches(want, now)
    assert found and all("[1]" in m for m in found), found


def test_the_control_s_first_steps_are_what_the_code_produces(stored):
    cfg = main_runs.CONTINUED_SFT
    assert N <= cfg.warmup  # after the warm-up the lr depends on the total steps
    torch.set_num_threads(1)
    model, tok = load_sft()
    train, val = PROTOCOL.splits()
    history = sft(model, tok, train, val, replace(cfg, steps=N, eval_every=N, eval_problems=1))
    want = stored[2]["history"]["loss"][:N]
    assert not mismatches(want, history["loss"]), "; ".join(mismatches(want, history["loss"]))


def test_the_stored_weights_score_the_stored_outcomes(stored):
    """The first 256 held-out problems, re-scored from grpo_seed0.safetensors: every generation
    batch is as it was, so greedy and sampled outcomes are equal to the bit."""
    torch.set_num_threads(1)
    model, tok = load_sft()
    model = copy.deepcopy(model)
    model.load_state_dict(stored[0]["state"])
    cfg, n = main_runs.MAIN, 256
    now = outcomes(
        model.eval(),
        tok,
        PROTOCOL.held_out(runs.HELD_OUT)[:n],
        cfg.evaluation.samples,
        cfg.evaluation.temperature,
        PROTOCOL.eval_seed,
        cfg.max_new_tokens,
    )
    held = stored[0]["held_out"]
    np.testing.assert_array_equal(now["greedy"], held["greedy"][:n])
    np.testing.assert_array_equal(now["sampled"], held["sampled"][:n])


def test_store_refuses_mismatched_lengths(tmp_path):
    with pytest.raises(ValueError, match="one entry per job"):
        main_runs.store([{}], main_runs.jobs(), [1.0], tmp_path)
    with pytest.raises(FileNotFoundError, match="main_runs"):
        main_runs.load_stored(directory=tmp_path)
