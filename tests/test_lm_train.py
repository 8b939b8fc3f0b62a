"""Supervised fine-tuning and evaluation helpers (lib/grpo/lm/train.py)."""
import math
import random

import pytest
import torch

from grpo.lm.data import make_splits
from grpo.lm.model import GPT, GPTConfig
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.data import encode_problem
from grpo.lm.eval import completions, rewards
from grpo.lm.train import SFTConfig, length_batches, lr_at, sft
from grpo.runstore.models import ANSWER_ONLY_CHECKPOINT, load_sft


@pytest.fixture(scope="module")
def setup():
    train, test = make_splits(400, 20, seed=0)
    tok = Tokenizer.train([p["question"] + "\n" + p["answer"] for p in train], 300)
    return train, test, tok


def test_lr_schedule_warms_up_then_decays():
    cfg = SFTConfig(steps=100, lr=1e-3, warmup=10, min_lr_frac=0.1)
    lrs = [lr_at(s, cfg) for s in range(100)]
    assert lrs[0] == pytest.approx(1e-4) and lrs[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))
    assert lrs[-1] == pytest.approx(1e-4, rel=0.05)


def test_batches_target_only_solution_tokens(setup):
    train, _, tok = setup
    enc = [encode_problem(tok, p) for p in train]
    ids, tgt = next(length_batches(enc, SFTConfig(batch_size=8), random.Random(0)))
    assert ids.shape == tgt.shape and ids.shape[0] == 8
    for row_ids, row_tgt in zip(ids, tgt):
        row = row_ids.tolist()
        full = next(p + a for p, a in enc if row[:len(p + a) - 1] == (p + a)[:-1]
                    and not any(row[len(p + a):]))
        n_target = int((row_tgt != -100).sum())
        assert 1 < n_target < len(full)
        k = (row_tgt != -100).nonzero()[:, 0]
        assert torch.equal(row_tgt[k], torch.tensor(full)[k + 1])     # each target is the next token
        assert full[int(k[-1]) + 1] == tok.eos_id


def test_sft_lowers_the_loss_and_is_deterministic(setup):
    train, test, tok = setup
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=1, n_head=2, d_model=32, max_len=160))
        cfg = SFTConfig(steps=30, batch_size=16, lr=3e-3, warmup=5, eval_every=15, eval_problems=4)
        runs.append(sft(model, tok, train, test, cfg))
    assert runs[0] == runs[1]
    h = runs[0]
    assert sum(h["loss"][-5:]) < 0.7 * sum(h["loss"][:5])
    assert h["eval_step"] == [15, 30] and len(h["eval_greedy"]) == 2
    assert all(math.isfinite(x) for x in h["loss"])


def test_sft_progress_wraps_the_steps_and_changes_nothing(setup):
    train, test, tok = setup
    seen, runs = [], []
    def bar(steps, desc):
        seen.append((list(steps), desc))
        return steps
    for progress in (None, bar):
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=1, n_head=2, d_model=32, max_len=160))
        cfg = SFTConfig(steps=6, batch_size=8, lr=3e-3, warmup=2, eval_every=6, eval_problems=2)
        runs.append(sft(model, tok, train, test, cfg, progress=progress))
    assert seen == [(list(range(6)), "SFT")] and runs[0] == runs[1]


def test_completions_and_rewards_shapes(setup):
    _, test, tok = setup
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=1, n_head=2, d_model=32, max_len=160)).eval()
    g = completions(model, tok, test[:5], max_new_tokens=8)
    s = completions(model, tok, test[:5], n=3, temperature=1.0, generator=torch.Generator().manual_seed(0),
                    max_new_tokens=8, batch=4)
    assert [len(x) for x in g] == [1] * 5 and [len(x) for x in s] == [3] * 5
    r = rewards(test[:5], s)
    assert r.shape == (5, 3) and set(r.ravel()) <= {0.0, 1.0}
    assert rewards(test[:1], [[test[0]["answer"]]])[0, 0] == 1.0


