"""Chapter 11's decided experiment: its split of the calculations, its prompts, its power
calculation, and the stored runs' agreement with the design committed before them."""
import json
import random

import numpy as np
import pytest

from grpo.experiments.ch11_pretrained import design as D
from grpo.experiments.ch11_pretrained import format_runs as F
from grpo.experiments.ch11_pretrained import smollm2_runs as P
from grpo.lm.data import calculation_chain, chain_seen, make_problem, reword

from ch11_replay import assert_replays


def test_the_enumerated_calculations_are_exactly_those_the_generator_draws():
    rng = random.Random(3)
    drawn = {calculation_chain(make_problem(rng, 1))[0] for _ in range(60_000)}
    assert drawn == set(D.one_step_chains())
    assert len(D.one_step_chains()) == 119


def test_the_split_holds_out_a_fixed_share_of_every_operation():
    held = D.held_out_chains()
    assert len(held) >= 40
    for op in D.OPERATIONS:
        mine = [c for c in D.one_step_chains() if D.operation(c) == op]
        assert sum(c in held for c in mine) == round(D.HELD_OUT_SHARE * len(mine))
    with pytest.raises(ValueError, match="chain"):
        D.operation("3+4*2=11")


def test_held_out_problems_are_several_wordings_of_each_held_out_calculation():
    probs = D.held_out_problems()
    chains = D.chains_of(probs)
    assert set(chains) == set(D.held_out_chains())
    assert all(chains.count(c) == D.WORDINGS for c in set(chains))
    assert len({p["question"] for p in probs}) == len(probs)


def _training_sources():
    """Every problem any arm of the design trains on, by run: the prompts of each GRPO run (the
    same for every arm at a seed), for the design's iterations."""
    cfg = D.recipe()
    return {name: D.training_draw(spec.seed, D.DESIGN.iterations * cfg.prompts)
            for name, spec in F.RUNS.items() if spec.kind == "grpo"}


def test_no_training_source_of_any_arm_holds_a_held_out_calculation():
    held = list(D.held_out_problems())
    sources = _training_sources()
    assert len(sources) == D.SEEDS * len(D.DESIGN.arms)
    for name, source in sources.items():    # checked with the data module's own chain_seen
        assert not any(chain_seen(held, source)), name
    assert not any(chain_seen(held, list(D.training_pool())))
    assert not any(chain_seen(held, D.selection_problems()))
    assert not any(chain_seen(held, [{"question": D.EXAMPLE[0],
                                      "answer": "7+1=<<7+1=8>>8\n#### 8"}]))


def test_the_leak_check_catches_a_planted_twin():
    held = list(D.held_out_problems())
    source = _training_sources()["grpo_seed0"]
    twin = reword(held[5], random.Random(0))      # a held-out problem in other words
    assert twin["question"] != held[5]["question"]
    assert chain_seen(held, source + [twin])[5]
    assert D.is_held_out(twin)


def test_every_arm_at_a_seed_trains_on_the_same_prompts_and_seeds_differ():
    a, b = D.training_draw(0, 40), D.training_draw(1, 40)
    assert a == D.training_draw(0, 40) and a != b


def test_the_answer_prefix_changes_no_reading():
    q = D.held_out_problems()[0]
    prefix = D.answer_prefix("prefix", q["question"])
    assert prefix and not any(ch.isdigit() or ch in "=\n" for ch in prefix)
    assert D.answer_prefix("instruction", q["question"]) == ""
    for text in [" 3 + 4 = 7 apples.", " 7 apples, then 2 * 3 = 6.", " has none."]:
        with_ = F.readings([prefix + text], [True], [q])
        without = F.readings([text], [True], [q])
        assert {k: list(v) for k, v in with_.items()} == {k: list(v) for k, v in without.items()}


class _Template:
    chat_template = None


def test_the_prompts_say_what_they_claim():
    q = "Mia has 3 apples. How many apples does Mia have now?"
    tok = _Template()
    assert D.render_prompt(tok, q, "chapter") == f"Question: {q}\nAnswer:"
    assert D.FORMAT_INSTRUCTION in D.render_prompt(tok, q, "instruction")
    one_shot = D.render_prompt(tok, q, "one_shot")
    assert one_shot.index(D.EXAMPLE[1]) < one_shot.index(q)
    assert D.render_prompt(tok, q, "prefix").endswith("Answer:Mia has")


def test_the_power_inputs_are_the_first_experiments_stored_spread():
    first = P.reading_lift(P.arms()["grpo"], "first_equation")
    assert round(float(np.std(first.per_seed, ddof=1)), 1) == D.FIRST_EXPERIMENT_SEED_SD
    assert round(first.problem_half, 1) == D.FIRST_EXPERIMENT_PROBLEM_HALF
    table = D.power_table(range(2, 11))
    assert D.SEEDS == min(s for s, e in table.items() if e < D.TARGET_EFFECT)
    assert all(table[s] > table[s + 1] for s in range(2, 10))


