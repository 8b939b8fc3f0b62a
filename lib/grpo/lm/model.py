"""A small GPT in one file: the decoder, its KV-cache sampler, log-probs and checkpoints.

The model is nanoGPT's: token + position embeddings, ``n_layer`` pre-norm blocks of causal
self-attention and an MLP, a final LayerNorm and an output head tied to the token embedding.

    model = GPT(GPTConfig(vocab_size=tok.vocab_size))
    logits = model(ids)                                   # (B, T) long -> (B, T, V) float

Sampling (what GRPO needs)
    ``sample_plain(model, prompt, n, max_new_tokens, temperature, generator, eos_id)`` is the idea
    in a dozen lines (the whole sequence through the model at every step); ``sample`` is the fast
    path, drawing the same tokens from the same generator:
    ``sample(model, prompt_ids, Sampling(n, max_new_tokens, temperature, top_p), generator,
    eos_id)`` -> ``tokens, logprobs, mask``, each (len(prompt_ids) * n, L) with
    L <= max_new_tokens. ``Sampling`` holds how to draw, checked once when it is made. Rows are
    prompt 0's n samples, then prompt 1's, and so on. ``logprobs[b, t]`` is log pi(token | prefix)
    under the distribution the token was drawn from, softmax(logits / temperature) (renormalised
    over the top-p set when top_p < 1): at top_p = 1, the number ``token_logprobs`` gives, so GRPO's
    pi_old needs no second forward pass. ``mask`` is True
    on generated tokens up to and including ``<eos>``; after it, tokens are ``pad_id`` and log-probs
    0. ``Sampling(greedy=True)`` takes the argmax (log-probs then at temperature 1);
    ``use_cache=False`` recomputes the whole prefix at every step (slow; it checks the cache).
``greedy(model, prompt_ids, max_new_tokens, eos_id)``
    the argmax completions, for evaluation.
``token_logprobs(model, ids, mask, temperature)``
    log pi(ids[:, t] | ids[:, :t]) at ``temperature`` for every position where ``mask`` is True
    (0 elsewhere). ``ids`` are right-padded sequences, e.g. from ``join(prompt_ids, n, tokens,
    mask)``. It reads any logits through ``logprobs_at_temperature``, the book's one home for
    log-probs at a temperature (chapter 8's loss and the Hugging Face path use it too).
``save(model, path)`` / ``load(path)``
    safetensors checkpoints with the config in the header: byte-stable across runs and CPUs.

Precision. The model computes in float64 (``DTYPE``): every CPU's kernels (MKL's, ATen's,
whichever SIMD path they pick) then agree to about 1e-15, far below anything that could change a
sampled token, so a run re-executed on another machine samples the same tokens and prints the same
numbers. In float32 the kernels' differences (about 1e-7) flip a sampled token within a few hundred
updates, and from there the run is another run (README, "Reproducible on any x86-64 CPU").
Checkpoints store float32, which rounds those 1e-15 differences away.
"""
from __future__ import annotations

import json
import math
import numbers
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from grpo.files import write_atomically

DTYPE = torch.float64        # the small models' compute precision (see the module docstring)
CHECKPOINT_DTYPE = torch.float32

@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 128
    max_len: int = 256        # prompt + completion tokens
    mlp_ratio: int = 4

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"GPTConfig.{f.name} must be an int >= 1, got {value!r}")
        if self.d_model % self.n_head:
            raise ValueError("d_model must be a multiple of n_head (each head gets d_model / "
                             f"n_head dimensions), got d_model={self.d_model}, "
                             f"n_head={self.n_head}")


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1 = nn.LayerNorm(cfg.d_model, dtype=DTYPE)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False, dtype=DTYPE)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False, dtype=DTYPE)
        self.ln2 = nn.LayerNorm(cfg.d_model, dtype=DTYPE)
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model, bias=False, dtype=DTYPE)
        self.fc_out = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model, bias=False, dtype=DTYPE)

    def heads(self, x):
        """Queries, keys and values of ``x`` (B, T, C), each (B, n_head, T, C / n_head)."""
        B, T, C = x.shape
        qkv = self.qkv(self.ln1(x)).view(B, T, 3, self.n_head, C // self.n_head)
        return qkv.permute(2, 0, 3, 1, 4)

    def finish(self, x, y):
        """The rest of the block, from the attention's output ``y`` (B, n_head, T, C / n_head)."""
        B, T, C = x.shape
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))

    def forward(self, x, attn_mask=None, cache=None, cache_pos=0):
        q, k, v = self.heads(x)
        T = x.shape[1]
        if cache is not None:                          # add this step's keys/values, attend to all
            cache[0][:, :, cache_pos:cache_pos + T] = k
            cache[1][:, :, cache_pos:cache_pos + T] = v
            k, v = cache[0][:, :, :cache_pos + T], cache[1][:, :, :cache_pos + T]
        if attn_mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif T == 1:                                   # one new token: plain attention is faster
            att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(k.shape[-1]))
            y = torch.softmax(att.masked_fill(~attn_mask, float("-inf")), dim=-1) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return self.finish(x, y)


