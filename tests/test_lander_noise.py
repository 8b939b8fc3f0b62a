"""Chapter 6's gradient-noise study (grpo.experiments.ch06_lander.gradient_noise): the measures tell signal
from noise, and the stored file is what the code produces (its first checkpoint's first batch, re-derived)."""
import numpy as np
import pytest

from grpo.experiments.ch06_lander import gradient_noise as noise
from grpo.lander import RunSpec, train


def test_pure_noise_has_no_signal_and_a_shared_direction_does():
    rng = np.random.default_rng(0)
    signal_only_noise = [noise.noise_measures(rng.normal(size=(8, 500)))["signal"] for _ in range(400)]
    # unbiased: |E g|^2 = 0 here, and the estimate averages to 0 within its standard error
    assert abs(np.mean(signal_only_noise)) < 3 * np.std(signal_only_noise) / np.sqrt(400)
    mu = np.full(500, 0.1)                                      # |mu|^2 = 5, per-batch noise 500
    est = [noise.noise_measures(mu + rng.normal(size=(8, 500)))["signal"] for _ in range(400)]
    assert abs(np.mean(est) - 5.0) < 3 * np.std(est) / np.sqrt(400)
    clean = noise.noise_measures(mu + 1e-3 * rng.normal(size=(8, 500)))
    assert clean["snr"] > 1e3 and clean["cosine"] > 0.99
    m = noise.noise_measures(rng.normal(size=(8, 500)))
    assert abs(m["cosine"]) < 0.05 and m["snr"] < 0.5


def test_the_jackknife_interval_holds_the_estimate_and_widens_with_fewer_batches():
    rng = np.random.default_rng(1)
    g = 0.2 + rng.normal(size=(16, 200))
    wide, narrow = noise.jackknife(g[:4]), noise.jackknife(g)
    full = noise.noise_measures(g)
    assert narrow["snr_ci95"][0] < full["snr"] < narrow["snr_ci95"][1]
    assert np.diff(wide["cosine_ci95"])[0] > np.diff(narrow["cosine_ci95"])[0]


def test_a_difference_is_significant_only_when_the_intervals_are_far_apart():
    row = {"grad_norms": [1.0] * 8}
    a = {**row, "snr": 7.0, "snr_ci95": [4.0, 10.0]}
    b = {**row, "snr": 1.0, "snr_ci95": [0.0, 2.0]}
    d = noise.snr_difference(a, b)
    assert d["diff"] == 6.0 and d["ci95"][0] > 0 and d["p_value"] < 0.01
    close = noise.snr_difference({**row, "snr": 1.5, "snr_ci95": [0.5, 2.5]}, b)
    assert close["ci95"][0] < 0 < close["ci95"][1] and close["p_value"] > 0.05


@pytest.mark.parametrize("bad", [np.zeros((1, 5)), np.zeros(5), np.full((3, 2), np.nan)])
def test_bad_gradients_are_refused(bad):
    with pytest.raises(ValueError, match="grads"):
        noise.noise_measures(bad)


def test_too_few_batches_for_the_jackknife_and_an_unknown_method_are_refused():
    with pytest.raises(ValueError, match="K >= 3"):
        noise.jackknife(np.ones((2, 4)))
    with pytest.raises(ValueError, match="method"):
        noise.measure_gradient_noise("sac")


def test_the_stored_study_is_the_code_s():
    study = noise.load_study()
    assert sorted(study["methods"]) == sorted(noise.METHODS)
    assert study["scale"]["checkpoints"] == list(noise.CHECKPOINTS)
    assert study["scale"]["batches"] == noise.BATCHES
    for m in study["methods"].values():
        assert [c["env_steps"] >= t for c, t in zip(m["checkpoints"], noise.CHECKPOINTS)] == [True] * 3
        for c in m["checkpoints"]:
            assert len(c["grad_norms"]) == len(c["batch_steps"]) == noise.BATCHES
            assert c["snr_ci95"][0] <= c["snr"] <= c["snr_ci95"][1]


@pytest.mark.parametrize("method", ["grpo", "ppo"])
def test_the_first_batch_gradient_replays(method):
    """Train to the first checkpoint (the same run as the study's, stopped there), draw the first
    batch from it: the gradient's norm and the batch's size are the stored ones."""
    stored = noise.load_study()["methods"][method]["checkpoints"][0]
    cfg = noise.METHODS[method]
    run = train(RunSpec(cfg.algo, noise.SEED, noise.CHECKPOINTS[0], noise.SCALE["eval_every"], 1, 1,
                        config=cfg))
    steps, actor = run.snapshots[-1]
    critic = run.critic_snapshots[-1][1] if run.critic_snapshots else None
    assert steps == stored["env_steps"]
    g, n = noise.batch_gradient(cfg, actor, critic, np.random.default_rng([noise.SEED, steps, 0]))
    assert n == stored["batch_steps"][0]
    assert np.linalg.norm(g) == pytest.approx(stored["grad_norms"][0], rel=1e-9)
