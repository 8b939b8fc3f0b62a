"""Time one GRPO step: our trainer against TRL's GRPOTrainer, same model, same batch, one thread.

The batch is the issue's: 8 prompts x 8 samples, 64 new tokens, beta 0.04 (so both read the
reference), one Adam step per batch, DeepSeekMath's sequence-normalised loss. The model is a tiny
random Qwen2 (about 0.6M parameters, character tokenizer) built locally by
``grpo.lm.hf.tiny_causal_lm``; it seldom samples end-of-sequence, so every completion runs the full
64 tokens in both trainers. Each trainer takes 1 warm-up step, then 3 timed steps, in 2 alternating
rounds (ours, TRL, ours, TRL); the fastest step of each is reported, the estimate least inflated by
other work on a shared machine (the load average is recorded too).
Writes data/bench/08_grpo_math.json (`make bench`). Our small model's step (chapter 7's sampler)
is still to be added.
"""
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from grpo.lm import data, hf  # noqa: E402

PROMPTS, G, NEW_TOKENS, STEPS = 8, 8, 64, 3
OUT = Path(__file__).resolve().parents[1] / "data" / "bench" / "08_grpo_math.json"


def problems(n):
    rng = random.Random(0)
    return [data.make_problem(rng, 1 + i % 2) for i in range(n)]


def time_ours(model_dir, rows):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    policy = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ref = AutoModelForCausalLM.from_pretrained(model_dir).eval().requires_grad_(False)
    cfg = hf.HFConfig(G=G, max_new_tokens=NEW_TOKENS, beta=0.04, lr=1e-6, temperature=1.0,
                      chunk_groups=PROMPTS)             # one forward/backward, as TRL's step
    optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    questions, answers = [r["question"] for r in rows], [r["answer"] for r in rows]
    torch.manual_seed(0)
    steps = []
    for i in range(STEPS + 1):
        start = time.perf_counter()
        stats = hf.grpo_step(policy, ref, tokenizer, optimizer, questions, answers, cfg)
        stats["step_s"] = time.perf_counter() - start
        if i:
            steps.append(stats)
    return steps


def time_trl(model_dir, rows, out_dir):
    import trl
    from transformers import AutoTokenizer, TrainerCallback
    from transformers.trainer_callback import PrinterCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.times = []

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self.start)

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    dataset = hf.trl_dataset(rows, tokenizer)
    args = trl.GRPOConfig(output_dir=str(out_dir), per_device_train_batch_size=PROMPTS * G,
                          num_generations=G, max_completion_length=NEW_TOKENS, max_steps=STEPS + 1,
                          learning_rate=1e-6, beta=0.04, loss_type="grpo", temperature=1.0, top_k=0,
                          top_p=1.0, report_to="none", use_cpu=True, save_strategy="no",
                          logging_steps=1, seed=0, disable_tqdm=True)
    timer = StepTimer()
    trainer = trl.GRPOTrainer(model=str(model_dir), reward_funcs=hf.trl_reward(), args=args,
                              train_dataset=dataset, processing_class=tokenizer, callbacks=[timer])
    trainer.remove_callback(PrinterCallback)                  # no per-step log dicts on stdout
    trainer.train()
    return timer.times[1:], trainer.state.log_history


def main():
    torch.set_num_threads(1)
    import transformers
    import trl
    rows = problems(PROMPTS)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        model, tokenizer = hf.tiny_causal_lm(seed=0, hidden=128, layers=4)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        n_params = sum(p.numel() for p in model.parameters())
        ours, trl_times, trl_log = [], [], []
        for round_ in range(2):
            ours += time_ours(tmp, rows)
            times, log = time_trl(tmp, rows, Path(tmp) / f"trl{round_}")
            trl_times += times
            trl_log += log[1:-1]                            # the timed steps' logs
    fastest = min(ours, key=lambda s: s["step_s"])
    ours_step, trl_step = fastest["step_s"], min(trl_times)
    tokens_per_s = max(s["sampled_tokens"] / s["sample_s"] for s in ours)
    result = {
        "ours_step_s": round(ours_step, 3),
        "trl_step_s": round(trl_step, 3),
        "ours_sample_tokens_per_s": round(tokens_per_s),
        "speedup_ours_vs_trl": round(trl_step / ours_step, 2),
        "ours_split_s": {k: round(fastest[k], 3) for k in ("sample_s", "ref_s", "update_s")},
        "ours_trainer": "grpo.lm.hf.grpo_step (HF generate); chapter 7's sampler not yet timed",
        "model": f"tiny random Qwen2, {n_params} parameters, character tokenizer",
        "batch": f"{PROMPTS} prompts x {G} samples, {NEW_TOKENS} new tokens, beta 0.04, 1 Adam step",
        "mean_completion_tokens": {
            "ours": round(statistics.mean(s["completion_length_mean"] for s in ours), 1),
            "trl": round(statistics.mean(r["completions/mean_length"] for r in trl_log), 1)},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "trl": trl.__version__},
        "threads": torch.get_num_threads(),
        "load_average_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)],   # before, after
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result, indent=2, sort_keys=True))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
