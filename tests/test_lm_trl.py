"""Our GRPO loss against TRL's GRPOTrainer, and one offline TRL step with our verifier (chapter 8).

Parity: TRL computes its loss in ``GRPOTrainer._compute_loss(model, inputs)`` from the per-token
log-probs that ``_get_per_token_logps_and_entropies`` returns. We hand that method our log-probs,
give ``inputs`` the same advantages (ours, from the same rewards), old and reference log-probs,
and compare the loss and its gradient. TRL's own advantages use the unbiased std + 1e-4 where
chapter 4 uses the population std + 1e-8, so advantages are an input here, as the issue asks.
TRL 1.16 multiplies the k3 term by the ratio pi_theta/pi_old by default
(``use_bias_correction_kl``); DeepSeekMath's eq. 3 does not, so parity runs with it off, and
separately with it on against our ``kl_ratio=True``.
"""
import math
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

datasets = pytest.importorskip("datasets")
trl = pytest.importorskip("trl")

from grpo.lm.grpo import PRESETS, LossOptions, grpo_loss  # noqa: E402
from loss_args import loss_args  # noqa: E402
from grpo.objectives import group_advantages  # noqa: E402
from grpo.lm import data, verifier  # noqa: E402
from grpo.lm.hf import chat_prompt_text, trl_dataset, trl_reward  # noqa: E402
from hf_stand_in import tiny_causal_lm  # noqa: E402

torch.set_num_threads(1)
PROBLEMS = [{"prompt": "Question: 2 + 3 = ?\nAnswer:", "answer": "#### 5"},
            {"prompt": "Question: 4 * 5 = ?\nAnswer:", "answer": "#### 20"}]


