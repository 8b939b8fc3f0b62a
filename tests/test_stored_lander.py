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
