"""Chapter 6's stored study (data/runs/06_lander/credit.json, written by `python -m
grpo.experiments.ch06_lander.credit_study`): each arm's first iteration, re-trained here, is the stored one,
and the stored file is the study the code defines (arms, configs, scale, seeds)."""
from dataclasses import asdict

import numpy as np
import pytest

from grpo.experiments.ch06_lander import credit_study as studies
from grpo.lander import DIAGNOSTICS, train


@pytest.fixture(scope="module")
def stored():
    return studies.load_study()


def test_the_stored_study_is_the_one_the_code_defines(stored):
    assert stored["scale"] == {**studies.SCALE, "seeds": list(studies.SEEDS)}
    assert stored["ladder"] == list(studies.LADDER) and stored["ablations"] == list(studies.ABLATIONS)
    assert sorted(stored["arms"]) == sorted(studies.ARMS)
    for arm, cfg in studies.ARMS.items():
        assert stored["arms"][arm]["config"] == asdict(cfg), arm
        assert sorted(stored["arms"][arm]["runs"]) == [str(s) for s in studies.SEEDS]
        for run in stored["arms"][arm]["runs"].values():
            assert run["env_steps"] >= studies.SCALE["total_steps"]
            assert len(run["first_iterations"]) == studies.FIRST_ITERATIONS


@pytest.mark.parametrize("arm", list(studies.ARMS))
def test_each_arm_s_first_iteration_is_what_the_code_produces(arm, stored):
    """Evaluation draws from its own generators, so a one-iteration run with tiny evaluations
    trains exactly as the stored run's first iteration did."""
    run = train(studies.spec(arm, 0, total_steps=1, eval_every=10**6, val_episodes=1,
                             test_episodes=1))
    row = {k: run.diagnostics[k][0] for k in DIAGNOSTICS}
    want = stored["arms"][arm]["runs"]["0"]["first_iterations"][0]
    assert set(want) == set(row)
    for k, v in row.items():
        w = np.nan if want[k] is None else want[k]
        np.testing.assert_allclose(v, w, rtol=1e-7, atol=1e-12, equal_nan=True, err_msg=f"{arm}: {k}")


def _tiny_study(final_det, sampled_landed=0.0):
    """A study of two arms (outcome and gae) on three seeds with the given argmax returns."""
    def run(det, ev):
        return {"final_det": det, "final_sampled": det / 2, "cpu_s": 60.0,
                "outcomes": {"final_det": {"landed": 1.0 if det > 100 else 0.0},
                             "final_sampled": {"landed": sampled_landed}},
                "sleep_gate": {"p_no_engine": None if det < -50 else 0.5},
                "explained_variance_median": ev}
    return {"scale": {"seeds": [0, 1, 2]}, "ladder": ["outcome", "gae"], "ablations": [],
            "arms": {arm: {"runs": {str(s): run(d, None if arm == "outcome" else 0.8)
                                    for s, d in enumerate(dets)}}
                     for arm, dets in final_det.items()}}


def test_read_arms_compares_each_arm_with_outcome_grpo_by_seed():
    study = _tiny_study({"outcome": [-60.0, -40.0, -20.0], "gae": [200.0, 230.0, 250.0]})
    got = studies.read_arms(study)
    assert list(got) == ["outcome", "gae"]
    out, gae = got["outcome"], got["gae"]
    assert out.minus_outcome is None and out.holm_p is None and not out.lifts
    assert gae.minus_outcome.per_seed == (260.0, 270.0, 270.0)
    assert gae.minus_outcome.mean == pytest.approx(800 / 3)
    assert gae.holm_p == pytest.approx(gae.minus_outcome.p_value) and gae.lifts
    assert (gae.landed_det, gae.landed_sampled) == (1.0, 0.0)
    assert gae.explained_variance == pytest.approx(0.8)
    assert out.p_no_engine_legs_down == 0.5 and out.explained_variance is None   # one seed known
    assert set(out.record()) == {"final_det", "final_det_ci95", "final_sampled", "landed_det",
                                 "landed_sampled", "p_no_engine_legs_down", "explained_variance"}
    assert gae.record()["minus_outcome_ci95"] == list(gae.minus_outcome.ci95)
    assert studies.training_cpu_s(study) == 6 * 60.0
    assert [r["final_det"] for r in studies.runs_of(study, "gae")] == [200.0, 230.0, 250.0]
    with pytest.raises(ValueError, match="arm must be"):
        studies.runs_of(study, "beta0")
    noisy = studies.read_arms(_tiny_study({"outcome": [-60.0, 40.0, -20.0],
                                           "gae": [-100.0, 230.0, 20.0]}))["gae"]
    assert noisy.minus_outcome.ci95[0] < 0 < noisy.minus_outcome.ci95[1] and not noisy.lifts


def test_read_arms_refuses_a_study_without_outcome_grpo():
    study = _tiny_study({"gae": [1.0, 2.0, 3.0]})
    study["ladder"] = ["gae"]
    with pytest.raises(ValueError, match="outcome"):
        studies.read_arms(study)


def test_the_stored_study_reads_as_the_chapter_says(stored):
    """Chapter 6's reading of the stored study: GAE from a critic that learns lifts outcome
    GRPO's argmax return and lands; the time-aware baseline does not."""
    got = studies.read_arms(stored)
    assert list(got) == [*studies.LADDER, *studies.ABLATIONS]
    assert got["gae_scaled"].lifts and not got["value_time_scaled"].lifts
    assert got["gae_scaled"].landed_det > 0.5 > got["outcome"].landed_det
