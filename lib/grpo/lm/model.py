"""A small GPT in one file: the decoder, its KV-cache sampler, log-probs and checkpoints.

The model is nanoGPT's: token + position embeddings, ``n_layer`` pre-norm blocks of causal
self-attention and an MLP, a final LayerNorm and an output head tied to the token embedding.

    model = GPT(GPTConfig(vocab_size=tok.vocab_size))
    logits = model(ids)                                   # (B, T) long -> (B, T, V) float

Sampling (what GRPO needs)
    ``sample(model, prompt_ids, n, max_new_tokens, temperature, top_p, generator, eos_id)``
    -> ``tokens, logprobs, mask``, each (len(prompt_ids) * n, L) with L <= max_new_tokens. Rows are
    prompt 0's n samples, then prompt 1's, and so on. ``logprobs[b, t]`` is log pi(token | prefix)
    under softmax(logits / temperature), the full distribution before top-p truncation: the same
    number ``token_logprobs`` gives, so GRPO's pi_old needs no second forward pass. ``mask`` is True
    on generated tokens up to and including ``<eos>``; after it, tokens are ``pad_id`` and log-probs 0.
    ``greedy=True`` takes the argmax (log-probs then at temperature 1); ``use_cache=False`` recomputes
    the whole prefix at every step (slow; it checks the cache).
``greedy(model, prompt_ids, max_new_tokens, eos_id)``
    the argmax completions, for evaluation.
``token_logprobs(model, ids, mask, temperature)``
    log pi(ids[:, t] | ids[:, :t]) at ``temperature`` for every position where ``mask`` is True
    (0 elsewhere). ``ids`` are right-padded sequences, e.g. from ``join(prompt_ids, n, tokens, mask)``.
    It reads any logits through ``logprobs_at_temperature``, the book's one home for log-probs at a
    temperature (chapter 8's loss and the Hugging Face path use it too).
``save(model, path)`` / ``load(path)``
    safetensors checkpoints with the config in the header: byte-stable across runs.
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
            raise ValueError(f"d_model must be a multiple of n_head (each head gets d_model / n_head "
                             f"dimensions), got d_model={self.d_model}, n_head={self.n_head}")


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model, bias=False)
        self.fc_out = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x, attn_mask=None, cache=None, cache_pos=0):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        if cache is not None:                          # write this step's keys/values, attend to all so far
            cache[0][:, :, cache_pos:cache_pos + T] = k
            cache[1][:, :, cache_pos:cache_pos + T] = v
            k, v = cache[0][:, :, :cache_pos + T], cache[1][:, :, :cache_pos + T]
        if attn_mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif T == 1:                                   # one new token: plain attention is faster here
            att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(k.shape[-1]))
            y = torch.softmax(att.masked_fill(~attn_mask, float("-inf")), dim=-1) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """nanoGPT-style decoder. ``model(ids)`` gives next-token logits at every position."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        for name, p in self.named_parameters():        # GPT-2 init, residual projections scaled down
            if p.dim() == 2:
                residual = name.endswith(("proj.weight", "fc_out.weight"))
                std = 0.02 / math.sqrt(2 * cfg.n_layer) if residual else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, ids, pos=None, attn_mask=None, caches=None, cache_pos=0):
        """Logits (B, T, V). ``pos``, ``attn_mask`` and ``caches`` are for the sampler; plain calls
        use positions 0..T-1 and a causal mask."""
        if ids.dim() != 2 or ids.shape[1] == 0 or ids.shape[1] + cache_pos > self.cfg.max_len:
            raise ValueError(f"ids must be (B, T), 0 < T <= {self.cfg.max_len}: got {tuple(ids.shape)}")
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
    if hasattr(prompt_ids, "tolist") and not isinstance(prompt_ids, (list, tuple)):   # tensor, ndarray
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
            raise ValueError(f"prompt of {len(p)} tokens + {max_new_tokens} new exceeds max_len={L}")
        if min(p) < 0 or max(p) >= V:
            raise ValueError(f"token ids must be in [0, {V}), got {min(p)}..{max(p)}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    return [list(map(int, p)) for p in prompt_ids]


@torch.no_grad()
def sample(model, prompt_ids, n=1, max_new_tokens=64, temperature=1.0, top_p=1.0, generator=None,
           eos_id=1, pad_id=0, greedy=False, use_cache=True):
    """Sample ``n`` completions of each prompt, batched, with a KV cache. See the module docstring.

    Prompts of different lengths are left-padded; each row gets its own positions and a mask that
    hides the padding, so a row's result does not depend on the other rows' lengths.
    """
    prompts = _check_prompts(model, prompt_ids, max_new_tokens)
    if not greedy and not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be > 0 when sampling, got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    temperature = 1.0 if greedy else float(temperature)
    rows = [p for p in prompts for _ in range(n)]
    B, P = len(rows), max(len(p) for p in rows)
    ids = torch.full((B, P), pad_id, dtype=torch.long)
    valid = torch.zeros(B, P + max_new_tokens, dtype=torch.bool)     # keys a row may attend to
    for b, p in enumerate(rows):
        ids[b, P - len(p):] = torch.tensor(p)
        valid[b, P - len(p):] = True
    plen = torch.tensor([len(p) for p in rows])
    pos = (torch.arange(P) - (P - plen)[:, None]).clamp(min=0)          # per-row positions
    causal = torch.tril(torch.ones(P, P, dtype=torch.bool))
    mask = (causal & valid[:, None, :P]) | torch.eye(P, dtype=torch.bool)    # pad queries see themselves
    cfg = model.cfg
    hd = cfg.d_model // cfg.n_head
    caches = None
    if use_cache:
        caches = [(torch.empty(B, cfg.n_head, P + max_new_tokens, hd),
                   torch.empty(B, cfg.n_head, P + max_new_tokens, hd)) for _ in range(cfg.n_layer)]
        logits = model(ids, pos, mask[:, None], caches, 0)[:, -1]
    else:
        logits = model(ids, pos, mask[:, None])[:, -1]
    out_tok = torch.full((B, max_new_tokens), pad_id, dtype=torch.long)
    out_lp = torch.zeros(B, max_new_tokens)
    alive = torch.ones(B, dtype=torch.bool)
    seq = ids
    for t in range(max_new_tokens):
        logp = torch.log_softmax(logits.float() / temperature, dim=-1)
        if greedy:
            tok = logp.argmax(-1)
        else:
            probs = logp.exp()
            if top_p < 1.0:                            # keep the smallest set with mass >= top_p
                sp, si = probs.sort(-1, descending=True)
                drop = sp.cumsum(-1) - sp >= top_p
                probs = probs.scatter(-1, si, sp.masked_fill(drop, 0.0))
            # exponential race: argmax p_i / E_i with E_i ~ Exp(1) samples i with probability p_i
            race = torch.empty_like(probs).exponential_(generator=generator)
            tok = (probs / race).argmax(-1)
        out_tok[alive, t] = tok[alive]
        out_lp[alive, t] = logp.gather(-1, tok[:, None])[:, 0][alive]
        alive &= tok != eos_id
        if not alive.any() or t == max_new_tokens - 1:
            break
        valid[:, P + t] = True
        step_pos = (plen + t)[:, None]
        if use_cache:
            logits = model(tok[:, None], step_pos, valid[:, None, None, :P + t + 1], caches, P + t)[:, -1]
        else:
            seq = torch.cat([seq, tok[:, None]], 1)
            T = seq.shape[1]
            full_pos = torch.cat([pos, plen[:, None] + torch.arange(t + 1)], 1)
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
            m = (causal & valid[:, None, :T]) | torch.eye(T, dtype=torch.bool)
            logits = model(seq, full_pos, m[:, None])[:, -1]
    L = t + 1
    out_tok, out_lp = out_tok[:, :L], out_lp[:, :L]
    gen_mask = torch.zeros(B, L, dtype=torch.bool)
    for b in range(B):                                 # generated tokens up to and including <eos>
        hit = (out_tok[b] == eos_id).nonzero()
        gen_mask[b, :(int(hit[0]) + 1 if len(hit) else L)] = True
    out_tok[~gen_mask] = pad_id
    out_lp[~gen_mask] = 0.0
    return out_tok, out_lp, gen_mask


def greedy(model, prompt_ids, max_new_tokens=64, eos_id=1, pad_id=0):
    """Argmax completions of each prompt: ``tokens, mask`` (see ``sample``)."""
    tokens, _, mask = sample(model, prompt_ids, 1, max_new_tokens, eos_id=eos_id, pad_id=pad_id, greedy=True)
    return tokens, mask


def join(prompt_ids, n, tokens, mask, pad_id=0, logprobs=None):
    """Right-padded full sequences ``ids`` (B, T) and ``completion_mask`` (B, T) from ``sample``'s output,
    ready for ``token_logprobs``; with ``logprobs`` (the sampler's), also those log-probs in the same
    (B, T) layout, 0 off the completion. ``tokens``, ``mask`` and ``logprobs`` are (B, L) tensors or
    lists of B rows (e.g. groups kept from several draws), B = len(prompt_ids) * n."""
    rows = [list(p) for p in prompt_ids for _ in range(n)]
    given = [len(x) for x in (tokens, mask, logprobs) if x is not None]
    if any(k != len(rows) for k in given):
        raise ValueError(f"{len(prompt_ids)} prompts x n = {n} need {len(rows)} rows of tokens, mask "
                         f"(and logprobs), got {given}")
    if any(len(t) != len(m) for t, m in zip(tokens, mask)):
        raise ValueError("each row of mask must be as long as its row of tokens")
    lens = [int(m.sum()) for m in mask]
    T = max(len(p) + k for p, k in zip(rows, lens))
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    cmask = torch.zeros(len(rows), T, dtype=torch.bool)
    old = torch.zeros(len(rows), T)
    for b, (p, k) in enumerate(zip(rows, lens)):
        ids[b, :len(p)] = torch.tensor(p)
        ids[b, len(p):len(p) + k] = tokens[b][:k]
        cmask[b, len(p):len(p) + k] = True
        if logprobs is not None:
            old[b, len(p):len(p) + k] = logprobs[b][:k]
    return (ids, cmask) if logprobs is None else (ids, cmask, old)


def logprobs_at_temperature(logits, tokens, temperature: float = 1.0):
    """log pi(token) and the entropy of pi at each position, with pi = softmax(logits / T).

    ``logits`` (..., T, V) are the scores that predict ``tokens`` (..., T), from any model (ours or a
    Hugging Face one). Sampling at T draws from softmax(logits / T), so pi_theta and pi_old must be
    read at that T for their ratio to be the importance ratio; reading pi_ref at T too is this
    library's choice of KL (``grpo.lm.grpo``'s docstring).
    """
    temperature = check_temperature(temperature)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))    # bf16/fp16 -> fp32
    logp_all = torch.log_softmax(logits / temperature, dim=-1)
    logp = logp_all.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy


def token_logprobs(model, ids, mask, temperature=1.0, entropy: bool = False):
    """log pi(ids[:, t] | ids[:, :t]) under softmax(logits / temperature) where ``mask`` is True, else 0
    (with ``entropy=True``, also pi's entropy at those positions: a pair).

    ``ids`` (B, T) are right-padded sequences (prompt, completion, padding); ``mask[:, 0]`` must be
    False (the first token has no prefix). Differentiable: GRPO's new log-probs come from here.
    """
    if ids.shape != mask.shape or ids.dim() != 2:
        raise ValueError(f"ids and mask must share a (B, T) shape: {tuple(ids.shape)}, {tuple(mask.shape)}")
    if mask[:, 0].any():
        raise ValueError("mask[:, 0] must be False: the first token has no prefix to score it")
    lp, ent = logprobs_at_temperature(model(ids[:, :-1]), ids[:, 1:], temperature)
    lp = F.pad(lp, (1, 0)) * mask
    return (lp, F.pad(ent, (1, 0)) * mask) if entropy else lp


# ----------------------------------------------------------------------------- checkpoints

def save(model, path) -> None:
    """Write the weights and config as safetensors (same bytes for the same weights)."""
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path), metadata={"config": json.dumps(asdict(model.cfg), sort_keys=True)})


def load(path) -> GPT:
    """A ``GPT`` from a checkpoint written by ``save``, in eval mode."""
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as f:
        cfg = GPTConfig(**json.loads(f.metadata()["config"]))
    model = GPT(cfg)
    model.load_state_dict(load_file(str(path)))
    return model.eval()
