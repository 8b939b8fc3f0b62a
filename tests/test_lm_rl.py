"""Chapter 8's GRPO loop on the small GPT (lib/grpo/lm/rl.py)."""
import itertools
import math

import numpy as np
import pytest
import torch

from grpo.lm.data import make_splits
from grpo.lm.model import GPT, GPTConfig
from dataclasses import replace

from grpo.lm.eval import EvalConfig, evaluate, pass_at_k, pass_at_k_per_problem, reward_by_kind
from grpo.lm.rl import RunConfig, train_lm_grpo
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.train import SFTConfig, sft

TINY = dict(iterations=2, prompts=3, G=4, max_new_tokens=12, warmup=1,
            evaluation=EvalConfig(every=1, problems=4, samples=2))


@pytest.fixture(scope="module")
def setup():
    train, test = make_splits(300, 10, seed=0)
    tok = Tokenizer.train([p["question"] + "\n" + p["answer"] for p in train], 300)
    return train, test, tok


def tiny_model(tok, seed=0, sft_steps=0, train=None):
    """A 1-layer GPT; ``sft_steps`` of SFT make it end its answers (an untrained one seldom does)."""
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=1, n_head=2, d_model=32, max_len=192))
    if sft_steps:
        sft(model, tok, train, train[:2], SFTConfig(steps=sft_steps, batch_size=16, lr=1e-2, warmup=2,
                                                    eval_every=10_000))
    return model.eval()


def pass_by_hand(answers, k: int) -> float:
    """One problem's pass@k counted by hand: the share of the C(n, k) ways to draw k of its n
    answers that hold at least one right answer."""
    draws = list(itertools.combinations(answers, k))
    return sum(any(draw) for draw in draws) / len(draws)


def unbiased_estimator(right: int, n: int, k: int) -> float:
    """Chen et al. (2021): 1 - C(n - c, k) / C(n, k), c of the n answers right."""
    return 1 - math.comb(n - right, k) / math.comb(n, k)


def check_pass_at_k(estimate) -> None:
    """``estimate(correct, k)`` is the unbiased pass@k: on three problems whose values are plain,
    and for every k on samples of 5 and 8 answers a problem, against the count by hand and the
    estimator's formula."""
    correct = np.array([[1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]])
    assert estimate(correct, 1) == pytest.approx(correct.mean())
    assert estimate(correct, 4) == pytest.approx(2 / 3)                     # any right of all 4
    # problem 0: 1 of 4 right; P(a pair of 4 holds it) = 1 - C(3,2)/C(4,2) = 1/2
    assert estimate(correct, 2) == pytest.approx((0.5 + 0 + 1) / 3)
    rng = np.random.default_rng(0)
    for n in (5, 8):
        correct = (rng.random((12, n)) < 0.35).astype(int)
        assert len(set(correct.sum(1))) >= 4, "the problems cover several counts of right answers"
        for k in range(1, n + 1):
            by_hand = np.mean([pass_by_hand(row, k) for row in correct])
            formula = np.mean([unbiased_estimator(row.sum(), n, k) for row in correct])
            assert by_hand == pytest.approx(formula)
            assert estimate(correct, k) == pytest.approx(by_hand), (n, k)


def test_pass_at_k_matches_hand_counts_and_the_unbiased_estimator():
    check_pass_at_k(pass_at_k)
    check_pass_at_k(lambda correct, k: pass_at_k_per_problem(correct, k).mean())
    with pytest.raises(ValueError, match="k"):
        pass_at_k(np.zeros((2, 4)), 5)


@pytest.mark.parametrize("estimate", [
    # the union bound min(1, c k / n): right on the three plain problems at k = 1, 2 and 4
    lambda correct, k: np.minimum(1, np.asarray(correct).sum(1) * k / correct.shape[1]).mean(),
    # drawing with replacement, 1 - (1 - c/n)^k
    lambda correct, k: (1 - (1 - np.asarray(correct).mean(1)) ** k).mean(),
], ids=["union-bound", "with-replacement"])
def test_a_biased_pass_at_k_fails_the_check(estimate):
    with pytest.raises(AssertionError):
        check_pass_at_k(estimate)


@pytest.mark.parametrize("correct", [[[2, 0, 0]], [[1, 0, 0.5]], [[1, 0, float("nan")]], [[-1, 1, 0]]])
def test_pass_at_k_takes_only_0_1_entries(correct):
    with pytest.raises(ValueError, match="0/1"):
        pass_at_k(correct, 1)


