"""Chapter 9's addition task (lib/grpo/lm/addition.py) and its jobs (lib/grpo/runstore/addition_jobs.py)."""
from dataclasses import replace

import numpy as np
import pytest

from grpo.lm import addition as A
from grpo.runstore import addition_jobs as J
from grpo.lm.verifier import reward
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.train import SFTConfig


def test_splits_are_disjoint_fixed_and_cover_every_pair():
    train, val, test = A.make_addition_splits()
    assert (len(train), len(val), len(test)) == (8100 - A.N_TEST - A.N_VAL, A.N_VAL, A.N_TEST)
    qs = [p["question"] for p in train + val + test]
    assert len(set(qs)) == 8100
    assert A.make_addition_splits()[2] == test
    a, b = map(int, test[0]["question"].rstrip("=").split("+"))
    assert reward(f"#### {a + b}", test[0]["answer"]) == 1.0
    assert reward(f"#### {a + b + 1}", test[0]["answer"]) == 0.0


def test_the_answer_is_four_tokens_then_eos():
    tok = A.addition_tokenizer()
    assert tok.tokens("#### 72") == ["####", "▁", "7", "2"]
    assert tok.tokens("24+48=\n") == ["2", "4", "+", "4", "8", "=", "\n"]
    assert J.addition_model(tok).n_params == 108_416
    assert Tokenizer.from_str(tok.to_str()).encode("13+7=") == tok.encode("13+7=")


@pytest.fixture(scope="module")
def start():
    model, tok, hist = J.train_sft(cfg=replace(J.SFT_RECIPE, steps=50, eval_every=25, eval_problems=8))
    assert hist["eval_step"] == [25, 50] and len(hist["states"]) == 2
    return dict(zip(hist["eval_step"], hist["states"])), tok


def test_run_jobs_is_deterministic_and_keeps_job_order(start):
    starts, tok = start
    cfg = replace(J.GRPO_RECIPE, iterations=2, prompts=4, G=4,
                  evaluation=replace(J.GRPO_RECIPE.evaluation, every=1, problems=4))
    more_sft = SFTConfig(steps=3, batch_size=8, eval_every=10_000)
    jobs = [J.Job(50, cfg, samples=2), J.Job(25, None, samples=2), J.Job(50, more_sft, samples=2),
            J.Job(50, cfg, samples=2)]
    out = J.run_jobs(jobs, starts, tok, workers=2)
    assert [o["start"] for o in out] == [50, 25, 50, 50]
    assert out[0]["greedy"].shape == (A.N_TEST,) and out[0]["sampled"].shape == (A.N_TEST, 2)
    assert out[0]["log"]["iteration"] == [1, 2] and "history" in out[2] and "log" not in out[1]
    np.testing.assert_array_equal(out[0]["sampled"], out[3]["sampled"])       # same job, same result
    untimed = [{k: v for k, v in o["log"].items() if not k.endswith("_s")} for o in (out[0], out[3])]
    assert untimed[0] == untimed[1]


def test_bad_jobs_are_a_clear_error(start):
    starts, tok = start
    with pytest.raises(ValueError, match="start"):
        J.run_jobs([J.Job(999, None)], starts, tok)
    with pytest.raises(ValueError, match="RunConfig"):
        J.run_jobs([J.Job(25, "grpo")], starts, tok)


def test_carries_and_commuted_twins():
    from grpo.lm import addition as A
    assert A.carries(A.problem(24, 48)) and not A.carries(A.problem(24, 35))
    train = [A.problem(35, 24), A.problem(11, 11)]
    assert A.commuted_twin_in_train([A.problem(24, 35), A.problem(11, 11), A.problem(24, 48)], train) == \
        [True, False, False]                             # 11+11 is its own twin, not a twin in training
    tr, _, te = A.make_addition_splits()
    assert 0.6 < np.mean(A.commuted_twin_in_train(te, tr)) < 0.75
