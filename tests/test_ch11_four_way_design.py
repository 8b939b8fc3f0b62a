"""Chapter 11's second design (design.FOUR_WAY_DESIGN): its prompts, its power calculation and its
rules, each applied to planted inputs so that a wrong rule fails here before it chooses anything."""
import json

import numpy as np
import pytest

from grpo.experiments.ch11_pretrained import design as D
from grpo.experiments.ch11_pretrained import format_runs as F
from grpo.experiments.ch11_pretrained import four_way_runs as W
from grpo.lm.data import chain_seen, calculation_chain
from grpo.lm.verifier import read_calculation
from grpo.stats import paired_lift


def test_each_operations_worked_example_is_a_training_calculation_in_the_one_equation_format():
    held = D.held_out_chains()
    ops = []
    for question, answer in D.EXAMPLES_PER_OPERATION:
        (eq,) = [c for c in D.one_step_chains() if read_calculation(answer, c) == "right"]
        assert eq not in held, eq
        ops.append(D.operation(eq))
        assert question.split()[0] == answer.split()[0]
    assert ops == ["+", "-", "*", "/"]


class _Template:
    chat_template = None


def test_the_candidate_prompts_say_what_they_claim():
    q = "Mia has 3 apples. How many apples does Mia have now?"
    tok = _Template()
    per_op = D.render_prompt(tok, q, "per_operation")
    assert all(per_op.index(a) < per_op.index(q) for _, a in D.EXAMPLES_PER_OPERATION)
    assert per_op.count(D.FORMAT_INSTRUCTION) == 5
    answers = D.render_prompt(tok, q, "operation_answers")
    assert all(a in answers for _, a in D.EXAMPLES_PER_OPERATION)
    assert not any(ex_q in answers for ex_q, _ in D.EXAMPLES_PER_OPERATION)
    assert D.render_prompt(tok, q, "operation_answers_prefix").endswith("Answer:Mia has")
    assert D.render_prompt(tok, q, "per_operation_prefix").endswith("Answer:Mia has")
    assert D.render_prompt(tok, q, "one_shot") == (
        f"Question: {D.EXAMPLE[0]}\n{D.FORMAT_INSTRUCTION}\nAnswer: {D.EXAMPLE[1]}\n"
        f"Question: {q}\n{D.FORMAT_INSTRUCTION}\nAnswer:")            # the first design's, unchanged
    assert set(D.CANDIDATES) >= set(D.FORMAT_PROMPTS) and "chapter" not in D.CANDIDATES


def _first_design_right_lift():
    chains = D.chains_of(D.held_out_problems())

    def right(name):
        texts = F.load_run(name)["held_out"]["greedy"]["texts"]
        return np.array([read_calculation(t, c) == "right" for t, c in zip(texts, chains)], float)
    return paired_lift(right(F.start_of("grpo")), np.stack([right(n) for n in F.arm_runs("grpo")]),
                       clusters=chains)


def test_the_power_inputs_are_the_first_designs_stored_spread_of_share_d():
    lift = _first_design_right_lift()
    assert round(float(np.std(lift.per_seed, ddof=1)), 1) == D.FIRST_DESIGN_RIGHT_SEED_SD
    assert round(lift.problem_half, 1) == D.FIRST_DESIGN_RIGHT_PROBLEM_HALF
    table = D.four_way_power_table(range(2, 11))
    assert D.FOUR_WAY_SEEDS == min(s for s, e in table.items() if e <= D.FOUR_WAY_TARGET)
    assert D.FOUR_WAY_DESIGN.seeds == D.FOUR_WAY_SEEDS


def test_the_design_is_one_record_with_two_arms_five_secondaries_and_its_rules():
    record = json.loads(json.dumps(D.FOUR_WAY_DESIGN.as_record()))
    assert set(record["arms"]) == {"grpo", "random_reward"}
    assert {a["reward"] for a in record["arms"].values()} == {"verifier", "random"}
    assert len(record["secondary"]) == len(W.SECONDARY) == 5
    assert record["pilot"]["seed"] not in range(record["seeds"])
    assert record == W.committed_design()


def _scores(**overrides):
    base = {"no_equation": 0.1, "other_calculation": 0.3, "slip": 0.1, "right": 0.5,
            "last_number": 0.5, "one_equation_format": 0.5, "prompt_tokens": 100.0}
    out = {p: dict(base) for p in ("chapter", *D.CANDIDATES)}
    for prompt, values in overrides.items():
        out[prompt].update(values)
    return out


