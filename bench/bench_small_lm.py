"""Time chapter 7's small LM (`make bench`; timings are not tests). Writes data/bench/07_small_lm.json.

Sampler against a peer, like with like: our KV-cache sampler (which computes in float64, the model's
``DTYPE``), the same sampler without its cache, and Hugging Face `transformers` `generate()`
(sampling, KV cache on) on a randomly initialised GPT-2 of the same shape (built from a GPT2Config:
no download) in float64 too; HF in its default float32 is timed beside it, labelled, as the speed a
float32 model would have. 64 sequences x 64 new tokens, prompts of 28 tokens (a typical question),
one thread, best of 3 runs, end-of-sequence disabled so every run writes all 64 tokens; the same
again for one group of 8 sequences. SFT throughput: solution-loss training steps at the chapter's
batch size (32), in tokens per CPU-second (tokens fed to the model, padding included). Every time is
CPU seconds of this process (``time.process_time``, one thread), so other work on a shared machine
inflates it less than wall time.
"""
import json
import os
import platform
import time
from pathlib import Path

import torch

from grpo.lm.data import make_splits
from grpo.lm.model import GPT, GPTConfig, Sampling, sample
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.data import encode_problem
from grpo.lm.train import SFTConfig, length_batches, sft
from benchfile import write_bench

torch.set_num_threads(1)
B, PROMPT, NEW, REPS = 64, 28, 64, 3
OUT = Path(__file__).resolve().parent.parent / "data" / "bench" / "07_small_lm.json"
WRITTEN_ELSEWHERE = ("sft_run_peak_memory_mb",)     # bench_sft_memory.py's key in the same file


def best_of(fn, reps=REPS):
    """The fewest CPU seconds ``fn()`` took in ``reps`` runs."""
    times = []
    for _ in range(reps):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main():
    train, test = make_splits(4000, 200, seed=0)
    tok = Tokenizer.train([p["question"] + "\n" + p["answer"] for p in train], 512)
    cfg = GPTConfig(vocab_size=tok.vocab_size, max_len=192)
    torch.manual_seed(0)
    ours = GPT(cfg).eval()
    prompts = torch.randint(3, cfg.vocab_size, (B, PROMPT))
    gen = torch.Generator().manual_seed(0)
    t_ours = best_of(lambda: sample(ours, prompts, Sampling(1, NEW, 1.0, 1.0), gen, eos_id=-1))
    t_unc = best_of(lambda: sample(ours, prompts, Sampling(1, NEW, 1.0, 1.0), gen, eos_id=-1,
                                   use_cache=False), reps=1)

    import transformers
    hf_cfg = transformers.GPT2Config(
        vocab_size=cfg.vocab_size, n_positions=cfg.max_len, n_embd=cfg.d_model, n_layer=cfg.n_layer,
        n_head=cfg.n_head, n_inner=cfg.mlp_ratio * cfg.d_model, activation_function="gelu",
        bos_token_id=0, eos_token_id=1, pad_token_id=0)
    hf32 = transformers.GPT2LMHeadModel(hf_cfg).eval()
    hf64 = transformers.GPT2LMHeadModel(hf_cfg).eval().double()     # our precision: like with like
    attn = torch.ones_like(prompts)

    def hf_generate(hf, rows):
        with torch.no_grad():
            out = hf.generate(prompts[:rows], attention_mask=attn[:rows], do_sample=True,
                              max_new_tokens=NEW, min_new_tokens=NEW, top_k=0, top_p=1.0,
                              temperature=1.0, use_cache=True)
        assert out.shape == (rows, PROMPT + NEW)
    t_hf64, t_hf32 = best_of(lambda: hf_generate(hf64, B)), best_of(lambda: hf_generate(hf32, B))

    small = prompts[:8]                            # one GRPO group: here per-step overhead matters
    t_ours8 = best_of(lambda: sample(ours, small, Sampling(1, NEW, 1.0, 1.0), gen, eos_id=-1))
    t_hf64_8, t_hf32_8 = best_of(lambda: hf_generate(hf64, 8)), best_of(lambda: hf_generate(hf32, 8))

    enc = [encode_problem(tok, p) for p in train]
    scfg = SFTConfig(steps=20, batch_size=32, eval_every=10**9)
    batches = length_batches(enc, scfg, __import__("random").Random(0))
    n_tokens = sum(next(batches)[0].numel() for _ in range(scfg.steps))
    model = GPT(cfg)
    start = time.process_time()
    sft(model, tok, train, test[:1], scfg)
    t_sft = time.process_time() - start             # includes one final greedy eval on 1 problem

    res = {
        "ours_sample_tokens_per_cpu_s": round(B * NEW / t_ours),
        "hf_generate_float64_tokens_per_cpu_s": round(B * NEW / t_hf64),
        "ours_over_hf_generate_float64": round(t_hf64 / t_ours, 2),
        "hf_generate_float32_tokens_per_cpu_s": round(B * NEW / t_hf32),
        "ours_over_hf_generate_float32": round(t_hf32 / t_ours, 2),
        "ours_uncached_tokens_per_cpu_s": round(B * NEW / t_unc),
        "ours_sample_tokens_per_cpu_s_batch8": round(8 * NEW / t_ours8),
        "hf_generate_float64_tokens_per_cpu_s_batch8": round(8 * NEW / t_hf64_8),
        "ours_over_hf_generate_float64_batch8": round(t_hf64_8 / t_ours8, 2),
        "hf_generate_float32_tokens_per_cpu_s_batch8": round(8 * NEW / t_hf32_8),
        "ours_over_hf_generate_float32_batch8": round(t_hf32_8 / t_ours8, 2),
        "sft_tokens_per_cpu_s": round(n_tokens / t_sft),
        "sft_steps_per_cpu_s": round(scfg.steps / t_sft, 2),
        "setup": {"batch": B, "prompt_tokens": PROMPT, "new_tokens": NEW, "n_params": ours.n_params,
                  "hf_n_params": sum(p.numel() for p in hf64.parameters()),
                  "ours_dtype": str(ours.tok_emb.weight.dtype),
                  "hf_dtypes": [str(hf64.dtype), str(hf32.dtype)],
                  "clock": "CPU seconds (time.process_time)", "threads": torch.get_num_threads(),
                  "torch": torch.__version__, "transformers": transformers.__version__,
                  "cpu": platform.processor() or platform.machine(), "load_avg_1min": os.getloadavg()[0]},
    }
    # this script's figures replace its old ones; bench_sft_memory.py's key stays
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    kept = {k: old[k] for k in WRITTEN_ELSEWHERE if k in old}
    write_bench(OUT, {**res, **kept}, sort_keys=False)
    for k, v in res.items():
        if k != "setup":
            print(f"  {k}: {v}")
    print(f"  wrote {OUT}")


if __name__ == "__main__":
    main()