def test_pass_at_k_takes_a_2d_array_and_an_int_k():
    assert pass_at_k(np.array([[True, False]]), 1) == 0.5 == pass_at_k([[1.0, 0.0]], 1)
    for correct in ([1, 0, 1], np.zeros((0, 3))):
        with pytest.raises(ValueError, match="problems, n"):
            pass_at_k(correct, 1)
    with pytest.raises(ValueError, match="k"):
        pass_at_k([[1, 0]], 1.5)


def test_reward_by_kind_verifier_and_short():
    p = {"answer": "2+2=<<2+2=4>>4\n#### 4"}
    assert reward_by_kind(p, "so #### 4") == 1.0 and reward_by_kind(p, "#### 5") == 0.0
    assert reward_by_kind(p, "anything", "short", max_new_tokens=10, length=3) == pytest.approx(0.7)


@pytest.mark.parametrize("bad, match", [(dict(G=1), "G must be an int >= 2"), (dict(lr=0.0), "lr"),
                                        (dict(lr=float("nan")), "lr"), (dict(reuse=0), ">= 1"),
                                        (dict(advantage="median"), "advantage"),
                                        (dict(reward="long"), "reward"),
                                        (dict(train_pool=2), "train_pool"),
                                        (dict(train_pool=-1), "train_pool"),
                                        (dict(warmup=-1), "warmup .* got -1"),
                                        (dict(max_new_tokens=0), "max_new_tokens .* got 0"),
                                        (dict(temperature=0.0), "temperature .* got 0.0"),
                                        (dict(temperature=float("inf")), "temperature .* got inf"),
                                        (dict(temperature=True), "temperature .* got True"),
                                        (dict(eps_low=1.0), "eps_low .* got 1.0"),
                                        (dict(eps_low=-0.2), "eps_low .* got -0.2"),
                                        (dict(eps_high=-0.28), "eps_high .* got -0.28"),
                                        (dict(beta=-0.04), "beta .* got -0.04"),
                                        (dict(beta=float("nan")), "beta .* got nan"),
                                        (dict(grad_clip=0.0), "grad_clip .* got 0.0"),
                                        (dict(dynamic_sampling="no"), "dynamic_sampling .* got 'no'"),
                                        (dict(clip="off"), "clip .* got 'off'"),
                                        (dict(kl_ratio="false"), "kl_ratio .* got 'false'"),
                                        (dict(ratio_level="word"), "ratio_level .* got 'word'"),
                                        (dict(evaluation={"every": 1}), "evaluation must be an EvalConfig"),
                                        (dict(reuse=2.0), "reuse .* got 2.0")])
def test_bad_config_is_a_clear_error(bad, match):
    """A bad setting fails when the config is built, before any model or data exists."""
    with pytest.raises(ValueError, match=match):
        RunConfig(**{**TINY, **bad})


@pytest.mark.parametrize("bad, match", [(dict(every=0), "EvalConfig.every .* got 0"),
                                        (dict(problems=0), "EvalConfig.problems .* got 0"),
                                        (dict(samples=0), "EvalConfig.samples .* got 0"),
                                        (dict(final_samples=-2), "final_samples .* got -2"),
                                        (dict(held_out=-1), "held_out .* got -1"),
                                        (dict(temperature=-0.7), "temperature .* got -0.7"),
                                        (dict(at_start="yes"), "at_start .* got 'yes'")])
def test_bad_evaluation_setting_is_a_clear_error(bad, match):
    """What a run measures is checked the same way, at construction."""
    with pytest.raises(ValueError, match=match):
        EvalConfig(**bad)


def test_a_run_is_finite_logged_and_deterministic(setup):
    train, test, tok = setup
    outs = [train_lm_grpo(tiny_model(tok), tok, train, test, RunConfig(**TINY, beta=0.04)) for _ in range(2)]
    log = outs[0]["log"]
    assert log["iteration"] == [1, 2] and outs[0]["evals"]["iteration"] == [0, 1, 2]
    for key in ("reward_mean", "degenerate_fraction", "entropy_mean", "kl_mean", "clip_fraction",
                "completion_length_mean"):
        assert len(log[key]) == 2 and all(math.isfinite(v) for v in log[key]), key
    assert log["kl_mean"][0] == pytest.approx(0.0, abs=1e-6)       # policy == reference before step 1
    for k, v in outs[0]["state"].items():
        assert torch.equal(v, outs[1]["state"][k]), k
    assert outs[0]["state"] != {}