def test_the_selection_rule_takes_the_shortest_prompt_that_gives_the_format_and_keeps_the_calculation():
    scores = _scores(per_operation={"one_equation_format": 0.97, "prompt_tokens": 350},
                     operation_answers={"one_equation_format": 0.92, "prompt_tokens": 130},
                     one_shot={"one_equation_format": 0.95, "prompt_tokens": 120,
                               "right": 0.40, "slip": 0.17})    # (c)+(d) 0.57: within 0.03
    choice = W.four_way_prompt(scores)
    assert choice.meets_rule and choice.prompt == "one_shot"
    assert set(choice.qualified) == {"per_operation", "operation_answers", "one_shot"}
    scores["one_shot"]["slip"] = 0.15                          # (c)+(d) 0.55: 0.05 below
    assert W.four_way_prompt(scores).prompt == "operation_answers"
    scores["operation_answers"]["one_equation_format"] = 0.89  # under the floor
    assert W.four_way_prompt(scores).prompt == "per_operation"


def test_without_a_qualifying_prompt_the_rule_says_so_and_takes_the_best_format():
    scores = _scores(prefix={"one_equation_format": 0.8}, per_operation={"one_equation_format": 0.85,
                                                                          "right": 0.3})
    choice = W.four_way_prompt(scores)
    assert not choice.meets_rule and choice.qualified == () and choice.prompt == "prefix"


@pytest.mark.parametrize("rewards, expected", [
    ([0.1] * 10 + [0.2] * 10 + [0.3] * 10 + [0.4] * 10, 40),    # rises throughout: the pilot's length
    ([0.1] * 10 + [0.2] * 10 + [0.21] * 10 + [0.5] * 10, 30),   # the third window rose by 0.01 only
    ([0.3] * 10 + [0.3] * 10 + [0.5] * 20, 20),                 # flat at once: at least 20
    ([0.1] * 10 + [0.2] * 10 + [0.1] * 10 + [0.2] * 10, 30),
])
def test_the_iteration_rule_reads_the_pilots_windows(rewards, expected):
    assert W.pilot_iterations([{"correct_mean": r} for r in rewards]) == expected


