"""Chapter 11's second design as run: every stored run carries the design committed before it,
answers the problems the design names, and a GRPO run's first two iterations replay from the model
file (the second samples from the first update). The pilot ran the same function
(``format_runs.train_from_prompt``) with the same prompt and reward at another seed, so this replay
covers its code; replaying it too would check no other line, at ``make test``'s cost."""
import json

import numpy as np

from grpo.experiments.ch11_pretrained import design as D
from grpo.experiments.ch11_pretrained import four_way_runs as W

from ch11_replay import assert_replays


def test_every_stored_run_ran_the_committed_design_on_the_named_problems():
    record = W.committed_design()
    for name, spec in W.RUNS.items():
        run = W.load_run(name)
        assert run["design"] == record, name
        assert run["spec"] == json.loads(json.dumps(W.asdict(spec))), name
        if spec.kind == "selection":
            assert len(run["selection"]["texts"]) == D.SELECTION
        elif spec.kind == "pilot":
            assert len(run["log"]) == D.PILOT_ITERATIONS
            questions = [p["question"] for p in D.training_draw(D.PILOT_SEED, D.recipe().prompts)]
            assert run["first_batch"]["questions"] == questions
        else:
            marks = ((0,) if spec.kind == "start" else
                     D.checkpoints(D.FOUR_WAY_ITERATIONS, D.FOUR_WAY_INTERMEDIATE)
                     if spec.arm == "grpo" else (D.FOUR_WAY_ITERATIONS,))
            assert sorted(map(int, run["held_out"])) == list(marks), name
            for scored in run["held_out"].values():
                assert len(scored["texts"]) == len(D.held_out_problems()), name
        if spec.kind == "grpo":
            assert len(run["log"]) == D.FOUR_WAY_ITERATIONS, name
            questions = [p["question"] for p in D.training_draw(spec.seed, D.recipe().prompts)]
            assert run["first_batch"]["questions"] == questions, name


def test_the_stored_pilot_and_start_set_the_runs_length_by_the_committed_rules():
    choice = W.four_way_iterations()
    assert (choice.iterations, choice.intermediate) == (D.FOUR_WAY_ITERATIONS,
                                                         D.FOUR_WAY_INTERMEDIATE)
    assert choice.spent_cpu_s + choice.planned_cpu_s <= D.FOUR_WAY_BUDGET_CPU_H * 3600


def test_the_four_readings_are_exclusive_and_exhaustive_on_every_stored_answer():
    for name in ("start", "grpo_seed0", "random_reward_seed0"):
        read = W.readings_of(name)
        shares = W.shares(read)
        assert abs(sum(shares[k] for k in ("no_equation", "other_calculation", "slip", "right"))
                   - 1) < 1e-12
        calc = W.outcome(name, "calculation")
        assert np.array_equal(calc, W.outcome(name, "slip") + W.outcome(name, "right"))


def test_a_change_pairs_each_seed_with_the_start_and_the_control_seed_with_seed():
    x = W.change("grpo", "right")
    per_seed = [100 * (W.outcome(n, "right") - W.outcome("start", "right")).mean()
                for n in W.runs_of_arm("grpo")]
    assert np.allclose(x.per_seed, per_seed) and x.seeds == D.FOUR_WAY_SEEDS
    y = W.minus_random("right")
    per_seed = [100 * (W.outcome(g, "right") - W.outcome(r, "right")).mean()
                for g, r in zip(W.runs_of_arm("grpo"), W.runs_of_arm("random_reward"), strict=True)]
    assert np.allclose(y.per_seed, per_seed)
    e = W.four_way_endpoints()
    assert list(e.secondary) == list(W.SECONDARY)
    assert all(e.holm_p[k] >= x.p_value - 1e-12 for k, x in e.secondary.items())


def test_a_grpo_runs_first_two_iterations_replay():
    assert_replays(W.replay, "grpo_seed0", n=2)
