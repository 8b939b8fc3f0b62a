"""Chapter 6's fifteen stored runs (data/runs/06_lander/main/, written by `python -m
grpo.experiments.ch06_lander.main_runs`): the file holds the runs the code defines, each algorithm's first
iteration re-trained here is the stored one, and the stored weights are the ones that fly the stored test
returns."""
import dataclasses

import numpy as np
import pytest

from grpo import lander
from grpo.experiments.ch06_lander import main_runs


@pytest.fixture(scope="module")
def stored():
    return {(r.algo, r.seed): r for r in main_runs.load_stored()}


def test_the_stored_runs_are_the_ones_the_code_defines(stored):
    assert sorted(stored) == sorted((s.algo, s.seed) for s in main_runs.specs())
    for (algo, _), run in stored.items():
        assert run.env_steps >= main_runs.ENV_STEPS[algo]
        assert len(run.test_det) == main_runs.TEST_EPISODES
        assert bool(run.snapshots) == (algo in main_runs.SNAPSHOTS_KEPT)
        # what train returns for its family (trainers.result_type), less what is not stored
        assert type(run) is lander.result_type(algo), algo
        assert run.train_returns is None and run.critic_snapshots is None, algo
    with pytest.raises(ValueError, match="runs must be"):
        main_runs.load_stored(main_runs.specs()[:-1])
    other = [dataclasses.replace(s, seed=s.seed + 1) for s in main_runs.specs()]
    with pytest.raises(ValueError, match="runs must be"):
        main_runs.load_stored(other)


@pytest.mark.parametrize("algo", list(main_runs.ENV_STEPS))
def test_each_algorithm_s_first_iteration_is_what_the_code_produces(algo, stored):
    """Evaluation draws from its own generators, so a one-iteration run with tiny evaluations
    trains exactly as the stored run's first iteration did."""
    spec = dataclasses.replace(next(s for s in main_runs.specs() if s.algo == algo and s.seed == 0),
                               total_steps=1, eval_every=10**6, val_episodes=1, test_episodes=1)
    run = lander.train(spec)
    want = stored[(algo, 0)]
    assert run.iterations == 1 and want.iterations > 1
    for log in ("diagnostics", "gradient_agreement"):
        if not hasattr(run, log):       # GRPO logs its probe with its diagnostics
            continue
        got, stored_log = getattr(run, log), getattr(want, log)
        assert set(got) == set(stored_log), (algo, log)
        for k, values in got.items():
            if not values:   # A2C's one-minibatch epochs measure no agreement
                assert not stored_log[k], (algo, log, k)
                continue
            np.testing.assert_allclose(values[0], stored_log[k][0], rtol=1e-9, atol=1e-12, equal_nan=True,
                                       err_msg=f"{algo}: {log}[{k!r}][0]")


def test_the_stored_final_weights_fly_the_stored_returns(stored):
    """The final policy of one run, rebuilt from weights.npz, flies its first test starts by argmax
    to the stored returns."""
    run = stored[("grpo", 0)]
    actor = lander.load_actor(run.final_state)
    n = 3
    test = lander.Evaluator(range(lander.TEST_SEED0, lander.TEST_SEED0 + n), rng_seed=run.seed)
    assert test.play(actor, True).returns.tolist() == run.final_det[:n]


def test_the_published_scale_command_writes_its_runs(tmp_path):
    """``python -m grpo.experiments.ch06_lander.published_scale`` (chapter 6 prints it) runs and
    writes one JSON record per seed."""
    import json

    from grpo.experiments.ch06_lander import published_scale
    out = tmp_path / "ppo.json"
    published_scale.main(["--algo", "ppo", "--seeds", "1", "--steps", "4096", "--eval-every",
                          "4096", "--out", str(out)])
    runs = json.loads(out.read_text())
    assert len(runs) == 1 and runs[0]["test_det"] and "actor_state" not in runs[0]


def test_by_algo_groups_the_runs_in_algo_names_order(stored):
    runs = main_runs.by_algo(list(stored.values()))
    assert list(runs) == list(main_runs.ALGO_NAMES) == list(main_runs.ENV_STEPS)
    assert all([r.seed for r in rs] == list(main_runs.SEEDS) for rs in runs.values())


def test_diagnostics_vs_published_says_where_ours_falls():
    ours = {"start_entropy_mean": 0.5, "kl_median": 0.015, "clip_fraction_median": 0.01,
            "clip_fraction_study_median": 0.05, "group_return_std_median": 41}
    got = main_runs.diagnostics_vs_published(ours)
    assert list(got) == list(main_runs.PUBLISHED_DIAGNOSTICS)
    assert [v["verdict"] for v in got.values()] == ["below", "inside", "above", "inside"]
    clip = got["median clip fraction"]
    assert (clip["ours"], clip["ours_study_definition"], clip["published"]) == (0.01, 0.05,
                                                                                [0.028, 0.042])


def test_entropy_on_ppo_states_measures_every_policy_on_ppos_states(monkeypatch, stored):
    """On a shortened test set: PPO's own final policy measured on its own states, and a uniform
    policy at log 4 there."""
    monkeypatch.setattr(main_runs, "TEST_EPISODES", 1)
    ppo = [stored[("ppo", 0)]]
    uniform = dataclasses.replace(stored[("grpo", 0)], final_state={
        k: v * 0 for k, v in stored[("grpo", 0)].final_state.items()})
    got = main_runs.entropy_on_ppo_states({"ppo": ppo, "flat": [uniform]})
    assert got["flat"] == pytest.approx(np.log(4))
    test = lander.Evaluator(range(lander.TEST_SEED0, lander.TEST_SEED0 + 1), rng_seed=0)
    actor = lander.load_actor(ppo[0].final_state)
    assert got["ppo"] == pytest.approx(lander.visited_state_entropy(
        actor, test.play(actor, greedy=False)))
    with pytest.raises(ValueError, match="PPO"):
        main_runs.entropy_on_ppo_states({"grpo": [uniform]})
