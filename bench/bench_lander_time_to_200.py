"""How much CPU does our PPO need to land, against Stable-Baselines3's? (`make bench`)

Both run rl-zoo's LunarLander PPO settings (those of bench_lander_returns.py and chapter 6), one torch
thread each, 3 seeds each, up to 1.5M env steps; the six runs share 2 worker processes (CPU time is
per process, so the pairing does not favour either). Every 50k env steps both are
validated on chapter 6's 20 validation seeds with the argmax action; the figure is the training CPU
time (process time, the evaluations left out) until that validation mean first reaches 200, the
solved mark. A seed that never gets there within the budget is reported as not reached (null).
SB3 (2.9.2) is a bench-only dependency, installed into this venv if missing (see bench_lander.py).

Writes data/bench/06_time_to_200.json. About 12 CPU-minutes (6 min of wall time on 2 cores).

    python bench/bench_lander_time_to_200.py      # BENCH_TTS_SEEDS=3 BENCH_TTS_MAX_STEPS=1500000
"""
import os
import time
from pathlib import Path

import numpy as np
import torch

from bench_lander import ensure_sb3, sb3_ppo_model
from bench_lander_returns import SB3Logits
from grpo import lander
from grpo.pool import parallel_map
from benchfile import write_bench

SEEDS = list(range(int(os.environ.get("BENCH_TTS_SEEDS", 3))))
MAX_STEPS = int(os.environ.get("BENCH_TTS_MAX_STEPS", 1_500_000))
EVAL_EVERY, VAL_EPISODES, TARGET = 50_000, 20, lander.SOLVED
OUT = Path(__file__).resolve().parents[1] / "data" / "bench" / "06_time_to_200.json"


def first_reach(steps, cpu_s, det):
    """(env steps, training CPU-s) at the first validation whose argmax mean reaches the target."""
    hit = next((i for i, d in enumerate(det) if d >= TARGET), None)
    return (None, None) if hit is None else (int(steps[hit]), round(float(cpu_s[hit]), 1))


def ours(seed: int) -> dict:
    """Our PPO, stopped at the first validation that reaches the target (or at MAX_STEPS)."""
    spec = lander.RunSpec("ppo", seed, MAX_STEPS, EVAL_EVERY, VAL_EPISODES, test_episodes=1, stop_at=TARGET)
    curve = lander.train(spec).curve
    return dict(zip(("env_steps_to_200", "cpu_s_to_200"),
                    first_reach(curve["env_steps"], curve["train_cpu_s"], curve["det"])))


def sb3(seed: int) -> dict:
    """SB3 PPO with the same validation before each rollout once 50k more steps have passed."""
    from stable_baselines3.common.callbacks import BaseCallback
    validate = lander.Evaluator(range(lander.VAL_SEED0, lander.VAL_SEED0 + VAL_EPISODES), rng_seed=seed)

    class Track(BaseCallback):
        next_eval, eval_cpu, reached = 0, 0.0, (None, None)

        def _on_training_start(self):
            self.cpu0 = time.process_time()

        def _on_rollout_start(self):
            if self.num_timesteps >= self.next_eval:
                self.next_eval = self.num_timesteps + EVAL_EVERY
                t = time.process_time()
                train_cpu = t - self.cpu0 - self.eval_cpu
                det = validate(SB3Logits(self.model.policy))["det"].mean()
                self.eval_cpu += time.process_time() - t
                if det >= TARGET:
                    self.reached = (int(self.num_timesteps), round(train_cpu, 1))

        def _on_step(self):
            return self.reached[0] is None           # stop once it has landed

    model, track = sb3_ppo_model(seed), Track()
    model.learn(total_timesteps=MAX_STEPS, callback=track)
    return dict(zip(("env_steps_to_200", "cpu_s_to_200"), track.reached))


def run_job(job):
    torch.set_num_threads(1)
    name, seed = job
    return (sb3 if name == "sb3_ppo" else ours)(seed)


def main():
    torch.set_num_threads(1)
    ensure_sb3()
    import stable_baselines3
    load_start = round(os.getloadavg()[0], 2)
    print(f"load average at the start: {load_start:.2f} (2 cores); seeds {SEEDS}, "
          f"up to {MAX_STEPS} env steps")
    jobs = [(name, seed) for seed in SEEDS for name in ("sb3_ppo", "ours_ppo")]
    runs = {"sb3_ppo": [], "ours_ppo": []}
    for (name, seed), r in zip(jobs, parallel_map(run_job, jobs, workers=2, desc="time to 200")):
        runs[name].append(r)
        print(f"  {name:8s} seed {seed}: reached {TARGET:.0f} at {r['env_steps_to_200']} steps, "
              f"{r['cpu_s_to_200']} CPU-s")
    out = {"seeds": SEEDS, "max_env_steps": MAX_STEPS, "eval_every_env_steps": EVAL_EVERY,
           "val_episodes": VAL_EPISODES, "target": TARGET, "sb3_version": stable_baselines3.__version__,
           "load_average_start": load_start, "load_average_end": round(os.getloadavg()[0], 2),
           "note": "training CPU-s (evaluations left out) until the validation argmax mean first reaches "
                   "the target; the mean is over seeds that reached it (null: none did)"}
    for name, rs in runs.items():
        cpu = [r["cpu_s_to_200"] for r in rs]
        reached = [c for c in cpu if c is not None]
        out[name] = {"per_seed": rs, "seeds_reached": len(reached)}
        out[f"{name.split('_')[0]}_cpu_s_to_200"] = round(float(np.mean(reached)), 1) if reached else None
    if out["ours_cpu_s_to_200"] and out["sb3_cpu_s_to_200"]:
        out["ratio_ours_to_sb3"] = round(out["ours_cpu_s_to_200"] / out["sb3_cpu_s_to_200"], 3)
    write_bench(OUT, out, sort_keys=False)
    print(f"CPU-s to {TARGET:.0f}: ours {out['ours_cpu_s_to_200']}, SB3 {out['sb3_cpu_s_to_200']}; "
          f"wrote {OUT}")


if __name__ == "__main__":
    main()