@pytest.mark.parametrize("kw", [{"lr": 0.0}, {"steps": 0}, {"batch_size": 0}])
def test_sft_bad_input(setup, kw):
    train, test, tok = setup
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=1, n_head=2, d_model=32, max_len=160))
    with pytest.raises(ValueError):
        sft(model, tok, train, test, SFTConfig(**kw))


def test_load_sft(tmp_path):
    with pytest.raises(FileNotFoundError, match="07_small_lm"):
        load_sft(tmp_path)
    model, tok = load_sft()                            # the committed checkpoint of chapter 7
    assert model.cfg.vocab_size == tok.vocab_size and not model.training
    twin, _ = load_sft(checkpoint=ANSWER_ONLY_CHECKPOINT)       # and its answer-only twin
    assert twin.cfg == model.cfg and not torch.equal(twin.tok_emb.weight, model.tok_emb.weight)
    prompt = encode_problem(tok, make_splits(0, 1, seed=0)[1][0])[0]
    assert model(torch.tensor([prompt])).shape == (1, len(prompt), tok.vocab_size)


def test_rewards_refuses_mismatched_lengths_and_unreadable_references(setup):
    _, test, _ = setup
    right = [[test[0]["answer"]], [test[1]["answer"]]]
    assert rewards(test[:2], right).tolist() == [[1.0], [1.0]]
    with pytest.raises(ValueError, match="2 problems, 1 rows"):
        rewards(test[:2], right[:1])                   # zip would have dropped problem 1
    with pytest.raises(ValueError, match="1 problems, 2 rows"):
        rewards(test[:1], right)
    with pytest.raises(ValueError, match="at least one problem"):
        rewards([], [])
    with pytest.raises(ValueError, match="rows"):
        rewards(test[:1], ["#### 3"])                  # a row, not a string (its characters)
    with pytest.raises(ValueError, match="reference answer"):
        rewards([{"question": "q", "answer": "#### many"}], [["#### 3"]])


def test_greedy_completions_refuse_n_above_one(setup):
    _, test, tok = setup
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=1, n_head=2, d_model=32, max_len=160)).eval()
    with pytest.raises(ValueError, match="one completion per problem, not n = 3"):
        completions(model, tok, test[:2], n=3)


def test_sft_refuses_an_empty_eval_set_and_a_problem_longer_than_the_context(setup):
    train, test, tok = setup
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=1, n_head=2, d_model=32, max_len=160))
    cfg = SFTConfig(steps=2, batch_size=4, eval_every=1)
    with pytest.raises(ValueError, match="evals must hold at least one held-out problem"):
        sft(model, tok, train[:8], [], cfg)               # not a NaN accuracy
    with pytest.raises(ValueError, match="train must hold at least one training problem"):
        sft(model, tok, [], test, cfg)
    with pytest.raises(ValueError, match="eval_problems"):
        sft(model, tok, train[:8], test, SFTConfig(steps=2, eval_problems=0))
    short = GPT(GPTConfig(vocab_size=tok.vocab_size, n_layer=1, n_head=2, d_model=32, max_len=16))
    before = {k: v.clone() for k, v in short.state_dict().items()}
    with pytest.raises(ValueError, match="max_len"):
        sft(short, tok, train[:8], test, cfg)
    assert all(torch.equal(before[k], v) for k, v in short.state_dict().items())    # before any step


def test_completions_refuses_zero_samples_and_batch(setup):
    _, test, _ = setup
    model = GPT(GPTConfig(vocab_size=64, n_layer=1, n_head=1, d_model=8, max_len=32))
    with pytest.raises(ValueError, match="n must be"):
        completions(model, None, test[:1], n=0, temperature=0.7)   # was a ZeroDivisionError
    with pytest.raises(ValueError, match="batch must be"):
        completions(model, None, test[:1], batch=0)