def test_the_update_moves_the_weights_and_beta0_skips_the_reference(setup):
    train, test, tok = setup
    model = tiny_model(tok, sft_steps=40, train=train)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    out = train_lm_grpo(model, tok, train, test, RunConfig(**{**TINY, "reward": "short"}, beta=0.0))
    assert math.isnan(out["log"]["kl_mean"][0])                    # no reference read at beta = 0
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_the_length_reward_is_learned(setup):
    """The sanity check of chapter 8 in miniature: 'shorter scores more' is learnable fast."""
    train, test, tok = setup
    cfg = RunConfig(**{**TINY, "iterations": 25, "evaluation": EvalConfig(every=100, problems=4),
                       "prompts": 4, "G": 8,
                       "max_new_tokens": 24}, reward="short", beta=0.0, lr=3e-3, temperature=1.0)
    log = train_lm_grpo(tiny_model(tok, 1, sft_steps=40, train=train), tok, train, test, cfg)["log"]
    first, last = np.mean(log["reward_mean"][:5]), np.mean(log["reward_mean"][-5:])
    assert last > first + 0.1, (first, last)


def test_dynamic_sampling_with_no_informative_group_still_steps(setup):
    """An untrained model gets every answer wrong: all groups are degenerate, every draw; the batch
    then has zero advantage everywhere, and the loop logs that instead of failing."""
    train, test, tok = setup
    cfg = RunConfig(**{**TINY, "iterations": 1}, beta=0.0, dynamic_sampling=True)
    log = train_lm_grpo(tiny_model(tok), tok, train, test, cfg)["log"]
    assert log["degenerate_fraction"] == [1.0] and log["reward_mean"] == [0.0]


def test_evaluate_reports_greedy_and_sampled(setup):
    train, test, tok = setup
    e = evaluate(tiny_model(tok), tok, test[:3], samples=2, seed=0)
    assert set(e) == {"greedy", "sampled"}
    assert e == evaluate(tiny_model(tok), tok, test[:3], samples=2, seed=0)
    # greedy decoding uses no randomness: the seed moves only the sampled number
    assert evaluate(tiny_model(tok), tok, test[:3], samples=2, seed=7)["greedy"] == e["greedy"]


def test_a_pool_run_practises_only_the_pool_and_evaluates_it(setup):
    """Problems past the pool hold a character the tokenizer never saw, so drawing one would raise."""
    train, test, tok = setup
    poisoned = train[:3] + [{"question": "\u00a7", "answer": "#### 1"}] * 20
    out = train_lm_grpo(tiny_model(tok), tok, poisoned, test, RunConfig(**TINY, train_pool=3, beta=0.0))
    ev = out["evals"]
    assert len(ev["pool_greedy"]) == len(ev["pool_sampled"]) == len(ev["iteration"]) == 3
    assert "pool_greedy" not in train_lm_grpo(tiny_model(tok), tok, train, test, RunConfig(**TINY))["evals"]


def capture_updates(monkeypatch):
    """Wrap train_lm_grpo's grpo_update: record each batch's rewards and, before any step, how far the
    fresh log-probs of pi_theta are from the sampler's pi_old."""
    import grpo.lm.rl as rl
    seen = []

    def spy(logprobs, optimizer, mask, rewards, logp_old=None, **kw):
        with torch.no_grad():
            fresh = logprobs(slice(0, mask.shape[0]))[0]
        gap = float(((fresh - logp_old).abs() * mask).max())
        seen.append({"rewards": rewards.clone(), "gap": gap, "tokens": int(mask.sum())})
        return real(logprobs, optimizer, mask, rewards, logp_old=logp_old, **kw)

    real = rl.grpo_update
    monkeypatch.setattr(rl, "grpo_update", spy)
    return seen


def test_the_first_pass_at_reuse_1_is_on_policy(setup, monkeypatch):
    """At reuse 1 the only pass sees pi_theta == pi_old: the sampler's log-probs are a fresh forward's
    (|logp - old| < 1e-5 on every completion token) and the clip never engages."""
    train, test, tok = setup
    seen = capture_updates(monkeypatch)
    cfg = RunConfig(**TINY, reward="short", beta=0.0, lr=1e-2)
    out = train_lm_grpo(tiny_model(tok, sft_steps=40, train=train), tok, train, test, cfg)
    assert len(seen) == cfg.iterations and all(s["tokens"] > 0 for s in seen)
    assert max(s["gap"] for s in seen) < 1e-5
    assert any((s["rewards"] != s["rewards"][:, :1]).any() for s in seen)      # advantages were not all 0
    assert out["log"]["clip_fraction"] == [0.0] * cfg.iterations