class GPT(nn.Module):
    """nanoGPT-style decoder. ``model(ids)`` gives next-token logits at every position."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model, dtype=DTYPE)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model, dtype=DTYPE)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model, dtype=DTYPE)
        for name, p in self.named_parameters():        # GPT-2 init, residual projections smaller
            if p.dim() == 2:
                residual = name.endswith(("proj.weight", "fc_out.weight"))
                std = 0.02 / math.sqrt(2 * cfg.n_layer) if residual else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, ids, pos=None, attn_mask=None, caches=None, cache_pos=0):
        """Logits (B, T, V). ``pos``, ``attn_mask`` and ``caches`` are for the sampler; plain calls
        use positions 0..T-1 and a causal mask."""
        if ids.dim() != 2 or ids.shape[1] == 0 or ids.shape[1] + cache_pos > self.cfg.max_len:
            raise ValueError(f"ids must be (B, T), 0 < T <= {self.cfg.max_len}: "
                             f"got {tuple(ids.shape)}")
        if pos is None:
            pos = torch.arange(cache_pos, cache_pos + ids.shape[1])
        x = self.tok_emb(ids) + self.pos_emb(pos)
        for i, block in enumerate(self.blocks):
            x = block(x, attn_mask, None if caches is None else caches[i], cache_pos)
        return F.linear(self.ln_f(x), self.tok_emb.weight)       # tied head

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


# ----------------------------------------------------------------------------- sampling

def check_temperature(temperature, name: str = "temperature") -> float:
    """``temperature`` as a float if it is a finite real number > 0 (NumPy floats too, not True)."""
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
            or not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {temperature!r}")
    return float(temperature)


def _check_prompts(model, prompt_ids, max_new_tokens):
    # tensor, ndarray
    if hasattr(prompt_ids, "tolist") and not isinstance(prompt_ids, (list, tuple)):
        prompt_ids = prompt_ids.tolist()
    if not isinstance(prompt_ids, (list, tuple)) or len(prompt_ids) == 0:
        raise ValueError("prompt_ids must be a non-empty list of token-id lists")
    if isinstance(prompt_ids[0], numbers.Integral):           # one prompt (NumPy ints too)
        prompt_ids = [prompt_ids]
    prompt_ids = [p.tolist() if hasattr(p, "tolist") else p for p in prompt_ids]
    for p in prompt_ids:
        if not isinstance(p, (list, tuple)) or not all(isinstance(t, numbers.Integral) for t in p):
            raise ValueError(f"each prompt must be a list of int token ids, got {p!r:.60}")
    V, L = model.cfg.vocab_size, model.cfg.max_len
    for p in prompt_ids:
        if len(p) == 0:
            raise ValueError("empty prompt: a prompt needs at least one token")
        if len(p) + max_new_tokens > L:
            raise ValueError(f"prompt of {len(p)} tokens + {max_new_tokens} new exceeds "
                             f"max_len={L}")
        if min(p) < 0 or max(p) >= V:
            raise ValueError(f"token ids must be in [0, {V}), got {min(p)}..{max(p)}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    return [list(map(int, p)) for p in prompt_ids]


def _left_padded(prompts, pad_id):
    """Prompts left-padded to one length P: ids (U, P), the valid-key mask (U, P), each row's
    length and positions (padding gets position 0), and the prompt's attention mask (U, P, P)."""
    U, P = len(prompts), max(len(p) for p in prompts)
    ids = torch.full((U, P), pad_id, dtype=torch.long)
    valid = torch.zeros(U, P, dtype=torch.bool)
    for i, p in enumerate(prompts):
        ids[i, P - len(p):] = torch.tensor(p)
        valid[i, P - len(p):] = True
    plen = valid.sum(1)
    pos = (torch.arange(P) - (P - plen)[:, None]).clamp(min=0)
    causal = torch.tril(torch.ones(P, P, dtype=torch.bool))
    # pad queries see themselves
    mask = (causal & valid[:, None, :]) | torch.eye(P, dtype=torch.bool)
    return ids, valid, plen, pos, mask


