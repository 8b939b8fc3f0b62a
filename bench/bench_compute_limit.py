"""How close do the book's two hot loops run to one core's float64 limit? (`make bench`)

The limit is the best float64 matrix-product rate one core reaches here: NumPy's ``matmul``
(OpenBLAS's dgemm) and ``torch.mm`` (MKL's) on square matrices, under the book's pins. Against it:

- **chapter 8's GRPO iteration** (32 prompts x 8 answers, beta 0.04, from chapter 7's checkpoint):
  the CPU seconds of its three phases (sampling, the reference pass, the update; the fastest of 3
  iterations, as ``bench_grpo_loop.py`` times them) and the FLOPs of their matrix products, counted
  by ``torch.utils.flop_counter.FlopCounterMode`` on the first of them (same seed, same tokens);
- **chapter 6's PPO minibatch step** (64 rows, actor 8-64-64-4 and critic 8-64-64-1, the NumPy
  path of ``bench_lander_update.py``): its CPU time and the FLOPs of its products written out
  (forward, and backward's two products per layer), and where the time goes: the products, the
  two ``np.tanh`` per forward pass, and the rest; and chapter 6's PPO per env step, split into the
  environment, the rollout around it and the update.

GFLOP/s counts only matrix-product FLOPs, the part a GEMM peak bounds; softmax, tanh, Adam and
Python are time without FLOPs here, which is the point of the split. One thread; writes
data/bench/compute_limit.json (with the machine's fingerprint); no chapter reads it.
"""
import json
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from bench_grpo_loop import cpu, iteration_cpu_split
from bench_lander_update import numpy_steps, per_step_us
from benchfile import write_bench
from grpo import lander
from grpo.lm import rl
from grpo.lm.data import PROTOCOL
from grpo.lm.eval import EvalConfig
from grpo.runstore.models import load_sft

OUT = Path(__file__).resolve().parents[1] / "data" / "bench" / "compute_limit.json"
SIZES = (64, 256, 1024)
torch.set_num_threads(1)