def test_dynamic_sampling_with_some_informative_groups_trains_on_those_only(setup, monkeypatch):
    """Problems whose answer is even get a reward with contrast (the text's length parity), the others
    0 for every completion: the loop must drop those degenerate groups and fill the batch from later
    draws, as grpo.dynamic_sampling does."""
    import grpo.lm.rl as rl
    train, test, tok = setup

    def contrast_for_even_answers(problem, text, kind="verifier", max_new_tokens=96, length=0):
        return float(len(text) % 2) if int(problem["answer"].split("####")[-1]) % 2 == 0 else 0.0

    monkeypatch.setattr(rl, "reward_by_kind", contrast_for_even_answers)
    seen = capture_updates(monkeypatch)
    cfg = RunConfig(**TINY, beta=0.0, dynamic_sampling=True)
    log = train_lm_grpo(tiny_model(tok), tok, train, test, cfg)["log"]
    assert any(d > 0 for d in log["degenerate_fraction"])               # degenerate groups were drawn
    for s in seen:
        r = s["rewards"]
        assert r.shape == (cfg.prompts, cfg.G)
        assert not (r == r[:, :1]).all(1).any()                           # no degenerate group kept
    seen.clear()
    train_lm_grpo(tiny_model(tok), tok, train, test, RunConfig(**TINY, beta=0.0))
    assert any((s["rewards"] == s["rewards"][:, :1]).all(1).any() for s in seen)   # without it: kept



def test_an_unreadable_reference_stops_the_run_before_any_compute(setup):
    train, test, tok = setup
    broken = [dict(train[0], answer="no number here")] + train[1:]
    with pytest.raises(ValueError, match="reference answer"):
        train_lm_grpo(tiny_model(tok), tok, broken, test, RunConfig(**TINY))
    with pytest.raises(ValueError, match="cannot fill a batch"):
        train_lm_grpo(tiny_model(tok), tok, train[:2], test, RunConfig(**TINY))
    with pytest.raises(ValueError, match="empty"):
        train_lm_grpo(tiny_model(tok), tok, train, [], RunConfig(**TINY))


def test_strict_score_needs_every_annotation_right():
    p = {"question": "q", "answer": "She has <<3+4=7>>7.\n#### 7"}
    assert reward_by_kind(p, "<<3+4=7>>7\n#### 7", "strict") == 1.0
    assert reward_by_kind(p, "<<3+4=8>>8\n#### 7", "strict") == 0.0          # right answer, wrong calculation
    assert reward_by_kind(p, "#### 7", "strict") == 0.0                        # no calculation shown
    assert reward_by_kind(p, "<<3+4=8>>8\n#### 7") == 1.0                      # the verifier alone passes it
    with pytest.raises(ValueError, match="reward"):
        train_lm_grpo(None, None, [p] * 3, [p], RunConfig(reward="strictest", **TINY))


def test_expert_iteration_trains_on_right_samples_only(setup, monkeypatch):
    from grpo.lm import rl
    train, test, tok = setup

    def half_right(model, tok, problems, n=1, **kw):                  # 1 in 2 samples carries the reference
        return [[p["answer"] if j % 2 == 0 else "#### -1" for j in range(n)] for p in problems]

    monkeypatch.setattr(rl, "completions", half_right)
    model = tiny_model(tok)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = rl.EIConfig(**{**TINY_EI, "iterations": 2,
                         "evaluation": replace(TINY_EI["evaluation"], every=1)})
    out = rl.expert_iteration(model, tok, train, test, cfg)
    assert out["log"]["iteration"] == [1, 2] and out["evals"]["iteration"] == [1, 2]
    assert out["log"]["reward_mean"] == [0.5, 0.5] and out["log"]["kept"] == [6, 6]   # every right one
    assert all(np.isfinite(out["log"]["loss_mean"]))
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    again = rl.expert_iteration(tiny_model(tok), tok, train, test, cfg)
    assert again["log"] == out["log"]                                  # deterministic by seed
    at_start = rl.EIConfig(**{**TINY_EI, "iterations": 2,
                              "evaluation": replace(TINY_EI["evaluation"], at_start=True)})
    first = rl.expert_iteration(tiny_model(tok), tok, train, test, at_start)
    assert first["evals"]["iteration"] == [0, 2] and first["log"] == out["log"]
    for bad in (dict(G=1), dict(lr=0.0), dict(iterations=0), dict(prompts=10_000)):
        with pytest.raises(ValueError):
            rl.expert_iteration(model, tok, train, test, rl.EIConfig(**{**TINY_EI, **bad}))
    for bad, match in ((dict(final_samples=8), "EIConfig.evaluation.final_samples"),
                       (dict(held_out=5), "EIConfig.evaluation.held_out")):
        with pytest.raises(ValueError, match=match):
            rl.EIConfig(evaluation=EvalConfig(**bad))
    with pytest.raises(ValueError, match="EIConfig.evaluation must be an EvalConfig"):
        rl.EIConfig(evaluation=None)