def _choose(logits, temperature, top_p, greedy, race):
    """The next token of each row and its log-prob under the distribution it was drawn from:
    softmax(logits / T), renormalised over the top-p set when top_p < 1; the argmax when greedy."""
    logp = torch.log_softmax(logits / temperature, dim=-1)
    if greedy:
        tok = logp.argmax(-1)
        return tok, logp.gather(-1, tok[:, None])[:, 0]
    if top_p < 1.0:                                    # keep the smallest set with mass >= top_p
        sp, si = logp.exp().sort(-1, descending=True)
        drop = torch.zeros_like(sp, dtype=torch.bool).scatter(-1, si, sp.cumsum(-1) - sp >= top_p)
        logp = torch.log_softmax(logp.masked_fill(drop, float("-inf")), dim=-1)
    # exponential race: argmax p_i / E_i with E_i ~ Exp(1) samples i with probability p_i
    tok = (logp.exp() / race).argmax(-1)
    return tok, logp.gather(-1, tok[:, None])[:, 0]


@torch.no_grad()
def sample_plain(model, prompt: list[int], n: int = 1, max_new_tokens: int = 64,
                 temperature: float = 1.0, generator=None, eos_id: int = 1, pad_id: int = 0):
    """``n`` completions of one prompt, the plain way (nanoGPT's ``generate``): every step feeds
    the whole sequence through the model again and draws each row's next token from
    softmax(logits / temperature). Returns ``sample``'s ``tokens, logprobs, mask``; ``sample``
    draws the same tokens from the same generator, many prompts at once, with a KV cache."""
    seq = torch.tensor([list(prompt)] * n)
    tokens, logprobs = [], []
    for _ in range(max_new_tokens):
        logp = torch.log_softmax(model(seq)[:, -1] / temperature, dim=-1)
        race = torch.empty_like(logp).exponential_(generator=generator)     # E ~ Exp(1)
        tok = (logp.exp() / race).argmax(-1)            # argmax p / E is a draw from p
        tokens.append(tok)
        logprobs.append(logp.gather(-1, tok[:, None])[:, 0])
        seq = torch.cat([seq, tok[:, None]], 1)
        if (torch.stack(tokens, 1) == eos_id).any(1).all():    # every row has ended
            break
    return _finish_sample(torch.stack(tokens, 1), torch.stack(logprobs, 1), eos_id, pad_id)


