"""Chapter 11's first stored runs are what this code produces: the first GRPO iteration of
``grpo_seed0`` re-run from the wheel's model (the sampled completions, the verifier's rewards, the
loss and its diagnostics), and the registry's recipe is the one the runs used. The update they share
with the four-way runs (``registry.train_from_problems``, ``grpo.lm.hf.train_hf_grpo``) is replayed
over two iterations, the second sampling from the first update, by tests/test_ch11_four_way_runs.py."""
import json

import numpy as np
import pytest
import torch

from grpo import stats
from grpo.experiments.ch11_pretrained import smollm2_runs as P
from grpo.book.results import mismatches

from ch11_replay import assert_replays


def test_every_stored_run_used_todays_recipe_and_evaluation():
    for name, spec in P.RUNS.items():
        run = P.load_run(name)
        assert run["spec"] == json.loads(json.dumps(P.asdict(spec))), name
        assert run["recipe"] == P.asdict(P.RECIPE), name
        assert len(run["held_out"]["one_step"]["greedy"]) == P.ONE_STEP, name
        assert len(run["held_out"]["two_step"]["greedy"]) == P.TWO_STEP, name
        assert all("texts" in run["held_out"][part] for part in ("one_step", "two_step")), name


def test_the_first_iteration_replays():
    assert_replays(P.replay, "grpo_seed0", n=1)


def test_the_replay_check_sees_a_changed_loss_or_text():
    stored = {"log": [{"loss": 0.0123, "kl_mean": 1e-4}], "first_batch": {"texts": ["8 apples"]}}
    moved = {"log": [{"loss": 0.0123 * (1 + 1e-3), "kl_mean": 1e-4}], "first_batch": {"texts": ["8 apples"]}}
    other = {"log": [{"loss": 0.0123, "kl_mean": 1e-4}], "first_batch": {"texts": ["9 apples"]}}
    assert mismatches(stored, moved, rtol=P.REPLAY_RTOL) and mismatches(stored, other, rtol=P.REPLAY_RTOL)


def test_a_reward_blind_to_the_answer_pays_what_it_says():
    coin, seen = torch.Generator().manual_seed(0), {}
    texts, answers = ["so 8.", "so 7.", "no number", "so 8."], ["#### 8"] * 4
    finish = P.batch_reward("finish", coin, seen)
    assert finish(texts, answers, [True, True, True, False]) == [1.0, 1.0, 0.0, 0.0]
    assert seen["correct"] == [1.0, 0.0, 0.0, 1.0]
    assert P.batch_reward("verifier", coin, {})(texts, answers, [True] * 4) == [1.0, 0.0, 0.0, 1.0]
    paid = [P.batch_reward("random", coin, {})(texts * 250, answers * 250, [True] * 1000) for _ in range(2)]
    assert all(abs(sum(p) / 1000 - 0.5) < 0.06 for p in paid) and paid[0] != paid[1]
    assert P.batch_reward("random", coin, {})(texts[1:3], answers[1:3], [True] * 2) == [0.0, 0.0]
    with pytest.raises(ValueError, match="reward must be one of"):
        P.batch_reward("length", coin, {})


def test_the_format_reward_pays_one_equation_at_the_end_whatever_its_numbers():
    pay = P.batch_reward("one_equation", torch.Generator().manual_seed(0), {})
    texts = ["Lena has 6 - 1 = 5 apples.",              # GRPO's format, right
             "Nora has 8 - 3 = 3 shells.",              # the same format, wrong: paid all the same
             "Lena gives 1 to Leo, so she has 6 - 1 = 5 apples.",
             "Lena has 6 apples.",                      # the finishing reward's format: no equation
             "6 - 1 = 5.\nShe has 5 - 1 = 4.",          # two lines, two equations
             "Lena has 6 - 1 = 5 apples. #### 5",       # a number after the equation's result
             "Lena has 6 - 1 = 5 apples."]              # not ended within the budget
    answers = ["#### 5", "#### 5", "#### 5", "#### 5", "#### 4", "#### 5", "#### 5"]
    assert pay(texts, answers, [True] * 6 + [False]) == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_equation_scores_read_the_arithmetic_not_only_the_last_number():
    score = P.equation_scores
    assert score("Lena has 6 - 1 = 5 apples.", "#### 5") == {
        "anywhere": True, "first_equation": True, "equations_true": True}
    assert score("Nora has 8 - 3 = 3 shells.", "#### 5") == {
        "anywhere": False, "first_equation": False, "equations_true": False}
    assert score("6 + 1 = 7, then 7 - 2 = 5", "#### 5") == {
        "anywhere": True, "first_equation": False, "equations_true": True}
    assert score("4 x 2 = 8 and 9 ÷ 3 = 3", "#### 8")["equations_true"]
    assert not score("She has 5.", "#### 5")["equations_true"]       # no equation written