TINY_EI = dict(iterations=1, prompts=3, G=4, max_new_tokens=12,
               evaluation=EvalConfig(every=40, problems=2, samples=1, at_start=False))


def test_held_out_outcomes_come_with_the_run(setup, monkeypatch):
    from grpo.lm import rl
    train, test, tok = setup
    monkeypatch.setattr(rl, "PROTOCOL", type("P", (), {"held_out": lambda self, n: test[:n], "eval_seed": 1,
                                                       "final_seed": 2})())
    out = train_lm_grpo(tiny_model(tok, sft_steps=30, train=train), tok, train, test,
                     RunConfig(**{**TINY, "evaluation": replace(TINY["evaluation"], held_out=5)}))
    h = out["held_out"]
    assert h["greedy"].shape == (5,) and h["sampled"].shape == (5, TINY["evaluation"].samples)


def test_expert_iteration_strict_keeps_only_right_working(setup, monkeypatch):
    from grpo.lm import rl
    train, test, tok = setup

    def right_answer_wrong_working(model, tok, problems, n=1, **kw):  # the right number, a wrong <<a=b>>
        final = [p["answer"].rsplit("####", 1)[1].strip() for p in problems]
        return [[p["answer"] if j == 0 else f"<<1+1=3>>3\n#### {f}" for j in range(n)]
                for p, f in zip(problems, final)]

    monkeypatch.setattr(rl, "completions", right_answer_wrong_working)
    cfg = rl.EIConfig(**TINY_EI)
    assert rl.expert_iteration(tiny_model(tok), tok, train, test, cfg)["log"]["kept"] == [12]
    strict = rl.expert_iteration(tiny_model(tok), tok, train, test, rl.EIConfig(**TINY_EI, keep="strict"))
    assert strict["log"]["kept"] == [3] and strict["log"]["reward_mean"] == [1.0]
    with pytest.raises(ValueError, match="keep"):
        rl.expert_iteration(tiny_model(tok), tok, train, test, rl.EIConfig(**TINY_EI, keep="any"))


def test_the_random_reward_ignores_the_answer(setup, monkeypatch):
    """reward='random' pays 1 with probability the batch's verifier success rate, whatever the
    completion: the same rate, and no link to which completions were right."""
    import random
    from dataclasses import replace

    import grpo.lm.rl as rl
    train, test, tok = setup
    monkeypatch.setattr(rl, "reward_by_kind",
                        lambda problem, text, kind="verifier", *a, **k: float(len(text) % 2))
    cfg = replace(RunConfig(**TINY), reward="random", prompts=60, G=8)
    groups = rl.sample_groups(tiny_model(tok), tok, train[:60], cfg, torch.Generator().manual_seed(0),
                              random.Random(0))
    right = torch.stack([g.verifier for g in groups]).flatten()
    paid = torch.stack([g.rewards for g in groups]).flatten()
    assert set(paid.unique().tolist()) <= {0.0, 1.0} and 0.3 < right.mean() < 0.7
    assert abs(paid.mean() - right.mean()) < 0.08
    assert abs(paid[right == 1].mean() - paid[right == 0].mean()) < 0.12
    assert not torch.equal(paid, right)


def test_the_continued_sft_control_is_evaluated_by_its_evaluation_config(setup, monkeypatch):
    from grpo.lm import rl
    train, test, tok = setup
    monkeypatch.setattr(rl, "PROTOCOL", type("P", (), {"held_out": lambda self, n: test[:n], "eval_seed": 1,
                                                       "final_seed": 2})())
    model = tiny_model(tok)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    out = rl.continued_sft(model, tok, train, test, SFTConfig(steps=2, batch_size=4, eval_every=10_000),
                           EvalConfig(problems=3, samples=2, held_out=4))
    assert len(out["history"]["loss"]) == 2
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert out["held_out"]["greedy"].shape == (4,) and out["held_out"]["sampled"].shape == (4, 2)
    assert set(out["evals"]) >= {"greedy", "sampled"}
    plain = rl.continued_sft(tiny_model(tok), tok, train, test, SFTConfig(steps=1, batch_size=4),
                             EvalConfig(problems=3, samples=1))
    assert "held_out" not in plain
    with pytest.raises(ValueError, match="evaluation must be an EvalConfig"):
        rl.continued_sft(model, tok, train, test, SFTConfig(steps=1), {"held_out": 4})
