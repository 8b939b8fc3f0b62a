"""What TRL 1.16's GRPOTrainer trains on when ``reward_funcs`` holds several functions (chapters 8, 11, 12).

TRL scores every completion with each reward function, multiplies the scores by ``reward_weights`` (all 1.0
when unset), sums them (``multi_objective_aggregation="sum_then_normalize"``, the default), and z-scores that
one sum within each group (``GRPOTrainer._generate_and_score_completions``). So a random reward put beside the
verifier in ``reward_funcs`` is trained on, and the control for a rising reward is a separate run with the
random reward alone.

Each run here is one real TRL step on the offline stand-in model, read from what TRL itself records: each
completion, each function's score and each advantage (``trainer._logs``, TRL's completions table), the logged
``reward``, and the weights after the step. Trainers built alike draw the same completions (TRL seeds torch
from ``args.seed``), so two runs' advantages and weights compare bit for bit. The verifier is a stand-in that
a random model passes about two times in three (any digit in the answer), so some groups have contrast and
some do not; chapter 7's verifier would score every answer of a random model 0.
"""
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

datasets = pytest.importorskip("datasets")
trl = pytest.importorskip("trl")

from grpo.lm.verifier import random_rewards  # noqa: E402
from hf_stand_in import saved_tiny_causal_lm  # noqa: E402

torch.set_num_threads(1)
G = 4
PROMPTS = [{"prompt": f"Question: {a} + {b} = ?\nAnswer:", "answer": f"#### {a + b}"}
           for a, b in [(2, 3), (4, 5), (1, 1), (7, 2)]]
COIN_RATE, COIN_SEED = 0.5, 1


def verifier(completions, **_):
    """The stand-in verifier: 1.0 for an answer with a digit in it."""
    return [float(any(ch.isdigit() for ch in c)) for c in completions]


def coin_reward(rate=COIN_RATE, seed=COIN_SEED):
    """The book's random reward (``grpo.lm.verifier.random_rewards``) at a fixed rate, from its own seeded
    stream: it ignores the answers."""
    coins = random.Random(seed)

    def coin(completions, **_):
        return random_rewards([coins.random() for _ in completions], rate)
    return coin


def weighted_sum(weights):
    """One reward function that is ``weights[0] * verifier + weights[1] * coin``, done by hand."""
    coin = coin_reward()

    def by_hand(completions, **kwargs):
        return [weights[0] * v + weights[1] * c
                for v, c in zip(verifier(completions), coin(completions), strict=True)]
    return by_hand


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """``run(name)``: one TRL step with the named reward setup, each run once per module."""
    model_dir = tmp_path_factory.mktemp("tiny_lm")
    tokenizer = saved_tiny_causal_lm(model_dir)
    setups = {"verifier alone": lambda: ([verifier], None),
              "verifier + coin": lambda: ([verifier, coin_reward()], None),
              "verifier + coin, weights 1, 0": lambda: ([verifier, coin_reward()], [1.0, 0.0]),
              "verifier + coin, weights 1, 0.5": lambda: ([verifier, coin_reward()], [1.0, 0.5]),
              "by hand, weights 1, 0.5": lambda: ([weighted_sum((1.0, 0.5))], None)}
    done = {}

    def one_step(name):
        if name not in done:
            funcs, weights = setups[name]()
            args = trl.GRPOConfig(output_dir=str(tmp_path_factory.mktemp("trl")), reward_weights=weights,
                                  per_device_train_batch_size=len(PROMPTS) * G, num_generations=G,
                                  max_completion_length=8, max_steps=1, learning_rate=1e-3, beta=0.0,
                                  use_cpu=True, bf16=False, save_strategy="no", logging_steps=1, seed=0,
                                  disable_tqdm=True)
            trainer = trl.GRPOTrainer(model=str(model_dir), reward_funcs=funcs, args=args,
                                      train_dataset=datasets.Dataset.from_list(PROMPTS),
                                      processing_class=tokenizer)
            trainer.train()
            done[name] = {"completions": list(trainer._logs["completion"]),
                          "scores": {k: torch.tensor(list(v)) for k, v in trainer._logs["rewards"].items()},
                          "advantages": torch.tensor(list(trainer._logs["advantages"])),
                          "log": trainer.state.log_history[0],
                          "weights": {k: v.clone() for k, v in trainer.model.state_dict().items()}}
        return done[name]
    return one_step


def same_weights(a, b):
    return all(torch.equal(a["weights"][k], b["weights"][k]) for k in a["weights"])