def test_the_arms_pair_each_control_seed_with_grpos_same_seed():
    arms = P.arms()
    assert len(arms["finish_reward"]) == len(arms["random_reward"]) == len(arms["grpo"]) == 5
    assert len(arms["format"]) == 3 and arms["sft"] == ["sft"]
    assert sorted(n for runs in arms.values() for n in runs) == sorted(set(P.RUNS) - {"start"})
    for arm in ("finish_reward", "random_reward", "format"):
        assert [P.RUNS[n].seed for n in arms[arm]] == list(range(len(arms[arm])))
        assert [P.RUNS[n].seed for n in arms["grpo"]][:len(arms[arm])] == list(range(len(arms[arm])))
    by_hand = stats.paired_lift(np.stack([P.outcomes_of(n) for n in arms["format"]]),
                                np.stack([P.outcomes_of(n) for n in arms["grpo"][:3]]), clusters=P.chains())
    assert P.grpo_minus("format") == by_hand
    shuffled = stats.paired_lift(np.stack([P.outcomes_of(n) for n in arms["format"][::-1]]),
                                 np.stack([P.outcomes_of(n) for n in arms["grpo"][:3]]), clusters=P.chains())
    assert shuffled.ci95 != by_hand.ci95                  # the pairing is seen: seed s meets seed s


def test_text_scores_read_a_runs_stored_texts_and_none_without_them(monkeypatch):
    got = P.text_scores("format_seed0")
    assert got["last_number"] == P.outcomes_of("format_seed0").mean()
    assert set(got) == {"last_number", "first_equation", "equations_true", "one_equation_format"}
    assert all(0 <= v <= 1 for v in got.values()) and got["one_equation_format"] > 0.5
    stored = P.load_run("format_seed0")
    bare = {**stored, "held_out": {k: {f: v for f, v in part.items() if f != "texts"}
                                   for k, part in stored["held_out"].items()}}
    monkeypatch.setattr(P, "load_run", lambda name: bare)
    assert P.text_scores("format_seed0") is None


def test_the_last_number_reading_is_the_rewards_lift_and_bad_readings_fail(monkeypatch):
    assert P.reading_lift("format_seed0", "last_number", against="format_seed1") == \
        P.chain_lift("format_seed0", against="format_seed1")
    with pytest.raises(ValueError, match="reading must be one of"):
        P.reading_lift("format_seed0", "longest_number")
    real = P.load_run
    monkeypatch.setattr(P, "load_run", lambda name: {"held_out": {"one_step": {"greedy": "1"}}}
                        if name == "format_seed2" else real(name))
    with pytest.raises(ValueError, match=r"without their texts cannot be read: \['format_seed2'\]"):
        P.reading_lift(["format_seed0", "format_seed2"], "first_equation", against="format_seed1")


def test_each_run_trained_on_the_problems_trained_problems_names():
    for name, spec in P.RUNS.items():
        run, trained = P.load_run(name), P.trained_problems(name)
        if spec.kind == "grpo":           # the stored first batch is the first iteration's prompts
            assert len(trained) == P.RECIPE.steps * P.RECIPE.prompts, name
            assert run["first_batch"]["questions"] == [p["question"] for p in trained[:P.RECIPE.prompts]]
        elif spec.kind == "sft":
            assert len(trained) == len(run["log"]) * P.SFT_BATCH
        else:
            assert trained == []


def test_the_new_chain_problems_share_no_chain_with_what_their_runs_trained_on(monkeypatch):
    """Chapter 11's chain split: the held-out problems ``new_chain`` keeps for an arm share no
    calculation chain with any problem that arm's runs trained on (``chain_seen``, the data
    module's own check), every two-step problem is new, and a planted twin is caught."""
    import random
    from grpo.lm.data import calculation_chain, chain_seen, reword
    one_step = P.problems()["one_step"]
    for arm, names in P.arms().items():
        new = P.new_chain(names)
        trained = [p for n in names for p in P.trained_problems(n)]
        kept = [p for p, k in zip(one_step, new) if k]
        assert kept and not any(chain_seen(kept, trained)), arm
        assert all(chain_seen([p for p, k in zip(one_step, new) if not k], trained)), arm
        assert P.new_chain(names, "two_step").all(), arm
    assert P.new_chain("start").all()
    twin = reword(P.trained_problems("grpo_seed0")[5], random.Random(0))   # new words, its chain
    before, real = P.new_chain("grpo_seed0"), P.chains
    monkeypatch.setattr(P, "chains", lambda part="one_step": real(part) + (calculation_chain(twin),))
    assert P.new_chain("grpo_seed0").tolist() == before.tolist() + [False]


def test_lifts_on_new_and_seen_chains_split_the_held_out_problems():
    grpo = P.arms()["grpo"]
    new, seen, every = (P.chain_lift(grpo, where=w) for w in ("new", "seen", "all"))
    assert new.problems + seen.problems == every.problems == P.ONE_STEP
    assert new.problems == int(P.new_chain(["start", *grpo]).sum())
    weighted = (new.points * new.problems + seen.points * seen.problems) / every.problems
    assert weighted == pytest.approx(every.points)
    assert P.reading_lift(grpo, "last_number", where="new") == new
    with pytest.raises(ValueError, match="where must be one of"):
        P.chain_lift(grpo, where="unseen")