def make_trainer(model_dir, tokenizer, out_dir, reward, dataset=None, **config):
    args = trl.GRPOConfig(output_dir=str(out_dir), per_device_train_batch_size=8, num_generations=4,
                          max_completion_length=8, max_steps=1, learning_rate=1e-3, report_to="none",
                          use_cpu=True, save_strategy="no", logging_steps=1, seed=0, disable_tqdm=True,
                          **config)
    return trl.GRPOTrainer(model=str(model_dir), reward_funcs=reward, args=args,
                           train_dataset=dataset or datasets.Dataset.from_list(PROBLEMS),
                           processing_class=tokenizer)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random model saved locally (TRL loads the reference model from the policy's path)."""
    model_dir = tmp_path_factory.mktemp("tiny_lm")
    model, tokenizer = tiny_causal_lm(seed=0)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return model_dir, tokenizer


@pytest.fixture(scope="module")
def trainer(tiny, tmp_path_factory):
    model_dir, tokenizer = tiny
    return make_trainer(model_dir, tokenizer, tmp_path_factory.mktemp("trl"), trl_reward(lambda c, a: 0.0),
                        beta=0.04, use_bias_correction_kl=False)


def trl_loss(trainer, logp, logp_old, logp_ref, mask, advantages, loss_type, eps_low, eps_high, beta,
             max_tokens=None):
    """TRL's loss on our inputs: its log-prob method returns ours, the rest goes in ``inputs``."""
    trainer.loss_type, trainer.beta = loss_type, beta
    trainer.epsilon_low, trainer.epsilon_high = eps_low, eps_high
    trainer.max_completion_length = max_tokens or logp.shape[1]          # Dr. GRPO's constant
    trainer.current_gradient_accumulation_steps = 1
    trainer.model.train()
    trainer._get_per_token_logps_and_entropies = lambda *a, **k: (logp, torch.zeros_like(logp), None)
    N, T = logp.shape
    inputs = {"prompt_ids": torch.zeros(N, 1, dtype=torch.long),
              "prompt_mask": torch.ones(N, 1, dtype=torch.long),
              "completion_ids": torch.zeros(N, T, dtype=torch.long),
              "completion_mask": mask.long(), "advantages": advantages,
              "old_per_token_logps": logp_old, "ref_per_token_logps": logp_ref,
              "num_items_in_batch": mask.sum()}
    return trainer._compute_loss(trainer.model, inputs)


def batch(seed, B=4, G=4, T=8, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    logp = -3 * torch.rand(B * G, T, generator=g, dtype=dtype)
    logp_old = logp + 0.3 * torch.randn(B * G, T, generator=g, dtype=dtype)   # some ratios clipped
    logp_ref = logp + 0.3 * torch.randn(B * G, T, generator=g, dtype=dtype)
    mask = torch.arange(T)[None] < torch.randint(1, T + 1, (B * G, 1), generator=g)
    rewards = torch.randint(0, 2, (B, G), generator=g).to(dtype)
    rewards[0] = 1.0
    return logp, logp_old, logp_ref, mask, rewards


# (TRL loss_type, our options): DeepSeekMath's sequence mean, Dr. GRPO's constant, DAPO's tokens
# Dr. GRPO's constant is the generation budget: here the batch's width T = 8 (TRL: max_completion_length)
OPT = {name: preset.loss_options() for name, preset in PRESETS.items()}
DR_GRPO = {**OPT["dr_grpo"], "max_tokens": 8}
CASES = [("grpo", OPT["grpo"]), ("dr_grpo", DR_GRPO), ("dapo", OPT["dapo"]),
         ("dr_grpo", {**DR_GRPO, "beta": 0.04}), ("dapo", {**OPT["dapo"], "beta": 0.04}),
         ("grpo", {**OPT["grpo"], "eps_high": 0.28, "advantage": "center"}),
         ("dr_grpo", {**OPT["dr_grpo"], "max_tokens": 11})]
PARITY_TOL = 1e-14


@pytest.mark.parametrize("loss_type, options", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("seed", [0, 1])
def test_loss_and_gradient_equal_trls(trainer, loss_type, options, seed):
    logp, logp_old, logp_ref, mask, rewards = batch(seed)
    ours_logp = logp.clone().requires_grad_()
    theirs_logp = logp.clone().requires_grad_()
    ours, stats = grpo_loss(ours_logp, logp_old, logp_ref, mask, rewards, **loss_args(options))
    eps_high = options["eps_low"] if options["eps_high"] is None else options["eps_high"]
    advantages = group_advantages(rewards, options["advantage"]).flatten()
    theirs = trl_loss(trainer, theirs_logp, logp_old, logp_ref, mask, advantages, loss_type,
                      options["eps_low"], eps_high, options["beta"], options.get("max_tokens"))
    ours.backward()
    theirs.backward()
    assert abs(ours.item() - theirs.item()) < PARITY_TOL
    assert (ours_logp.grad - theirs_logp.grad).abs().max().item() < PARITY_TOL
    assert stats["clip_fraction"] > 0                      # the clip was exercised
    assert stats["clip_fraction"] == pytest.approx(trainer._metrics["train"]["clip_ratio/region_mean"][-1])
    if options["beta"] > 0:
        assert stats["kl_mean"] == pytest.approx(trainer._metrics["train"]["kl"][-1])


def test_parity_would_catch_a_wrong_setting(trainer):
    """The same comparison fails when one TRL knob differs: clip-higher's eps_high, or the beta."""
    logp, logp_old, logp_ref, mask, rewards = batch(0)
    ours, _ = grpo_loss(logp, logp_old, logp_ref, mask, rewards, **loss_args({**OPT["dapo"], "beta": 0.04}))
    advantages = group_advantages(rewards).flatten()
    symmetric = trl_loss(trainer, logp, logp_old, logp_ref, mask, advantages, "dapo", 0.2, 0.2, 0.04)
    no_kl = trl_loss(trainer, logp, logp_old, logp_ref, mask, advantages, "dapo", 0.2, 0.28, 0.0)
    right = trl_loss(trainer, logp, logp_old, logp_ref, mask, advantages, "dapo", 0.2, 0.28, 0.04)
    assert abs(ours.item() - right.item()) < PARITY_TOL
    assert abs(ours.item() - symmetric.item()) > 1e-6 and abs(ours.item() - no_kl.item()) > 1e-6


def test_parity_in_float32(trainer):
    logp, logp_old, logp_ref, mask, rewards = batch(2, dtype=torch.float32)
    for loss_type, options in CASES[:3]:
        ours, _ = grpo_loss(logp, logp_old, logp_ref, mask, rewards, **loss_args(options))
        eps_high = options["eps_low"] if options["eps_high"] is None else options["eps_high"]
        theirs = trl_loss(trainer, logp, logp_old, logp_ref, mask,
                          group_advantages(rewards, options["advantage"]).flatten(), loss_type,
                          options["eps_low"], eps_high, options["beta"], options.get("max_tokens"))
        assert abs(ours.item() - theirs.item()) < 1e-6


@pytest.mark.parametrize("loss_type, options", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_kl_ratio_equals_trls_default_bias_corrected_kl(trainer, loss_type, options):
    """TRL 1.16 weights k3 by rho by default (use_bias_correction_kl): our kl_ratio=True."""
    logp, logp_old, logp_ref, mask, rewards = batch(3)
    options = {**options, "beta": 0.04}
    eps_high = options["eps_low"] if options["eps_high"] is None else options["eps_high"]
    advantages = group_advantages(rewards, options["advantage"]).flatten()
    trainer.args.use_bias_correction_kl = True
    try:
        y = logp.clone().requires_grad_()
        theirs = trl_loss(trainer, y, logp_old, logp_ref, mask, advantages, loss_type,
                          options["eps_low"], eps_high, 0.04, options.get("max_tokens"))
    finally:
        trainer.args.use_bias_correction_kl = False
    theirs.backward()
    x = logp.clone().requires_grad_()
    ours, _ = grpo_loss(x, logp_old, logp_ref, mask, rewards, **loss_args({**options, "kl_ratio": True}))
    ours.backward()
    assert abs(ours.item() - theirs.item()) < PARITY_TOL
    assert (x.grad - y.grad).abs().max().item() < PARITY_TOL
    z = logp.clone().requires_grad_()                     # on-policy the value is the same,
    plain, _ = grpo_loss(z, logp, logp_ref, mask, rewards, **loss_args(options))
    w = logp.clone().requires_grad_()
    weighted, _ = grpo_loss(w, logp, logp_ref, mask, rewards, **loss_args({**options, "kl_ratio": True}))
    plain.backward()
    weighted.backward()
    assert abs(plain.item() - weighted.item()) < PARITY_TOL
    assert (z.grad - w.grad).abs().max().item() > 1e-6    # the gradient is not: d(rho k3) = k3 + dk3


# GSPO: one ratio per completion (TRL's importance_sampling_level="sequence"), with the loss types
# and KL weightings TRL allows beside it; "grpo" is the GSPO paper's setup.
GSPO_CASES = [("grpo", OPT["grpo"], False), ("grpo", {**OPT["grpo"], "beta": 0.0}, False),
              ("grpo", OPT["grpo"], True), ("dapo", {**OPT["dapo"], "beta": 0.04}, False),
              ("dr_grpo", {**DR_GRPO, "beta": 0.04}, True)]


@pytest.mark.parametrize("loss_type, options, bias_corrected", GSPO_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(GSPO_CASES)])
@pytest.mark.parametrize("seed", [0, 4])
def test_sequence_level_ratio_equals_trls_gspo(trainer, loss_type, options, bias_corrected, seed):
    logp, logp_old, logp_ref, mask, rewards = batch(seed)
    shift = 0.3 * torch.randn(logp.shape[0], 1, generator=torch.Generator().manual_seed(seed),
                              dtype=logp.dtype)
    logp_old = logp_old + shift                           # some mean log-ratios past the band
    eps_high = options["eps_low"] if options["eps_high"] is None else options["eps_high"]
    advantages = group_advantages(rewards, options["advantage"]).flatten()
    trainer.importance_sampling_level, trainer.args.use_bias_correction_kl = "sequence", bias_corrected
    try:
        y = logp.clone().requires_grad_()
        theirs = trl_loss(trainer, y, logp_old, logp_ref, mask, advantages, loss_type,
                          options["eps_low"], eps_high, options["beta"], options.get("max_tokens"))
    finally:
        trainer.importance_sampling_level, trainer.args.use_bias_correction_kl = "token", False
    x = logp.clone().requires_grad_()
    ours, stats = grpo_loss(x, logp_old, logp_ref, mask, rewards,
                            **loss_args({**options, "kl_ratio": bias_corrected, "ratio_level": "sequence"}))
    ours.backward()
    theirs.backward()
    assert abs(ours.item() - theirs.item()) < PARITY_TOL
    assert (x.grad - y.grad).abs().max().item() < PARITY_TOL
    assert 0 < stats["clip_fraction"] < 1                 # some completions clipped, not all
    assert stats["clip_fraction"] == pytest.approx(trainer._metrics["train"]["clip_ratio/region_mean"][-1])
    token, _ = grpo_loss(logp, logp_old, logp_ref, mask, rewards,
                         **loss_args({**options, "kl_ratio": bias_corrected}))
    assert abs(token.item() - ours.item()) > 1e-6         # off-policy, the two ratios differ


# ---------------------------------------------------------------------------------------------
# The verifier as TRL's reward function, and one offline TRL step

def test_trl_reward_adapter_scores_text_and_conversations():
    def stand_in(completion, answer):                 # the shape of grpo.lm.verifier.reward
        return 1.0 if completion.strip().endswith(answer.split("####")[-1].strip()) else 0.0

    reward = trl_reward(stand_in)
    assert reward(["so #### 5", "#### 6"], answer=["#### 5", "#### 5"], prompts=["p", "p"]) == [1.0, 0.0]
    conversations = [[{"role": "assistant", "content": "#### 20"}]]
    assert reward(conversations, answer=["#### 20"]) == [1.0]


def test_trl_reward_uses_chapter_7s_verifier():
    reward = trl_reward()
    assert reward(["3 + 2 = 5\n#### 5", "#### 6", "no answer"], answer=["#### 5"] * 3) == [1.0, 0.0, 0.0]


def test_one_offline_trl_step_with_our_verifier(tiny, tmp_path):
    model_dir, tokenizer = tiny
    rows = [data.make_problem(random.Random(i), 1) for i in range(2)]
    dataset = trl_dataset(rows, tokenizer)
    assert dataset[0] == {"prompt": chat_prompt_text(tokenizer, rows[0]["question"]),
                          "answer": rows[0]["answer"]}
    calls = []

    def spy(completion, answer):                          # chapter 7's verifier, watched
        calls.append((completion, answer))
        return verifier.reward(completion, answer)

    trainer = make_trainer(model_dir, tokenizer, tmp_path, trl_reward(spy), dataset=dataset, beta=0.04,
                           loss_type="grpo")
    trainer.train()
    log = trainer.state.log_history[0]
    assert math.isfinite(log["loss"]) and log["step"] == 1
    # TRL hands our adapter every completion with its own row's reference, G = 4 per prompt
    assert len(calls) == 8 and all(isinstance(c, str) for c, _ in calls)
    answers = [a for _, a in calls]
    assert all(answers[i] == answers[i - i % 4] for i in range(8))              # one answer per group
    assert set(answers) <= {r["answer"] for r in rows}
    assert log["rewards/gsm8k_reward/mean"] == pytest.approx(
        sum(verifier.reward(c, a) for c, a in calls) / len(calls))                   # our scores, logged


def test_one_offline_trl_step_learns_from_a_reward_with_contrast(tiny, tmp_path):
    model_dir, tokenizer = tiny
    digits = trl_reward(lambda completion, answer: float(sum(ch.isdigit() for ch in completion)))
    trainer = make_trainer(model_dir, tokenizer, tmp_path, digits, beta=0.04, loss_type="dapo",
                           epsilon_high=0.28)
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.train()
    log = trainer.state.log_history[0]
    assert math.isfinite(log["loss"]) and log["frac_reward_zero_std"] < 1.0
    assert not all(torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())


def test_trl_advantages_are_trls_own():
    """``advantage="trl"`` is TRL 1.16's scale_rewards="group": the lines of
    ``GRPOTrainer._generate_and_score_completions``, with TRL's own ``nanstd``."""
    from trl.trainer.utils import nanstd
    rewards = batch(4, B=6, G=4)[4]
    G = rewards.shape[1]
    flat = rewards.flatten()
    mean = flat.view(-1, G).mean(1).repeat_interleave(G)
    std = nanstd(flat.view(-1, G), dim=1).repeat_interleave(G)
    theirs = (flat - mean) / (std + 1e-4)
    # TRL's nanstd takes its G / (G - 1) in float32 (an int tensor divided), hence 1e-7, not 1e-15
    assert (group_advantages(rewards, "trl").flatten() - theirs).abs().max().item() < 1e-7
    assert (group_advantages(rewards, "zscore").flatten() - theirs).abs().max().item() > 0.1


def test_chapter_12s_loss_at_ratio_1_is_what_trl_logs(trainer):
    """Chapter 12's group of two answers, 10 and 50 tokens, the first right, at rho = 1 and beta = 0:
    with TRL's advantages our loss is TRL's, for each loss_type; the book's population-std
    advantages give other values (0.667 and 0.400 against TRL's 0.471 and 0.283)."""
    from grpo.experiments.ch12_practice.failure_runs import AGGREGATIONS
    lengths = torch.tensor([10, 50])
    mask = (torch.arange(50) < lengths[:, None]).double()
    logp = torch.zeros(2, 50, dtype=torch.float64)
    rewards = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    logged = {}
    for loss_type, aggregation in AGGREGATIONS.items():
        ours = grpo_loss(logp, logp, None, mask, rewards,
                         LossOptions(advantage="trl", beta=0.0, aggregation=aggregation),
                         max_tokens=50)[0].item()
        theirs = trl_loss(trainer, logp.clone().requires_grad_(), logp, None, mask,
                          group_advantages(rewards, "trl").flatten(), loss_type, 0.2, 0.2, 0.0, 50)
        assert abs(ours - theirs.item()) < PARITY_TOL
        book = grpo_loss(logp, logp, None, mask, rewards, LossOptions(beta=0.0, aggregation=aggregation),
                         max_tokens=50)[0].item()
        logged[loss_type] = (round(ours, 3), round(book, 3))
    assert logged == {"grpo": (0.0, 0.0), "dapo": (0.471, 0.667), "dr_grpo": (0.283, 0.4)}