def test_the_budget_rule_caps_the_length_and_drops_checkpoints_before_seeds(monkeypatch, tmp_path):
    runs = {"pilot": {"cpu_s": 2000.0, "log": [{"correct_mean": 0.1 * (i // 10), "cpu_s": 50.0}
                                                for i in range(40)]},
            "start": {"cpu_s": 150.0}}
    runs.update({n: {"cpu_s": 100.0} for n, s in W.RUNS.items() if s.kind == "selection"})
    monkeypatch.setattr(W, "load_run", lambda name, directory=None: runs[name])
    choice = W.four_way_iterations()
    spent = 2000 + 150 + 100 * len(D.CANDIDATES) + 100
    assert choice.spent_cpu_s == spent and choice.iteration_cpu_s == 50 and choice.from_pilot == 40
    assert W.runs_cost(40, True, 50, 150) == 5 * (2 * 40 * 50 + 4 * 150)
    assert choice.iterations == 40 and choice.intermediate
    assert choice.planned_cpu_s + spent <= D.FOUR_WAY_BUDGET_CPU_H * 3600
    for log in runs["pilot"]["log"]:
        log["cpu_s"] = 70.0                                     # dearer iterations: a shorter run
    choice = W.four_way_iterations()
    assert choice.iterations == 30 and choice.intermediate
    assert choice.planned_cpu_s + spent <= D.FOUR_WAY_BUDGET_CPU_H * 3600 < \
        spent + W.runs_cost(40, True, 70, 150)
    for log in runs["pilot"]["log"]:
        log["cpu_s"] = 120.0                                    # 20 fits only without 10 and 20
    choice = W.four_way_iterations()
    assert (choice.iterations, choice.intermediate) == (20, False)
    assert D.checkpoints(20, False) == (20,) and D.checkpoints(40) == (10, 20, 40)


def test_no_run_of_an_arm_starts_before_the_rules_are_applied(monkeypatch):
    monkeypatch.setattr(D, "FOUR_WAY_PROMPT", None)
    with pytest.raises(ValueError, match="FOUR_WAY_PROMPT"):
        W.run("pilot")
    monkeypatch.setattr(D, "FOUR_WAY_PROMPT", "prefix")
    monkeypatch.setattr(D, "FOUR_WAY_ITERATIONS", None)
    with pytest.raises(ValueError, match="FOUR_WAY_ITERATIONS"):
        W.run("grpo_seed0")


def test_the_registry_holds_the_selection_the_pilot_the_start_and_every_arms_seeds():
    kinds = [s.kind for s in W.RUNS.values()]
    assert kinds.count("selection") == len(D.CANDIDATES) + 1 and kinds.count("pilot") == 1
    assert kinds.count("grpo") == 2 * D.FOUR_WAY_SEEDS
    assert W.runs_of_arm("grpo") == [f"grpo_seed{s}" for s in range(D.FOUR_WAY_SEEDS)]
    pilot_draw = D.training_draw(D.PILOT_SEED, 4 * D.PILOT_ITERATIONS)
    held = list(D.held_out_problems())
    assert not any(chain_seen(held, pilot_draw))
    assert all(len(calculation_chain(p)) == 1 for p in pilot_draw)


def test_the_stored_selection_chose_the_prompt_by_the_committed_rule():
    scores = W.candidate_scores()
    assert set(scores) == {"chapter", *D.CANDIDATES}
    choice = W.four_way_prompt(scores)
    assert choice.meets_rule and choice.prompt == D.FOUR_WAY_PROMPT
    for name, spec in W.RUNS.items():
        if spec.kind == "selection":
            assert W.load_run(name)["design"] == W.committed_design(), name


def test_the_first_design_read_four_ways_reproduces_the_independent_rescoring():
    """Issue 60's independent re-scoring of the first decided design, from the stored texts: 20
    held-out problems with no equation at the start carry +3.5 of the +6.9 points; on the other
    172 the first equation moved +3.9 [-3.5, +11.3]."""
    x = W.decided_four_way()
    assert x.no_equation_problems == 20
    assert round(x.carried_by_no_equation, 1) == 3.5
    assert (round(x.with_equation.points, 1), *(round(v, 1) for v in x.with_equation.ci95)) == (
        3.9, -3.5, 11.3)
    assert x.start["one_equation_format"] == 0.5625
    assert abs(sum(x.grpo[k] for k in ("no_equation", "other_calculation", "slip", "right"))
               - 1) < 1e-9


def _lift(points, lo, hi):
    from dataclasses import replace

    from grpo.stats import paired_lift
    x = paired_lift(np.zeros(4), np.ones((2, 4)))
    return replace(x, points=points, ci95=(lo, hi))


@pytest.mark.parametrize("lift, holm_p, verb", [
    ((5.0, 1.0, 9.0), 0.0, "raised"), ((-5.0, -9.0, -1.0), 0.0, "lowered"),
    ((5.0, -1.0, 9.0), 0.0, "moved"), ((5.0, 1.0, 9.0), 0.2, "moved")])
def test_a_change_earns_its_verb_only_where_its_interval_and_holm_allow(lift, holm_p, verb):
    assert W.change_verb(_lift(*lift), holm_p=holm_p) == verb


def _ends(primary, minus_random=(20.0, 5.0, 35.0), holm_p=0.01):
    return W.FourWayEndpoints(primary=_lift(*primary),
                              secondary={"right_minus_random": _lift(*minus_random)},
                              holm_p={"right_minus_random": holm_p}, detectable=9.9)


def _by(groups, control=False):
    """A GainByGroup over four planted problems: the start writes other calculations on the
    first two and is right on the last two; GRPO is right on the first three and slips on the
    fourth; with ``control``, the random reward is right on the first and the last."""
    from grpo.stats import group_change, shares_by_group
    cats = W.CALCULATION_READINGS
    start = ["other_calculation", "other_calculation", "right", "right"]
    after = [["right", "right", "right", "slip"]] * 2
    change = group_change(start, after, groups, cats)
    shares = {"question_alone": shares_by_group(start, groups, cats),
              "start": shares_by_group(start, groups, cats),
              "grpo_20": shares_by_group(after, groups, cats)}
    if control:
        shares["random_reward_20"] = shares_by_group(
            [["right", "other_calculation", "other_calculation", "right"]] * 2, groups, cats)
    return W.GainByGroup(by="planted", shares=shares,
                         from_start={"grpo_10": change, "grpo_20": change}, from_question_alone={})


def test_the_answer_words_each_finding_as_its_figure_allows():
    ops, words = _by(["+", "+", "+", "-"]), _by(["X gives him N"] * 2 + ["other"] * 2)
    a_seeds = _lift(25.0, 10.0, 40.0).seeds
    written = {"X gives him N": {"+": 0.1, "-": 0.9}}
    a = W.four_way_answer(_ends((25.0, 10.0, 40.0)), ops, words, written,
                          _lift(-5.9, -14.6, 2.8), _lift(2.7, -5.7, 11.2), (10, 20))
    assert "GRPO raised" in a.gain and a.gain.endswith(f"over that prompt's start, across {a_seeds} seeds.")
    assert a.where.startswith("Most of that gain sits on addition: 50.0 of the 25.0 points")
    assert "write “-” in 90% of its answers, (d) was 0% asked alone, 0% under the examples and "\
        "100% after GRPO." in a.where and '"' not in a.where + a.summary
    with_control = W.four_way_answer(_ends((25.0, 10.0, 40.0)), ops,
                                     _by(["X gives him N"] * 2 + ["other"] * 2, control=True),
                                     written, _lift(-5.9, -14.6, 2.8), _lift(2.7, -5.7, 11.2),
                                     (10, 20))
    assert with_control.where.endswith("0% under the examples and 100% after GRPO, against 50% "
                                       "after the random-reward control.")
    assert "ended where the model's own was" in a.against_alone
    assert a.growth.startswith("Nothing measurably grew from 10 to 20 iterations")
    b = W.four_way_answer(_ends((2.0, -5.0, 9.0)), ops, words, written,
                          _lift(-9.0, -14.0, -2.0), _lift(6.0, 1.0, 11.0), (10, 20))
    assert "GRPO moved" in b.gain and b.gain.endswith("could not tell from none.")
    assert "ended below the model's own" in b.against_alone
    assert b.growth.startswith("(d) grew by +6.0 points from 10 to 20")
    assert b.text == " ".join(b.sentences) and len(b.sentences) == 5
    assert a.control == ("Seed for seed, it beat the random-reward control, which pays as often "
                         "but at random, by 20.0 points.")
    assert a.summary.startswith("with the form given") and "[" not in a.summary
    assert "ended where the model's own was" in a.summary and "nothing measurably grew" in a.summary
    assert "ended below" in b.summary and "nothing measurably" not in b.summary


@pytest.mark.parametrize("minus_random, holm_p, kept, words", [
    ((20.0, 5.0, 35.0), 0.01, (5, 5), "it beat the random-reward control, which pays as often but "
                                      "at random, by 20.0 points."),
    ((20.0, 5.0, 35.0), 0.01, (1, 5), "by 20.0 points, but with one seed left out that verdict "
                                      "holds in only 1 of the 5 cases."),
    ((20.0, 5.0, 35.0), 0.01, (0, 5), "holds in none of the 5 cases."),
    ((20.0, 5.0, 35.0), 0.2, (5, 5), "it could not be told from the random-reward control, which "
                                     "pays as often but at random (+20.0 points)."),
    ((4.0, -1.0, 9.0), 0.01, None, "could not be told from the random-reward control, which pays "
                                   "as often but at random (+4.0 points)."),
    ((-20.0, -35.0, -5.0), 0.01, None, "it fell behind the random-reward control, which pays as "
                                       "often but at random, by 20.0 points.")])
def test_the_answer_holds_grpo_to_its_control_as_the_interval_holm_and_seeds_allow(
        minus_random, holm_p, kept, words):
    ops, words_by = _by(["+", "+", "+", "-"]), _by(["X gives him N"] * 2 + ["other"] * 2)
    a = W.four_way_answer(_ends((25.0, 10.0, 40.0), minus_random, holm_p), ops, words_by,
                          {"X gives him N": {"+": 0.1, "-": 0.9}}, _lift(-5.9, -14.6, 2.8),
                          _lift(2.7, -5.7, 11.2), (10, 20), control_kept=kept)
    assert a.control.endswith(words) and a.control.startswith("Seed for seed, it ")


def test_the_question_alone_is_the_first_designs_start_read_four_ways():
    read = W.question_alone_readings()
    assert len(read["four_way"]) == len(D.held_out_problems())
    assert set(read["four_way"]) <= set(W.CALCULATION_READINGS)
    assert int((read["four_way"] == "no_equation").sum()) == 21
    with pytest.raises(ValueError, match="which"):
        W.against_question_alone("arithmetic")