@dataclass(frozen=True)
class Sampling:
    """How ``sample`` draws: ``n`` completions of each prompt, each up to ``max_new_tokens``
    tokens, from softmax(logits / ``temperature``) renormalised over the top-``top_p`` set; or,
    with ``greedy``, the argmax (its log-probs then at temperature 1; ``temperature`` unused)."""
    n: int = 1
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    greedy: bool = False

    def __post_init__(self):
        for name in ("n", "max_new_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"Sampling.{name} must be an int >= 1, got {value!r}")
        if not isinstance(self.greedy, bool):
            raise ValueError(f"Sampling.greedy must be True or False, got {self.greedy!r}")
        if not self.greedy:     # as a float (a NumPy float samples what the same float does)
            object.__setattr__(self, "temperature",
                               check_temperature(self.temperature, "Sampling.temperature"))
        if isinstance(self.top_p, bool) or not isinstance(self.top_p, numbers.Real) \
                or not 0 < self.top_p <= 1:
            raise ValueError(f"Sampling.top_p must be in (0, 1], got {self.top_p!r}")
        object.__setattr__(self, "top_p", float(self.top_p))


@torch.no_grad()
def sample(model, prompt_ids, sampling: Sampling = Sampling(), generator=None, eos_id=1,
           pad_id=0, use_cache=True):
    """Draw ``sampling.n`` completions of each prompt, batched, with a KV cache. See the module
    docstring.

    Each prompt is run once and its keys and values copied to its ``n`` rows. Prompts of different
    lengths are left-padded; each row gets its own positions and a mask that hides the padding.
    Every step draws one Exp(1) per row and token, finished rows included, so a row's tokens do not
    depend on the other rows; rows that have finished are dropped from the batch once a quarter of
    it has.
    """
    if not isinstance(sampling, Sampling):
        raise ValueError(f"sampling must be a Sampling, got {type(sampling).__name__}")
    n, max_new_tokens, top_p, greedy = (sampling.n, sampling.max_new_tokens, sampling.top_p,
                                        sampling.greedy)
    prompts = _check_prompts(model, prompt_ids, max_new_tokens)
    temperature = 1.0 if greedy else float(sampling.temperature)
    if not use_cache:
        return _sample_uncached(model, prompts, sampling, generator, eos_id, pad_id)
    cfg, B = model.cfg, len(prompts) * n
    ids, valid, plen, pos, mask = _left_padded(prompts, pad_id)
    P, hd = ids.shape[1], cfg.d_model // cfg.n_head
    dtype = model.tok_emb.weight.dtype
    prefix = [(torch.empty(len(prompts), cfg.n_head, P, hd, dtype=dtype),
               torch.empty(len(prompts), cfg.n_head, P, hd, dtype=dtype))
              for _ in range(cfg.n_layer)]
    logits = model(ids, pos, mask[:, None], prefix, 0)[:, -1]      # each prompt once ...
    caches = [(torch.empty(B, cfg.n_head, P + max_new_tokens, hd, dtype=dtype),
               torch.empty(B, cfg.n_head, P + max_new_tokens, hd, dtype=dtype))
              for _ in range(cfg.n_layer)]
    for (k, v), (kp, vp) in zip(caches, prefix):                    # ... copied to its n rows
        k[:, :, :P].view(len(prompts), n, *kp.shape[1:]).copy_(kp[:, None])
        v[:, :, :P].view(len(prompts), n, *vp.shape[1:]).copy_(vp[:, None])
    logits, plen = logits.repeat_interleave(n, 0), plen.repeat_interleave(n, 0)
    keys = torch.cat([valid, torch.zeros(len(prompts), max_new_tokens, dtype=torch.bool)], 1)
    keys = keys.repeat_interleave(n, 0)               # the keys each row may attend to
    out_tok = torch.full((B, max_new_tokens), pad_id, dtype=torch.long)
    out_lp = torch.zeros(B, max_new_tokens, dtype=logits.dtype)
    rows = torch.arange(B)                            # the batch's rows, as indices into the output
    alive = torch.ones(B, dtype=torch.bool)
    for t in range(max_new_tokens):
        race = None
        if not greedy:                                # one draw for all B rows, then the live ones
            race = torch.empty(B, logits.shape[-1], dtype=logits.dtype)
            race = race.exponential_(generator=generator)[rows]
        tok, lp = _choose(logits, temperature, top_p, greedy, race)
        out_tok[rows[alive], t], out_lp[rows[alive], t] = tok[alive], lp[alive]
        alive &= tok != eos_id
        if not alive.any() or t == max_new_tokens - 1:
            break
        if alive.sum() <= 0.75 * len(rows):           # drop finished rows: move the live ones up
            keep = alive.nonzero()[:, 0]
            rows, tok, plen = rows[keep], tok[keep], plen[keep]
            keys, alive = keys[keep], alive[keep]
            for k, v in caches:
                k[:len(keep), :, :P + t] = k[keep, :, :P + t]
                v[:len(keep), :, :P + t] = v[keep, :, :P + t]
            caches = [(k[:len(keep)], v[:len(keep)]) for k, v in caches]
        keys[:, P + t] = True
        step_keys = keys[:, None, None, :P + t + 1]
        logits = model(tok[:, None], (plen + t)[:, None], step_keys, caches, P + t)[:, -1]
    return _finish_sample(out_tok[:, :t + 1], out_lp[:, :t + 1], eos_id, pad_id)


def _sample_uncached(model, prompts, sampling: Sampling, generator, eos_id, pad_id):
    """``sample`` without a cache: every step recomputes every row's whole prefix (slow; the tests
    check the cached sampler against it, draw for draw)."""
    n, max_new_tokens, top_p, greedy = (sampling.n, sampling.max_new_tokens, sampling.top_p,
                                        sampling.greedy)
    temperature = 1.0 if greedy else float(sampling.temperature)
    ids, valid, plen, pos, _ = _left_padded([p for p in prompts for _ in range(n)], pad_id)
    B, P = ids.shape
    out_tok = torch.full((B, max_new_tokens), pad_id, dtype=torch.long)
    out_lp = torch.zeros(B, max_new_tokens, dtype=model.tok_emb.weight.dtype)
    alive = torch.ones(B, dtype=torch.bool)
    seq = ids
    for t in range(max_new_tokens):
        T = seq.shape[1]
        keys = torch.cat([valid, torch.ones(B, T - P, dtype=torch.bool)], 1)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        m = (causal & keys[:, None, :]) | torch.eye(T, dtype=torch.bool)
        full_pos = torch.cat([pos, plen[:, None] + torch.arange(T - P)], 1)
        logits = model(seq, full_pos, m[:, None])[:, -1]
        race = None if greedy else torch.empty_like(logits).exponential_(generator=generator)
        tok, lp = _choose(logits, temperature, top_p, greedy, race)
        out_tok[alive, t], out_lp[alive, t] = tok[alive], lp[alive]
        alive &= tok != eos_id
        if not alive.any() or t == max_new_tokens - 1:
            break
        seq = torch.cat([seq, tok[:, None]], 1)
    return _finish_sample(out_tok[:, :t + 1], out_lp[:, :t + 1], eos_id, pad_id)


def _finish_sample(out_tok, out_lp, eos_id, pad_id):
    """(tokens, logprobs, mask): mask is True on generated tokens up to and including <eos>."""
    L = out_tok.shape[1]
    hit = out_tok == eos_id
    first = torch.where(hit.any(1), hit.int().argmax(1) + 1, L)
    gen_mask = torch.arange(L)[None, :] < first[:, None]
    return out_tok.masked_fill(~gen_mask, pad_id), out_lp.masked_fill(~gen_mask, 0.0), gen_mask


def greedy(model, prompt_ids, max_new_tokens=64, eos_id=1, pad_id=0):
    """Argmax completions of each prompt: ``tokens, mask`` (see ``sample``)."""
    tokens, _, mask = sample(model, prompt_ids, Sampling(max_new_tokens=max_new_tokens,
                                                         greedy=True), eos_id=eos_id, pad_id=pad_id)
    return tokens, mask


def join(prompt_ids, n, tokens, mask, pad_id=0, logprobs=None):
    """Right-padded full sequences ``ids`` (B, T) and ``completion_mask`` (B, T) from ``sample``'s
    output, ready for ``token_logprobs``; with ``logprobs`` (the sampler's), also those log-probs in
    the same (B, T) layout, 0 off the completion. ``tokens``, ``mask`` and ``logprobs`` are (B, L)
    tensors or lists of B rows (e.g. groups kept from several draws), B = len(prompt_ids) * n."""
    rows = [list(p) for p in prompt_ids for _ in range(n)]
    given = [len(x) for x in (tokens, mask, logprobs) if x is not None]
    if any(k != len(rows) for k in given):
        raise ValueError(f"{len(prompt_ids)} prompts x n = {n} need {len(rows)} rows of tokens, "
                         f"mask (and logprobs), got {given}")
    if any(len(t) != len(m) for t, m in zip(tokens, mask)):
        raise ValueError("each row of mask must be as long as its row of tokens")
    lens = [int(m.sum()) for m in mask]
    T = max(len(p) + k for p, k in zip(rows, lens))
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    cmask = torch.zeros(len(rows), T, dtype=torch.bool)
    old = torch.zeros(len(rows), T, dtype=logprobs[0].dtype if logprobs is not None else DTYPE)
    for b, (p, k) in enumerate(zip(rows, lens)):
        ids[b, :len(p)] = torch.tensor(p)
        ids[b, len(p):len(p) + k] = tokens[b][:k]
        cmask[b, len(p):len(p) + k] = True
        if logprobs is not None:
            old[b, len(p):len(p) + k] = logprobs[b][:k]
    return (ids, cmask) if logprobs is None else (ids, cmask, old)


def logprobs_at_temperature(logits, tokens, temperature: float = 1.0, entropy: bool = True):
    """log pi(token) and the entropy of pi at each position, with pi = softmax(logits / T).

    ``logits`` (..., T, V) are the scores that predict ``tokens`` (..., T), from any model (ours or
    a Hugging Face one). Sampling at T draws from softmax(logits / T), so pi_theta and pi_old must
    be read at that T for their ratio to be the importance ratio; reading pi_ref at T too is this
    library's choice of KL (``grpo.lm.grpo``'s docstring). The entropy is only ever logged, so it
    carries no gradient; ``entropy=False`` skips it (None), which on a 49,152-token vocabulary is
    most of this function's cost (bench/bench_pretrained.py).
    """
    temperature = check_temperature(temperature)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))    # bf16/fp16 -> fp32
    logp_all = torch.log_softmax(logits / temperature, dim=-1)
    logp = logp_all.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    if not entropy:
        return logp, None
    with torch.no_grad():
        return logp, -(logp_all.exp() * logp_all).sum(-1)