def gemm_peak() -> dict:
    """GFLOP/s of float64 square products, NumPy and torch, per size; ``peak`` the best."""
    out = {}
    rng = np.random.default_rng(0)
    for n in SIZES:
        a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        reps = max(1, 2 ** 27 // n ** 3)                      # about 0.1 s of work per timing
        flops = 2 * n ** 3 * reps
        out[f"numpy_{n}"] = flops / cpu(lambda: [a @ b for _ in range(reps)]) / 1e9
        out[f"torch_{n}"] = flops / cpu(lambda: [torch.mm(ta, tb) for _ in range(reps)]) / 1e9
    out = {k: round(v, 2) for k, v in out.items()}
    out["peak"] = max(out.values())
    return out


def grpo_flops(model, tok, train, test) -> dict:
    """Matrix-product FLOPs of one iteration of chapter 8's loop, by phase."""
    flops = {"sample": 0, "ref": 0, "update": 0}
    in_update = [False]
    originals = {name: getattr(rl, name) for name in ("sample_groups", "completion_logprobs",
                                                       "grpo_update")}

    def counted(phase, fn):
        def wrapper(*args, **kwargs):
            if in_update[0]:                                   # the update's own forward passes
                return fn(*args, **kwargs)
            with FlopCounterMode(display=False) as counter:
                if phase == "update":
                    in_update[0] = True
                try:
                    out = fn(*args, **kwargs)
                finally:
                    in_update[0] = False
            flops[phase] += counter.get_total_flops()
            return out
        return wrapper

    rl.sample_groups = counted("sample", originals["sample_groups"])
    rl.completion_logprobs = counted("ref", originals["completion_logprobs"])
    rl.grpo_update = counted("update", originals["grpo_update"])
    try:
        cfg = rl.RunConfig(iterations=1, evaluation=EvalConfig(every=10_000, problems=1, samples=1))
        rl.train_lm_grpo(model, tok, train, test, cfg)
    finally:
        for name, fn in originals.items():
            setattr(rl, name, fn)
    return flops


def lander_step() -> dict:
    """One PPO minibatch step of chapter 6 (NumPy path): time, FLOPs and where the time goes."""
    mb, sizes = 64, [(lander.OBS_DIM, 64), (64, 64)]
    products = 0
    for n_out in (lander.N_ACTIONS, 1):                        # actor, critic
        layers = sizes + [(64, n_out)]
        forward = sum(2 * mb * i * o for i, o in layers)
        # backward: d weights for every layer, d inputs for all but the first
        backward = forward + sum(2 * mb * i * o for i, o in layers[1:])
        products += forward + backward
    step_us = per_step_us(numpy_steps)
    rng = np.random.default_rng(0)
    h = rng.standard_normal((mb, 64))
    w = rng.standard_normal((64, 64))
    reps = 20_000
    tanh_us = 1e6 * cpu(lambda: [np.tanh(h) for _ in range(reps)]) / reps
    mm_us = 1e6 * cpu(lambda: [h @ w.T for _ in range(reps)]) / reps
    return {"step_cpu_us": round(step_us, 1), "matmul_flops": products,
            # four tanh of (64, 64) per step (two per forward, actor and critic)
            "tanh_64x64_cpu_us": round(tanh_us, 2), "tanh_share": round(4 * tanh_us / step_us, 3),
            "matmul_64x64_cpu_us": round(mm_us, 2)}


def lander_ppo_split(env_steps: int = 2 * 16 * 1024) -> dict:
    """Chapter 6's PPO per env step, in microseconds of CPU: a whole run of ``env_steps`` (two
    rollouts and their updates), and its parts measured alone: the environment's step (random
    actions, the wrapped env the trainers use), the rollout (env steps, the actor's forward pass
    and the sampling), and the update (a minibatch step times epochs / minibatch)."""
    cfg = lander.ActorCriticConfig()
    rng = np.random.default_rng(0)
    env = lander.make_env()
    env.reset(seed=0)
    actions = rng.integers(0, lander.N_ACTIONS, 20_000).tolist()

    def steps():
        for a in actions:
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset(seed=1)
    env_us = 1e6 * cpu(steps) / len(actions)
    collector = lander.StepCollector(cfg.n_envs, np.random.default_rng(0))
    actor = lander.make_actor(0)
    rollout_us = 1e6 * cpu(lambda: collector.collect(actor, 256)) / (256 * cfg.n_envs)
    update_us = per_step_us(numpy_steps) * cfg.epochs / cfg.minibatch
    spec = lander.RunSpec("ppo", 0, env_steps, 10 * env_steps, 1, test_episodes=1)
    curve = lander.train(spec).curve             # training CPU, the evaluations left out
    run_us = 1e6 * curve["train_cpu_s"][-1] / curve["env_steps"][-1]
    return {"run_cpu_us": round(run_us, 1), "env_step_cpu_us": round(env_us, 1),
            "rollout_cpu_us": round(rollout_us, 1), "update_cpu_us": round(update_us, 1),
            "rest_cpu_us": round(run_us - rollout_us - update_us, 1)}


def main():
    peak = gemm_peak()
    model, tok = load_sft()
    train, test = PROTOCOL.splits()
    torch.manual_seed(0)
    flops = grpo_flops(load_sft()[0], tok, train, test)
    seconds = iteration_cpu_split(model, tok, train, test)
    phases = {}
    for phase, key in (("sample", "sample_cpu_s"), ("ref", "ref_cpu_s"), ("update", "update_cpu_s")):
        rate = flops[phase] / seconds[key] / 1e9
        phases[phase] = {"cpu_s": seconds[key], "matmul_gflop": round(flops[phase] / 1e9, 2),
                         "gflops": round(rate, 2), "of_peak": round(rate / peak["peak"], 3)}
    total_s, total_f = sum(seconds.values()), sum(flops.values())
    step = lander_step()
    step_rate = step["matmul_flops"] / (step["step_cpu_us"] * 1e-6) / 1e9
    result = {
        "threads": 1,
        "gemm_float64_gflops": peak,
        "grpo_iteration": {"phases": phases, "cpu_s": round(total_s, 3),
                           "gflops": round(total_f / total_s / 1e9, 2),
                           "of_peak": round(total_f / total_s / 1e9 / peak["peak"], 3)},
        "lander_ppo_minibatch_step": {**step, "gflops": round(step_rate, 2),
                                      "of_peak": round(step_rate / peak["peak"], 3)},
        "lander_ppo_per_env_step": lander_ppo_split(),
    }
    write_bench(OUT, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
