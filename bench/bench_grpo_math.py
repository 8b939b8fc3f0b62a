"""Time one GRPO step: our trainer against TRL's GRPOTrainer, same model, same batch, one thread.

The batch is the issue's: 8 prompts x 8 samples, 64 new tokens, beta 0.04 (so both read the
reference), one Adam step per batch, DeepSeekMath's sequence-normalised loss. The model is a tiny
random Qwen2 (character tokenizer) built locally by the tests' stand-in,
``tests/hf_stand_in.tiny_causal_lm``; its prompts (question and instruction, one token a character) are
about three times as long as its completions (it samples end-of-sequence now and then), so reading
each prompt once per group, as ours does, is much of our lead (``prompt_tokens`` in the JSON).
TRL runs with gradient checkpointing off (its default, on, recomputes the forward pass in the
backward: a memory saving this model does not need) and in fp32 like ours: its default bf16=True
turns on CPU bf16 autocast, which runs its forward passes in bf16, other arithmetic than ours.
That default is timed too, as a second TRL row (``trl_bf16_autocast_*``). Each trainer takes 1
warm-up step, then 3 timed steps, in 2 alternating rounds (ours, TRL, TRL bf16, small GPT, twice);
the fastest step of each is reported, the estimate least inflated by other work on a shared machine
(the load average is recorded too).

Every key names its clock: a step is timed in wall seconds (``step_wall_s``: what TRL's trainer and
ours take on an idle core), its split into sampling, reference and update in CPU seconds
(``*_cpu_s``; ours from the library's own step, ``grpo.lm.rl.grpo_iteration``) and, for TRL, in wall
seconds too (``trl_split_wall_s``; its ``ref`` holds its reward scoring).

A third row times chapter 7's own small GPT (``grpo.runstore.models.load_sft``) at the same batch
shape, through the library's loop step (``grpo.lm.rl.grpo_iteration`` with ``GroupDraws``, our GPT's
KV-cache sampler and ``batch_logprobs``). It is a different model, so it is not part of the ratio.
Writes data/bench/08_grpo_math.json (`make bench`).
"""
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import sys  # noqa: E402

import torch  # noqa: E402

from grpo.lm import data, hf, rl  # noqa: E402
from benchfile import write_bench  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the tests' stand-in model
from hf_stand_in import tiny_causal_lm  # noqa: E402

PROMPTS, G, NEW_TOKENS, STEPS = 8, 8, 64, 3
OUT = Path(__file__).resolve().parents[1] / "data" / "bench" / "08_grpo_math.json"
WRAPPED = ("_generate", "_generate_and_score_completions")     # TRL's sampling, and its scoring
CPU_SPLIT = ("sample_cpu_s", "ref_cpu_s", "update_cpu_s")       # a step's parts, in CPU seconds
WALL_SPLIT = ("sample_wall_s", "ref_wall_s", "update_wall_s")   # and in wall seconds (TRL's)


def problems(n):
    rng = random.Random(0)
    return [data.make_problem(rng, 1 + i % 2) for i in range(n)]


OURS = hf.HFConfig(G=G, max_new_tokens=NEW_TOKENS, beta=0.04, lr=1e-6, temperature=1.0,
                   chunk_groups=PROMPTS)                # one forward/backward, as TRL's step