def token_logprobs(model, ids, mask, temperature=1.0, entropy: bool = False):
    """log pi(ids[:, t] | ids[:, :t]) under softmax(logits / temperature) where ``mask`` is True,
    else 0 (with ``entropy=True``, also pi's entropy at those positions: a pair).

    ``ids`` (B, T) are right-padded sequences (prompt, completion, padding); ``mask[:, 0]`` must be
    False (the first token has no prefix). Differentiable: GRPO's new log-probs come from here.
    """
    if ids.shape != mask.shape or ids.dim() != 2:
        raise ValueError(f"ids and mask must share a (B, T) shape: {tuple(ids.shape)}, "
                         f"{tuple(mask.shape)}")
    if mask[:, 0].any():
        raise ValueError("mask[:, 0] must be False: the first token has no prefix to score it")
    lp, ent = logprobs_at_temperature(model(ids[:, :-1]), ids[:, 1:], temperature, entropy)
    lp = F.pad(lp, (1, 0)) * mask
    return (lp, F.pad(ent, (1, 0)) * mask) if entropy else lp


def completion_logprobs(model, prompt_ids, n, tokens, mask, temperature=1.0, entropy: bool = False,
                        pad_id: int = 0, chunk: int = 64):
    """log pi(tokens[r, t] | prompt, tokens[r, :t]) at ``temperature`` for ``sample``'s layout: rows
    are prompt 0's ``n`` completions, then prompt 1's; ``tokens`` and ``mask`` (B*n, L), log-probs
    (B*n, L), 0 off the mask (with ``entropy=True``, also pi's entropy there: a pair).

    The same numbers as ``token_logprobs`` on the joined sequences, computed as GRPO needs them:
    each prompt runs once and its n completions attend to its keys and values, and completions of
    similar length go through together (``chunk`` rows at a time, each padded only to its own
    longest), so no compute goes to a prompt's copies or to padding. Differentiable.
    """
    prompts = _check_prompts(model, prompt_ids, 1)
    N, L = tokens.shape
    if mask.shape != tokens.shape or N != len(prompts) * n or L < 1:
        raise ValueError(f"{len(prompts)} prompts x n = {n} need tokens and mask of one shape "
                         f"({len(prompts) * n}, L >= 1), got {tuple(tokens.shape)} and "
                         f"{tuple(mask.shape)}")
    if not mask[:, 0].all() or (mask[:, 1:] & ~mask[:, :-1]).any():
        raise ValueError("each completion's mask must be True on its first tokens and False after "
                         "them")
    ids_p, valid, plen, pos_p, mask_p = _left_padded(prompts, pad_id)
    group = torch.arange(N) // n
    lengths = mask.sum(1)
    order = torch.argsort(lengths, stable=True)
    chunks = [order[i:i + chunk] for i in range(0, N, chunk)]
    widths = [int(lengths[c].max()) for c in chunks]            # each chunk's longest completion
    xp = model.tok_emb(ids_p) + model.pos_emb(pos_p)
    xs = [model.tok_emb(tokens[c, :w - 1]) + model.pos_emb(plen[group[c],
                                                                None] + torch.arange(w - 1))
          # inputs 0..w-2 predict tokens 1..w-1
          for c, w in zip(chunks, widths)]
    keys = [torch.cat([valid[group[c], None, :].expand(-1, w - 1, -1),
                       torch.tril(torch.ones(w - 1, w - 1, dtype=torch.bool)).expand(len(c), -1,
                                                                                     -1)], 2)
            for c, w in zip(chunks, widths)]                    # the prompt's tokens, then causal
    for block in model.blocks:
        qp, kp, vp = block.heads(xp)
        for i, c in enumerate(chunks):
            if widths[i] > 1:
                q, k, v = block.heads(xs[i])
                k, v = torch.cat([kp[group[c]], k], 2), torch.cat([vp[group[c]], v], 2)
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=keys[i][:, None])
                xs[i] = block.finish(xs[i], y)
        xp = block.finish(xp, F.scaled_dot_product_attention(qp, kp, vp, attn_mask=mask_p[:, None]))
    logp = torch.zeros(N, L, dtype=xp.dtype)
    ent = torch.zeros(N, L, dtype=xp.dtype)
    for c, w, x in zip(chunks, widths, xs):
        # the prompt's last state predicts token 0
        states = torch.cat([xp[group[c], -1:], x], 1)
        lp, e = logprobs_at_temperature(F.linear(model.ln_f(states), model.tok_emb.weight),
                                        tokens[c, :w], temperature, entropy)
        logp = logp.index_put((c[:, None], torch.arange(w)), lp * mask[c, :w])
        if entropy:
            ent = ent.index_put((c[:, None], torch.arange(w)), e * mask[c, :w])
    return (logp, ent) if entropy else logp