def test_the_detectable_effect_is_detected_four_times_in_five():
    """Simulate the interval paired_lift builds: seeds' lifts spread by sd, the problems' error by
    problem_half / 1.96; at the detectable effect the interval excludes 0 about 80% of the time,
    and at half of it far less often."""
    rng = np.random.default_rng(0)
    from grpo.stats import t975
    sd, ph, S = D.FIRST_EXPERIMENT_SEED_SD, D.FIRST_EXPERIMENT_PROBLEM_HALF, D.SEEDS

    def power(effect, n=20_000):
        seeds = effect + sd * rng.standard_normal((n, S)) + (ph / 1.96) * rng.standard_normal((n, 1))
        half = np.hypot(ph, t975(S - 1) * seeds.std(1, ddof=1) / np.sqrt(S))
        return float((seeds.mean(1) - half > 0).mean())
    mde = D.detectable_effect(sd, ph, S)
    assert 0.74 < power(mde) < 0.86
    assert power(mde / 2) < 0.4
    with pytest.raises(ValueError, match="seeds"):
        D.detectable_effect(sd, ph, 1)


def test_the_design_is_one_record_and_names_its_arms_prompts_and_seeds():
    record = json.loads(json.dumps(D.DESIGN.as_record()))
    assert set(record["arms"]) == {"grpo", "format_reward", "random_reward", "grpo_chapter_prompt"}
    assert all(a["prompt"] in D.FIRST_PROMPTS and a["reward"] in P.REWARDS
               for a in record["arms"].values())
    assert record["seeds"] == D.SEEDS and record["train_prompt"] == D.TRAIN_PROMPT
    assert len(record["secondary"]) == 8


def test_the_stored_selection_chose_the_training_prompt():
    scores = F.selection_scores()
    assert set(scores) == set(D.FIRST_PROMPTS)
    assert F.chosen_prompt(scores) == D.TRAIN_PROMPT


def test_every_decided_run_ran_the_committed_design():
    record = json.loads(json.dumps(D.DESIGN.as_record()))
    for name, spec in F.RUNS.items():
        run = F.load_run(name)
        assert run["design"] == record, name
        assert run["spec"] == json.loads(json.dumps(F.asdict(spec))), name
        if spec.kind == "selection":
            continue
        greedy = run["held_out"]["greedy"]
        assert len(greedy["texts"]) == len(greedy["ended"]) == len(D.held_out_problems()), name
        if spec.pass_k:
            sampled = run["held_out"]["sampled"]
            assert len(sampled["texts"]) == len(F.pass_k_problems()) * D.DESIGN.pass_at_k_samples
        if spec.kind == "grpo":
            assert len(run["log"]) == D.DESIGN.iterations, name
            questions = [p["question"] for p in D.training_draw(spec.seed, D.recipe().prompts)]
            assert run["first_batch"]["questions"] == questions, name


def test_the_first_iteration_of_a_decided_run_replays():
    """Its prompts, prompt text, rewards, first loss and diagnostics. The update these runs share
    with chapter 11's four-way runs (``format_runs.train_from_prompt``) is replayed over two
    iterations by tests/test_ch11_four_way_runs.py."""
    assert_replays(F.replay, "grpo_seed0", n=1)


def test_the_gap_is_the_last_numbers_lift_minus_the_first_equations():
    gap = F.gap_lift("grpo")
    last, first = F.arm_lift("grpo", "last_number"), F.arm_lift("grpo", "first_equation")
    assert gap.points == pytest.approx(last.points - first.points, abs=1e-9)
    assert gap.seeds == D.SEEDS and gap.ci95[0] < gap.points < gap.ci95[1]


def test_a_control_is_paired_seed_by_seed_with_grpo():
    x = F.minus("grpo", "random_reward")
    per_seed = [100 * (F.reading(g, "first_equation") - F.reading(r, "first_equation")).mean()
                for g, r in zip(F.arm_runs("grpo"), F.arm_runs("random_reward"), strict=True)]
    assert np.allclose(x.per_seed, per_seed)


def test_the_endpoints_are_the_designs_and_holm_adjusts_them_upward():
    e = F.endpoints()
    assert list(e.secondary) == list(F.SECONDARY) and len(F.SECONDARY) == len(D.DESIGN.secondary)
    for k, x in e.secondary.items():
        assert e.holm_p[k] >= x.p_value - 1e-12
    assert e.primary.points == F.arm_lift("grpo", "first_equation").points


def test_the_verdict_says_what_the_interval_allows():
    from grpo.stats import Lift

    def lift(lo, hi):
        return Lift(points=(lo + hi) / 2, ci95=(lo, hi), per_seed=(), per_seed_ci95=(),
                    problems=192, seeds=6)
    assert F.verdict(lift(2.0, 9.0), 14.0).startswith("GRPO added +5.5 points")
    assert F.verdict(lift(-9.0, -2.0), 14.0).startswith("GRPO lowered")
    nothing = F.verdict(lift(-3.0, 5.0), 14.0)
    assert nothing.startswith("no arithmetic lift") and "14 points or more" in nothing


def test_pass_at_k_reads_each_sample_and_is_monotone_in_k():
    curve = F.pass_at_k_curve([F.start_of("grpo")])
    values = [curve[k] for k in D.DESIGN.pass_at_k]
    assert values == sorted(values) and 0 < values[0] < values[-1] <= 1
    correct = F.sampled_correct(F.start_of("grpo"))
    assert correct.shape == (len(F.pass_k_problems()), D.DESIGN.pass_at_k_samples)
    assert curve[1] == pytest.approx(correct.mean())
