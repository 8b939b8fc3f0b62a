"""The tokenizer, the decoder, its KV-cache sampler, log-probs and checkpoints (lib/grpo/lm)."""
import copy
import hashlib

import numpy as np

import pytest
import torch

from grpo.lm.data import make_splits
from grpo.lm.model import (GPT, GPTConfig, Sampling, check_temperature, greedy, join, load, sample,
                           sample_plain, save, token_logprobs)
from grpo.lm.tokenizer import Tokenizer


@pytest.fixture(scope="module")
def tok():
    train, _ = make_splits(2000, 0, seed=0)
    return Tokenizer.train([p["question"] + "\n" + p["answer"] for p in train], vocab_size=300)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=300, n_layer=2, n_head=2, d_model=32, max_len=64)).eval()


PROMPTS = [[5, 6, 7, 8], [9, 10], [11, 12, 13, 14, 15, 16]]


def test_tokenizer_round_trip_and_single_digits(tok):
    _, test = make_splits(0, 50, seed=1)
    for p in test:
        text = p["question"] + "\n" + p["answer"]
        assert tok.decode(tok.encode(text)) == text
    assert tok.tokens("Mia has 1234 apples.")[3:7] == ["1", "2", "3", "4"]
    assert tok.decode([tok.eos_id, *tok.encode(" a  b\n\n"), tok.pad_id]) == " a  b\n\n"
    assert (tok.pad_id, tok.eos_id, tok.unk_id) == (0, 1, 2) and tok.vocab_size <= 300