# ----------------------------------------------------------------------------- checkpoints

def save(model, path) -> bool:
    """Write the weights (as float32) and config as safetensors: the same bytes for the same
    weights. A file that already holds these weights to float32 rounding (the same config, every
    value within one float32 step) is left as it is, so a re-run on another CPU, whose float64
    weights can differ in the 15th digit, rewrites nothing. Returns whether it wrote."""
    from pathlib import Path
    state = {k: v.detach().to(CHECKPOINT_DTYPE).contiguous() for k, v in model.state_dict().items()}
    config = json.dumps(asdict(model.cfg), sort_keys=True)
    if Path(path).exists() and _same_checkpoint(path, state, config):
        return False
    write_atomically(path, lambda tmp: save_file(state, str(tmp), metadata={"config": config}))
    return True


def _same_checkpoint(path, state: dict, config: str) -> bool:
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as f:
        if f.metadata().get("config") != config or set(f.keys()) != set(state):
            return False
        for k, v in state.items():
            old = f.get_tensor(k)
            if old.shape != v.shape or old.dtype != v.dtype:
                return False
            step = torch.nextafter(old.abs(), torch.full_like(old, float("inf"))) - old.abs()
            if ((old - v).abs() > step).any():              # more than one float32 step apart
                return False
    return True


def load(path) -> GPT:
    """A ``GPT`` from a checkpoint written by ``save``, in eval mode, computing in ``DTYPE``."""
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as f:
        cfg = GPTConfig(**json.loads(f.metadata()["config"]))
    model = GPT(cfg)
    model.load_state_dict({k: v.to(DTYPE) for k, v in load_file(str(path)).items()})
    return model.eval()
