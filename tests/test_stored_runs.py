"""The stored runs (``data/runs/``, written by ``python -m grpo.experiments.ch10_word_problems.long_runs``,
``make full``): each one's first iteration (one run's, past its warm-up) re-run now must be the same
result as its stored log (``grpo.book.results.mismatches``: equal counts, floats within 1e-9, on any
CPU), its config must be the registry's, and its per-problem outcomes must be complete."""
import json

import numpy as np
import pytest

from grpo.experiments.ch10_word_problems import long_runs as runs
from grpo.lm.data import PROTOCOL, step_count
from grpo.book.results import RTOL, mismatches
from grpo.runstore import bits, unbits

STORED = sorted(p.stem for p in runs.RUN_FOLDER.glob("*.json"))
REPLAYED = [n for n in STORED if runs.RUNS[n].kind != "evaluate"]


def test_every_registry_entry_is_stored():
    assert set(runs.RUNS) <= set(STORED), f"run `python -m {runs.MODULE}` for {set(runs.RUNS) - set(STORED)}"
    assert set(STORED) <= set(runs.RUNS), f"stored, not in the registry: {set(STORED) - set(runs.RUNS)}"


@pytest.mark.parametrize("name", REPLAYED)
def test_stored_log_is_what_the_code_produces(name):
    """Each run's first iteration: its samples, rewards, advantages, loss and diagnostics under its
    own config (10 CPU-seconds; two iterations took 18, and ``make test`` holds to 30 minutes). The
    update, which the second iteration would see, is replayed past the warm-up by
    ``test_a_run_replays_past_its_warm_up`` and shown to catch a tiny change by
    ``test_a_changed_code_fails_the_replay``. Each replay is its own test, so pytest-xdist spreads
    them over the workers."""
    stored, now = runs.replay(name, n=1)
    assert stored and all(len(v) == 1 for v in stored.values())
    assert not mismatches(stored, now), f"{name}: " + "; ".join(mismatches(stored, now))


@pytest.mark.parametrize("name", STORED)
def test_stored_config_is_the_registry_s(name):
    run = runs.load_run(name)
    spec = runs.RUNS[name]
    assert (run["kind"], run["start"]) == (spec.kind, spec.start)
    assert (None if run["config"] is None else runs.stored_config(run)) == spec.config


@pytest.mark.parametrize("name", STORED)
def test_held_out_outcomes_are_complete(name):
    h = runs.load_run(name)["held_out"]
    problems = PROTOCOL.held_out(runs.HELD_OUT)
    assert len(h["greedy"]) == len(problems) and h["steps"] == "".join(str(step_count(p)) for p in problems)
    assert unbits(h["sampled"], h["samples"]).shape == (len(problems), h["samples"])
    assert set(h["greedy"] + h["sampled"] + h["annotations_ok"]) <= {"0", "1"}


def test_a_run_replays_past_its_warm_up():
    """One run (the chosen lr's, seed 0) re-run two iterations past its lr warm-up, where the lr is
    constant and every iteration's step is full size: still the stored log."""
    name = "grpo_lr5e-05"
    n = runs.RUNS[name].config.warmup + 2
    stored, now = runs.replay(name, n=n)
    assert all(len(v) == n for v in stored.values())
    assert not mismatches(stored, now), "; ".join(mismatches(stored, now))


RESCORED = [n for n in STORED if runs.RUNS[n].kind == "evaluate" or runs.RUNS[n].save_as]


@pytest.mark.parametrize("name", RESCORED)
def test_stored_outcomes_are_what_the_model_scores(name):
    """Every stored run whose model is on disk (the start, the long SFT, the variants' reference GRPO
    runs): its first 256 held-out outcomes, scored again now from the checkpoint, are the stored
    ones to the bit (chapters 8 and 10 pair their runs against these)."""
    stored, now = runs.rescore(name, n=256)
    assert stored["greedy"] and now == stored


def test_rescore_takes_only_a_model_on_disk_and_whole_batches():
    with pytest.raises(ValueError, match="no model on disk"):
        runs.rescore("grpo_lr5e-05")
    with pytest.raises(ValueError, match="multiple of 256"):
        runs.rescore("start", n=100)


def test_a_changed_log_fails_the_replay(tmp_path, monkeypatch):
    """The replay compares: a stored entropy moved by 100 times the tolerance is caught (one iteration
    is enough to test the comparison, at half the CPU of two)."""
    name = next(n for n in REPLAYED if runs.RUNS[n].kind == "grpo")
    run = runs.load_run(name)
    run["log"]["entropy_mean"][0] *= 1 + 100 * RTOL
    (tmp_path / f"{name}.json").write_text(json.dumps(run))
    monkeypatch.setattr(runs, "RUN_FOLDER", tmp_path)
    stored, now = runs.replay(name, n=1)
    assert [m for m in mismatches(stored, now) if m.startswith("entropy_mean[0]")]


def test_a_changed_code_fails_the_replay(monkeypatch):
    """A change to the code far smaller than any real one (Adam's beta2 0.99 -> 0.9899, which first
    acts on the second step) moves the third iteration's floats by far more than the tolerance."""
    import grpo.lm.rl as rl
    name = next(n for n in REPLAYED if runs.RUNS[n].kind == "grpo")
    adam = rl.lm_adam                   # the loop's one Adam, its betas bound when it was defined

    def nudged(params, lr, betas=rl.ADAM_BETAS):
        assert betas == (0.9, 0.99)     # the GPT loop's settings, the ones this test nudges
        return adam(params, lr, (0.9, 0.9899))
    monkeypatch.setattr(rl, "lm_adam", nudged)
    stored, now = runs.replay(name, n=3)
    assert [m for m in mismatches(stored, now) if "[2]" in m]


def test_bits_round_trip():
    a = np.array([[1, 0, 0, 1], [0, 0, 1, 1]])
    assert (unbits(bits(a), 4) == a).all() and (unbits("0110") == [0, 1, 1, 0]).all()


def test_missing_run_and_bad_names_are_clear(monkeypatch, tmp_path):
    monkeypatch.setattr(runs, "RUN_FOLDER", tmp_path)
    with pytest.raises(FileNotFoundError, match=f"python -m {runs.MODULE} start"):
        runs.load_run("start")
    with pytest.raises(SystemExit):
        runs.main(["no_such_run"])
    with pytest.raises(SystemExit):
        runs.main([])