def time_ours(model_dir, rows, cfg=OURS, steps_timed=STEPS, verifier=None):
    """``steps_timed`` steps of ``hf.grpo_step`` after one warm-up step: each step's stats."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    policy = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ref = AutoModelForCausalLM.from_pretrained(model_dir).eval().requires_grad_(False)
    optimizer = rl.lm_adam(policy.parameters(), cfg.lr, rl.HF_ADAM_BETAS)   # as chapter 11's runs
    questions, answers = [r["question"] for r in rows], [r["answer"] for r in rows]
    generator = torch.Generator().manual_seed(0)
    reward = None if verifier is None else hf.per_completion_reward(verifier)   # None: chapter 7's
    steps = []
    for i in range(steps_timed + 1):
        start = time.perf_counter()
        stats = hf.grpo_step(policy, ref, tokenizer, optimizer, questions, answers, cfg, reward,
                             generator=generator)
        stats["step_wall_s"] = time.perf_counter() - start
        if i:
            steps.append(stats)
    return steps


def time_small_gpt(rows):
    """GRPO iterations of chapter 7's SFT model at the batch above, the library's own
    (``grpo.lm.rl.grpo_iteration``: ``GroupDraws``' sampler, our GPT's ``batch_logprobs``)."""
    import copy

    from grpo.runstore import models
    policy, tok = models.load_sft()
    ref = copy.deepcopy(policy).eval().requires_grad_(False)
    cfg = rl.RunConfig(prompts=PROMPTS, G=G, max_new_tokens=NEW_TOKENS, temperature=1.0, lr=1e-6,
                       beta=0.04, aggregation="sequence")
    draws = rl.GroupDraws(policy, tok, rows, cfg)
    optimizer = rl.lm_adam(policy.parameters(), cfg.lr)
    steps = []
    for i in range(STEPS + 1):
        start = time.perf_counter()
        batch, stats = rl.grpo_iteration(policy, ref, optimizer, draws.batch, rl.batch_logprobs, cfg,
                                         max_grad_norm=cfg.grad_clip)
        if i:
            steps.append({**stats, "step_wall_s": time.perf_counter() - start,
                          "sampled_tokens": int(batch.mask.sum())})
    return steps, policy.n_params


def time_trl(model_dir, rows, out_dir, bf16, cfg=OURS, steps_timed=STEPS, verifier=None):
    """TRL's steps, each timed in wall and CPU seconds (``step_wall_s``, ``sample_wall_s``, ...,
    ``update_cpu_s``), and its log history.

    ``bf16``: TRL's default, True, runs the policy's and the reference's forward passes under CPU
    bf16 autocast (fp32 weights, bf16 matmuls); False keeps fp32, as ours. ``cfg``: the batch
    (``prompts * G`` completions in one step), lengths, lr, beta, temperature and prompt
    instruction, as ours runs them.

    The split wraps two of its methods: ``_generate`` (sampling) and
    ``_generate_and_score_completions`` (sampling, rewards, the reference's log-probs); the rest
    of the step is the update (the policy's forward, backward and Adam step).
    """
    import trl
    from transformers import AutoTokenizer, TrainerCallback
    from transformers.trainer_callback import PrinterCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.steps, self.inside = [], {}

        def on_step_begin(self, args, state, control, **kwargs):
            self.inside_wall = {name: 0.0 for name in WRAPPED}
            self.inside_cpu = {name: 0.0 for name in WRAPPED}
            self.start_wall, self.start_cpu = time.perf_counter(), time.process_time()

        def on_step_end(self, args, state, control, **kwargs):
            wall = time.perf_counter() - self.start_wall
            cpu = time.process_time() - self.start_cpu
            sample_wall, scored_wall = (self.inside_wall[n] for n in WRAPPED)
            sample_cpu, scored_cpu = (self.inside_cpu[n] for n in WRAPPED)
            self.steps.append({"step_wall_s": wall, "sample_wall_s": sample_wall,
                               "ref_wall_s": scored_wall - sample_wall,
                               "update_wall_s": wall - scored_wall,
                               "step_cpu_s": cpu, "sample_cpu_s": sample_cpu,
                               "ref_cpu_s": scored_cpu - sample_cpu, "update_cpu_s": cpu - scored_cpu})

        def wrap(self, trainer, name):
            method = getattr(trainer, name)

            def timed(*args, **kwargs):
                wall, cpu = time.perf_counter(), time.process_time()
                out = method(*args, **kwargs)
                self.inside_wall[name] += time.perf_counter() - wall
                self.inside_cpu[name] += time.process_time() - cpu
                return out
            setattr(trainer, name, timed)

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    dataset = hf.trl_dataset(rows, tokenizer, cfg.instruction)
    args = trl.GRPOConfig(output_dir=str(out_dir), per_device_train_batch_size=len(rows) * cfg.G,
                          num_generations=cfg.G, max_completion_length=cfg.max_new_tokens,
                          max_steps=steps_timed + 1, learning_rate=cfg.lr, beta=cfg.beta,
                          loss_type="grpo", temperature=cfg.temperature, top_k=0,
                          top_p=1.0, report_to="none", use_cpu=True, save_strategy="no",
                          gradient_checkpointing=False,    # TRL's default True recomputes the forward
                          bf16=bf16, logging_steps=1, seed=0, disable_tqdm=True)
    timer = StepTimer()
    trainer = trl.GRPOTrainer(model=str(model_dir), reward_funcs=hf.trl_reward(verifier), args=args,
                              train_dataset=dataset, processing_class=tokenizer, callbacks=[timer])
    trainer.remove_callback(PrinterCallback)                  # no per-step log dicts on stdout
    for name in WRAPPED:
        timer.wrap(trainer, name)
    trainer.train()
    return timer.steps[1:], trainer.state.log_history


def write_trainer_bench(path, result, load_before):
    """``result`` with the versions, threads and load average, written to ``path`` and printed."""
    import transformers
    import trl
    result = {**result,
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                           "trl": trl.__version__},
              "threads": torch.get_num_threads(),
              "load_average_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)]}  # before, after
    write_bench(path, result)
    print(json.dumps(result, indent=2, sort_keys=True))
    print(f"wrote {path}")


def main():
    torch.set_num_threads(1)
    rows = problems(PROMPTS)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        model, tokenizer = tiny_causal_lm(seed=0, hidden=128, layers=4)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        n_params = sum(p.numel() for p in model.parameters())
        prompt_lengths = hf.encode_prompts(tokenizer, [r["question"] for r in rows])[1].sum(1).tolist()
        ours, trl_steps, trl_log, trl_bf16, small = [], [], [], [], []
        for round_ in range(2):
            ours += time_ours(tmp, rows)
            steps, log = time_trl(tmp, rows, Path(tmp) / f"trl{round_}", bf16=False)
            trl_steps += steps
            trl_log += log[1:-1]                            # the timed steps' logs
            trl_bf16 += time_trl(tmp, rows, Path(tmp) / f"trl_bf16{round_}", bf16=True)[0]
            steps, small_params = time_small_gpt(rows)
            small += steps
    fastest = min(ours, key=lambda s: s["step_wall_s"])
    trl_fastest = min(trl_steps, key=lambda s: s["step_wall_s"])
    ours_step, trl_step = fastest["step_wall_s"], trl_fastest["step_wall_s"]
    bf16_fastest = min(trl_bf16, key=lambda s: s["step_wall_s"])
    small_fastest = min(small, key=lambda s: s["step_wall_s"])

    def split(step, keys):                          # TRL's ref holds its reward scoring too
        return {k: round(step[k], 3) for k in keys}
    result = {
        "ours_step_wall_s": round(ours_step, 3),
        "trl_step_wall_s": round(trl_step, 3),
        "ours_sample_tokens_per_cpu_s": round(max(s["sampled_tokens"] / s["sample_cpu_s"] for s in ours)),
        "speedup_ours_vs_trl": round(trl_step / ours_step, 2),
        "ours_split_cpu_s": split(fastest, CPU_SPLIT),
        "trl_split_cpu_s": split(trl_fastest, CPU_SPLIT),
        "trl_split_wall_s": split(trl_fastest, WALL_SPLIT),
        "trl_bf16_autocast_step_wall_s": round(bf16_fastest["step_wall_s"], 3),
        "trl_bf16_autocast_split_wall_s": split(bf16_fastest, WALL_SPLIT),
        "speedup_ours_vs_trl_bf16_autocast": round(bf16_fastest["step_wall_s"] / ours_step, 2),
        "ours_trainer": "grpo.lm.hf.grpo_step: sample_completions (KV cache, each prompt prefilled once, "
                        "finished rows dropped), group_logprobs (each prompt read once per pass) for "
                        "the reference (inference_mode) and the policy (one forward/backward)",
        "trl_config": "GRPOTrainer defaults but gradient_checkpointing=False and bf16=False (fp32, as "
                      "ours); per_device_train_batch_size 64, num_generations 8, loss_type grpo, top_k 0, "
                      "top_p 1. trl_bf16_autocast_*: the same with TRL's default bf16=True (CPU autocast: "
                      "its forward passes in bf16, not the same arithmetic as ours)",
        "model": f"tiny random Qwen2, {n_params} parameters, character tokenizer",
        "batch": f"{PROMPTS} prompts x {G} samples, {NEW_TOKENS} new tokens, beta 0.04, 1 Adam step",
        "prompt_tokens": {"min": min(prompt_lengths), "max": max(prompt_lengths)},
        "mean_completion_tokens": {
            "ours": round(statistics.mean(s["completion_length_mean"] for s in ours), 1),
            "trl": round(statistics.mean(r["completions/mean_length"] for r in trl_log), 1),
            "ours_small_gpt": round(statistics.mean(s["completion_length_mean"] for s in small), 1)},
        "ours_small_gpt_step_wall_s": round(small_fastest["step_wall_s"], 3),
        "ours_small_gpt_split_cpu_s": split(small_fastest, CPU_SPLIT),
        "ours_small_gpt_sample_tokens_per_cpu_s": round(max(s["sampled_tokens"] / s["sample_cpu_s"]
                                                            for s in small)),
        "ours_small_gpt_model": f"chapter 7's SFT GPT, {small_params} parameters "
                                "(grpo.runstore.models.load_sft), grpo.lm.rl.grpo_iteration",
        "steps_timed": {"ours": len(ours), "trl": len(trl_steps), "trl_bf16_autocast": len(trl_bf16),
                        "ours_small_gpt": len(small)},
    }
    write_trainer_bench(OUT, result, load_before)


if __name__ == "__main__":
    main()