def test_tokenizer_is_deterministic_and_saves(tok, tmp_path):
    train, _ = make_splits(2000, 0, seed=0)
    again = Tokenizer.train([p["question"] + "\n" + p["answer"] for p in train], vocab_size=300)
    tok.save(tmp_path / "a.json")
    again.save(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert Tokenizer.load(tmp_path / "a.json").encode("Mia has 3 eggs.") == tok.encode("Mia has 3 eggs.")


def test_tokenizer_bad_input(tok):
    with pytest.raises(ValueError, match="unknown"):
        tok.encode("Mia has 3 \u00e9l\u00e9phants")
    with pytest.raises(ValueError):
        tok.encode(None)
    with pytest.raises(ValueError):
        Tokenizer.train(["abc"], vocab_size=3)


def test_forward_shape_and_causality(model):
    ids = torch.randint(3, 300, (2, 10))
    logits = model(ids)
    assert logits.shape == (2, 10, 300)
    ids2 = ids.clone()
    ids2[:, 7:] = 4                                    # changing the future leaves the past alone
    assert torch.allclose(model(ids2)[:, :7], logits[:, :7], atol=1e-6)


@pytest.mark.parametrize("temperature, top_p", [(1.0, 1.0), (0.7, 0.9)])
def test_cached_sampler_equals_uncached(model, temperature, top_p):
    out = [sample(model, PROMPTS, Sampling(n=4, max_new_tokens=30, temperature=temperature, top_p=top_p),
                  generator=torch.Generator().manual_seed(3), eos_id=1, use_cache=c) for c in (True, False)]
    assert torch.equal(out[0][0], out[1][0]) and torch.equal(out[0][2], out[1][2])
    assert torch.allclose(out[0][1], out[1][1], atol=1e-5)


@pytest.mark.parametrize("prompt, temperature, eos_id", [([5, 6, 7, 8], 1.0, 1), ([9, 10], 0.7, 7),
                                                     ([11, 12, 13, 14, 15, 16], 1.5, -1)])
def test_the_plain_sampler_draws_what_the_cached_one_draws(model, prompt, temperature, eos_id):
    """Chapter 7's plain sampler (the whole sequence through the model every step) and the KV-cached
    fast path, from the same generator: the same tokens, one by one, and the same log-probs."""
    cached = sample(model, [prompt], Sampling(6, 30, temperature), generator=torch.Generator().manual_seed(2),
                    eos_id=eos_id)
    plain = sample_plain(model, prompt, 6, 30, temperature, generator=torch.Generator().manual_seed(2),
                         eos_id=eos_id)
    assert torch.equal(cached[0], plain[0]) and torch.equal(cached[2], plain[2])
    assert torch.allclose(cached[1], plain[1], atol=1e-12)
    other = sample_plain(model, prompt, 6, 30, temperature, generator=torch.Generator().manual_seed(3),
                         eos_id=eos_id)
    assert not torch.equal(other[0], plain[0])          # the test can fail: another stream differs


def test_the_plain_sampler_stops_when_every_row_has_ended(peaked):
    widths = []                                           # token 2 is the likeliest after the prompt
    for seed in range(8):
        cached = sample(peaked, [[3, 5, 2]], Sampling(4, 12, 1.0),
                        generator=torch.Generator().manual_seed(seed), eos_id=2)
        plain = sample_plain(peaked, [3, 5, 2], 4, 12, 1.0, generator=torch.Generator().manual_seed(seed),
                             eos_id=2)
        assert all(torch.equal(a, b) for a, b in zip(cached[::2], plain[::2]))
        assert (plain[0][~plain[2]] == 0).all() and (plain[1][~plain[2]] == 0).all()
        widths.append(plain[0].shape[1])
    assert min(widths) < 12                              # some draws ended before the budget


def test_sampled_logprobs_equal_a_fresh_forward(model):
    tokens, lp, mask = sample(model, PROMPTS, Sampling(n=4, max_new_tokens=30, temperature=0.7),
                              generator=torch.Generator().manual_seed(0), eos_id=1)
    ids, cmask = join(PROMPTS, 4, tokens, mask)
    fresh = token_logprobs(model, ids, cmask, temperature=0.7)
    assert torch.allclose(fresh[cmask], lp[mask], atol=1e-5)
    assert (lp[~mask] == 0).all() and (tokens[~mask] == 0).all()
    assert lp[mask].max() <= 0 and mask[:, 0].all()


def test_rows_do_not_depend_on_the_other_prompts(model):
    alone = greedy(model, [PROMPTS[1]], max_new_tokens=20, eos_id=1)[0]
    batched, mask = greedy(model, PROMPTS, max_new_tokens=20, eos_id=1)
    assert torch.equal(batched[1, :alone.shape[1]], alone[0])


def test_sampling_stops_at_eos_and_is_seeded(model):
    a = sample(model, PROMPTS, Sampling(8, 30), generator=torch.Generator().manual_seed(5), eos_id=7)
    b = sample(model, PROMPTS, Sampling(8, 30), generator=torch.Generator().manual_seed(5), eos_id=7)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    tokens, _, mask = a
    for row, m in zip(tokens, mask):
        k = int(m.sum())
        assert (row[:k - 1] != 7).all()                # no <eos> before the last kept token
        assert k == tokens.shape[1] or row[k - 1] == 7


def test_sample_bad_input(model):
    five = Sampling(1, 5)
    with pytest.raises(ValueError, match="empty"):
        sample(model, [[]], five)
    with pytest.raises(ValueError, match="non-empty"):
        sample(model, [], five)
    with pytest.raises(ValueError, match="max_len"):
        sample(model, [list(range(3, 63))], five)
    with pytest.raises(ValueError, match="token ids"):
        sample(model, [[3, 300]], five)
    with pytest.raises(ValueError, match="sampling must be a Sampling, got dict"):
        sample(model, PROMPTS, {"n": 1, "max_new_tokens": 5})
    # how to draw is checked once, when it is made
    for bad, field in (({"temperature": 0.0}, "temperature"), ({"temperature": -1.0}, "temperature"),
                       ({"temperature": float("nan")}, "temperature"), ({"top_p": 0.0}, "top_p"),
                       ({"top_p": 1.5}, "top_p"), ({"n": 0}, "n"), ({"n": 2.0}, "n"),
                       ({"max_new_tokens": 0}, "max_new_tokens"), ({"greedy": 1}, "greedy")):
        with pytest.raises(ValueError, match=f"Sampling.{field} must"):
            Sampling(**bad)
    assert Sampling(temperature=0.0, greedy=True).greedy      # greedy reads no temperature
    with pytest.raises(ValueError):
        token_logprobs(model, torch.ones(2, 5, dtype=torch.long), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError):
        model(torch.ones(1, 65, dtype=torch.long))


def test_checkpoint_round_trip_is_byte_stable(model, tmp_path):
    """Checkpoints store float32: loading gives the float64 model's weights rounded to float32,
    and saving what was loaded writes the same bytes."""
    assert save(model, tmp_path / "a.safetensors")
    back = load(tmp_path / "a.safetensors")
    assert back.cfg == model.cfg and next(back.parameters()).dtype == torch.float64
    for (k, v), w in zip(model.state_dict().items(), back.state_dict().values()):
        assert torch.equal(w, v.float().double()), k
    ids = torch.randint(3, 300, (2, 9))
    assert torch.allclose(back(ids), model(ids), rtol=0, atol=1e-5)
    (tmp_path / "b.safetensors").write_bytes(b"")
    (tmp_path / "b.safetensors").unlink()
    assert save(back, tmp_path / "b.safetensors")
    files = ("a.safetensors", "b.safetensors")
    digest = [hashlib.sha256((tmp_path / f).read_bytes()).digest() for f in files]
    assert digest[0] == digest[1]


def test_save_leaves_a_checkpoint_that_matches_to_float32_rounding(model, tmp_path):
    """A re-run on another CPU gives float64 weights that differ in the 15th digit: the stored file,
    equal to float32 rounding, is left alone (no diff in git); a real change rewrites it."""
    path = tmp_path / "a.safetensors"
    save(model, path)
    before = path.read_bytes()
    nudged = copy.deepcopy(model)
    with torch.no_grad():
        for p in nudged.parameters():
            p.mul_(1 + 1e-15)
    assert not save(nudged, path) and path.read_bytes() == before
    with torch.no_grad():
        next(nudged.parameters()).add_(1e-3)
    assert save(nudged, path) and path.read_bytes() != before


@pytest.mark.parametrize("changes, match", [(dict(d_model=16, n_head=3), "multiple of n_head"),
                                            (dict(n_head=0), "n_head must be an int >= 1, got 0"),
                                            (dict(n_layer=2.5), "n_layer must be an int"),
                                            (dict(max_len=True), "max_len must be an int"),
                                            (dict(vocab_size=-1), "vocab_size must be an int >= 1")])
def test_gpt_config_is_checked_when_made(changes, match):
    with pytest.raises(ValueError, match=match):
        GPTConfig(**{"vocab_size": 300, **changes})
    GPTConfig(vocab_size=300, d_model=18, n_head=3)          # a multiple is fine


def test_join_refuses_tokens_that_do_not_match_the_prompts(model):
    tokens, _, mask = sample(model, PROMPTS, Sampling(n=2, max_new_tokens=5),
                             generator=torch.Generator().manual_seed(0),
                             eos_id=1)
    join(PROMPTS, 2, tokens, mask)
    with pytest.raises(ValueError, match="need 6 rows"):
        join(PROMPTS, 2, tokens[:4], mask[:4])              # zip would have dropped two rows
    with pytest.raises(ValueError, match="mask"):
        join(PROMPTS, 2, tokens, mask[:, :-1])


def test_temperatures_numpy_floats_pass_and_booleans_fail(model):
    assert check_temperature(np.float32(0.5)) == 0.5 and check_temperature(2) == 2.0
    assert type(check_temperature(np.float64(0.7))) is float
    for bad in (True, 0.0, -1.0, float("nan"), float("inf"), "0.7", None):
        with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
            check_temperature(bad)
    tokens, _, mask = sample(model, PROMPTS, Sampling(n=2, max_new_tokens=5),
                             generator=torch.Generator().manual_seed(0),
                             eos_id=1)
    ids, cmask = join(PROMPTS, 2, tokens, mask)
    half = token_logprobs(model, ids, cmask, 0.5)
    assert torch.equal(token_logprobs(model, ids, cmask, np.float32(0.5)), half)
    with pytest.raises(ValueError, match="got True"):
        token_logprobs(model, ids, cmask, True)


def test_numpy_int_prompts_are_prompts(model):
    gen = lambda: torch.Generator().manual_seed(1)                              # noqa: E731
    plain = sample(model, PROMPTS, Sampling(2, 6), generator=gen(), eos_id=1)
    as_numpy = [np.array(p, dtype=np.int64) for p in PROMPTS]
    for prompts in (as_numpy, [[np.int32(t) for t in p] for p in PROMPTS]):
        again = sample(model, prompts, Sampling(2, 6), generator=gen(), eos_id=1)
        assert all(torch.equal(a, b) for a, b in zip(plain, again))
    one = sample(model, [np.int64(t) for t in PROMPTS[0]], Sampling(2, 6), generator=gen(), eos_id=1)
    assert torch.equal(one[0], sample(model, PROMPTS[0], Sampling(2, 6), generator=gen(), eos_id=1)[0])
    with pytest.raises(ValueError, match="list of int token ids"):
        sample(model, [[5, 6.5]], Sampling(1, 5))



@pytest.fixture(scope="module")
def peaked():
    """A GPT over 8 tokens whose next-token distribution is far from uniform (scaled embeddings)."""
    torch.manual_seed(4)
    m = GPT(GPTConfig(vocab_size=8, n_layer=1, n_head=2, d_model=16, max_len=16)).eval()
    with torch.no_grad():
        m.tok_emb.weight.mul_(8.0)
    return m


def first_token_counts(model, prompt, temperature, top_p=1.0, n=20_000, seed=0):
    how = Sampling(n=n, max_new_tokens=1, temperature=temperature, top_p=top_p)
    tokens, logp, _ = sample(model, [prompt], how, generator=torch.Generator().manual_seed(seed), eos_id=0)
    return torch.bincount(tokens[:, 0], minlength=model.cfg.vocab_size).double(), tokens[:, 0], logp[:, 0]


@pytest.mark.parametrize("temperature", [0.7, 1.0, 1.5])
def test_sampled_token_frequencies_follow_softmax_of_logits_over_t(peaked, temperature):
    prompt = [3, 5, 2]
    with torch.no_grad():
        p = torch.softmax(peaked(torch.tensor([prompt]))[0, -1].double() / temperature, -1)
    assert p.max() > 2 / len(p) and p.min() < 0.5 / len(p)          # far from uniform
    counts, tokens, logp = first_token_counts(peaked, prompt, temperature)
    n = counts.sum()
    seen = p * n >= 5                                               # chi-square needs expected >= 5
    chi2 = float((((counts - n * p) ** 2) / (n * p))[seen].sum())
    dof = int(seen.sum()) - 1
    assert chi2 < dof + 5 * (2 * dof) ** 0.5, (chi2, dof)          # ~ the 0.9999 quantile
    assert counts[~seen].sum() <= 5 * max(1, int((~seen).sum()))   # rare tokens stay rare
    assert torch.allclose(logp.double(), p.log()[tokens], atol=1e-5)  # and their log-probs are log p


@pytest.mark.parametrize("top_p", [0.5, 0.8, 0.95])
def test_top_p_samples_never_leave_the_nucleus_and_follow_its_renormalised_probs(peaked, top_p):
    prompt = [6, 1]
    T = 1.0
    with torch.no_grad():
        p = torch.softmax(peaked(torch.tensor([prompt]))[0, -1].double() / T, -1)
    order = p.argsort(descending=True)
    k = int((p[order].cumsum(0) < top_p).sum()) + 1                # the smallest set with mass >= top_p
    nucleus = set(order[:k].tolist())
    assert 1 <= k < len(p)                                         # the cut drops something
    counts, tokens, logp = first_token_counts(peaked, prompt, T, top_p=top_p)
    assert set(tokens.unique().tolist()) <= nucleus
    q = torch.zeros_like(p)
    q[order[:k]] = p[order[:k]] / p[order[:k]].sum()
    n = counts.sum()
    inside = q * n >= 5
    chi2 = float((((counts - n * q) ** 2) / (n * q))[inside].sum())
    dof = max(1, int(inside.sum()) - 1)
    assert chi2 < dof + 5 * (2 * dof) ** 0.5, (chi2, dof)
    # the recorded log-probs are those of the distribution sampled from: the renormalised nucleus
    assert torch.allclose(logp.double(), q.log()[tokens], atol=1e-12)