def group_zscore(rewards):
    """TRL 1.16's advantages for scale_rewards="group": (r - group mean) / (group's unbiased std + 1e-4),
    with TRL's own ``nanstd`` (trl/trainer/grpo_trainer.py, _generate_and_score_completions)."""
    from trl.trainer.utils import nanstd
    groups = rewards.view(-1, G)
    mean = groups.mean(1).repeat_interleave(G)
    std = nanstd(groups, dim=1).repeat_interleave(G)
    return (rewards - mean) / (std + 1e-4)


def test_trl_trains_on_the_weighted_sum_of_its_reward_functions(run):
    two, by_hand = run("verifier + coin, weights 1, 0.5"), run("by hand, weights 1, 0.5")
    assert two["completions"] == by_hand["completions"] and len(two["completions"]) == len(PROMPTS) * G
    # the two functions with reward_weights [1, 0.5] train exactly as one function that adds them so
    assert torch.equal(two["advantages"], by_hand["advantages"]) and same_weights(two, by_hand)
    s = two["scores"]["verifier"] + 0.5 * two["scores"]["coin"]
    assert torch.equal(by_hand["scores"]["by_hand"], s)
    # TRL's formula, written out, on TRL's own scores gives TRL's advantages; without the weight it would not
    assert (group_zscore(s) - two["advantages"]).abs().max() < 1e-6
    unweighted = group_zscore(two["scores"]["verifier"] + two["scores"]["coin"])
    assert (unweighted - two["advantages"]).abs().max() > 0.1
    # the `reward` TRL logs is the weighted sum's mean; each function's own mean is logged beside it
    log = two["log"]
    assert log["reward"] == pytest.approx(s.mean().item())
    assert log["rewards/verifier/mean"] == pytest.approx(two["scores"]["verifier"].mean().item())
    assert log["rewards/coin/mean"] == pytest.approx(two["scores"]["coin"].mean().item())


def test_a_random_reward_beside_the_verifier_changes_what_trl_trains_on(run):
    alone, beside = run("verifier alone"), run("verifier + coin")
    assert alone["completions"] == beside["completions"]
    v = alone["scores"]["verifier"]
    assert torch.equal(beside["scores"]["verifier"], v)
    assert (beside["advantages"] - alone["advantages"]).abs().max() > 0.5
    assert not same_weights(alone, beside)                         # a different update
    # where the verifier gave its whole group one score, it teaches nothing, and the coin's noise is all
    # that is left to train on
    flat = (v.view(-1, G).std(1) == 0).repeat_interleave(G)
    assert flat.any() and not flat.all()                           # this seeded batch has both kinds
    assert torch.equal(alone["advantages"][flat], torch.zeros(int(flat.sum())))
    coin_alone = group_zscore(beside["scores"]["coin"])[flat]      # the coin's own group z-score
    assert coin_alone.abs().max() > 0.5
    assert (beside["advantages"][flat] - coin_alone).abs().max() < 1e-6
    # and the logged reward is the verifier's mean plus the coin's
    assert beside["log"]["reward"] == pytest.approx(
        alone["log"]["reward"] + beside["scores"]["coin"].mean().item())


def test_a_random_reward_at_weight_zero_changes_nothing(run):
    alone, muted = run("verifier alone"), run("verifier + coin, weights 1, 0")
    assert alone["completions"] == muted["completions"]
    assert torch.equal(alone["advantages"], muted["advantages"]) and same_weights(alone, muted)
    assert muted["log"]["reward"] == alone["log"]["reward"]
    # the coin was still called and logged: the weight only keeps it out of the sum
    assert muted["log"]["rewards/coin/mean"] == pytest.approx(muted["scores"]["coin"].mean().item())
    assert 0 < muted["log"]["rewards/coin/mean"] < 1


def test_a_group_with_one_score_teaches_nothing_and_trl_keeps_it(run):
    """TRL 1.16 has no setting that drops or resamples such groups (no pass-rate filter); it logs their
    share as frac_reward_zero_std, gives them advantage exactly 0, and keeps them in the batch."""
    alone = run("verifier alone")
    flat = alone["scores"]["verifier"].view(-1, G).std(1) == 0
    assert alone["log"]["frac_reward_zero_std"] == pytest.approx(flat.double().mean().item())
    assert 0 < alone["log"]["frac_reward_zero_std"] < 1
    assert len(alone["advantages"]) == len(PROMPTS) * G             # every group is still in the batch
    assert torch.equal(alone["advantages"].view(-1, G)[flat], torch.zeros(int(flat.sum()), G))
