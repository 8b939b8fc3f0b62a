"""Chapter 9 stores the per-problem outcomes its paired intervals come from; recomputing the lifts
from them must give the registry's figures (so a reader can check every CI without re-running)."""
import json
from pathlib import Path

import numpy as np
import pytest

from grpo.stats import paired_lift

REGISTRY = Path(__file__).resolve().parents[1] / "data" / "results" / "09_grpo_addition.json"


def greedy(bits):
    return np.array([int(c) for c in bits], dtype=float)


def sampled(letters, n=16):
    return np.array([ord(c) - ord("a") for c in letters], dtype=float) / n


@pytest.fixture(scope="module")
def addition():
    return json.loads(REGISTRY.read_text())["addition"]


def test_the_greedy_lift_and_its_interval_come_from_the_stored_outcomes(addition):
    o = addition["outcomes"]
    lift = paired_lift(greedy(o["start_greedy"]), np.stack([greedy(b) for b in o["grpo_greedy_per_seed"]]))
    assert round(lift.points, 2) == addition["greedy_lift_points"]
    assert [round(v, 2) for v in lift.ci95] == addition["greedy_lift_ci95"]
    assert [round(v, 2) for v in lift.per_seed] == addition["greedy_lift_per_seed"]
    assert round(greedy(o["start_greedy"]).mean(), 4) == addition["sft_greedy"]


def test_the_sampled_lift_comes_from_the_stored_outcomes(addition):
    o = addition["outcomes"]
    after = np.stack([sampled(s) for s in o["grpo_sampled_per_seed"]])
    lift = paired_lift(sampled(o["start_sampled"]), after)
    assert round(lift.points, 2) == addition["sampled_lift_points"]
    assert [round(v, 2) for v in lift.ci95] == addition["sampled_lift_ci95"]


def test_a_changed_outcome_changes_the_lift(addition):
    o = addition["outcomes"]
    after = np.stack([greedy(b) for b in o["grpo_greedy_per_seed"]])
    after[0, np.flatnonzero(after[0] == 1)[:20]] = 0                        # 20 right answers lost
    assert round(paired_lift(greedy(o["start_greedy"]), after).points, 2) != addition["greedy_lift_points"]
