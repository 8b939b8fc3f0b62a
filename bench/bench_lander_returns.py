"""Does our PPO match Stable-Baselines3's deterministic return at equal env steps? (`make bench`)

Both train on LunarLander-v3 with rl-zoo's PPO settings (16 envs x 1024 steps, minibatch 64, 4 epochs,
gamma 0.999, lambda 0.98, clip 0.2, lr 3e-4, ent 0.01, grad clip 0.5; SB3's defaults are ours too),
for the same env-step budget and seeds. Both get the
same evaluation protocol as chapter 6: every 100k env steps, 16 validation seeds pick the best
checkpoint per mode (the best argmax return for the argmax row, the best sampled return for the
sampled row); at the end those checkpoints and the final policy fly the 50 held-out test seeds
[2e6, 2e6 + 50). Our runs are exactly chapter 6's PPO runs. SB3 (2.9.2) is a bench-only
dependency, installed into this venv if missing (see bench_lander.py). The six runs share two
worker processes, one torch thread each.

Writes data/bench/06_lander_returns.json. ~10 min on 2 idle cores at 1M steps (SB3's runs are most of it).

    python bench/bench_lander_returns.py            # BENCH_LANDER_SEEDS=3 BENCH_LANDER_RETURN_STEPS=1000000
"""
import copy
import os
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bench_lander import ensure_sb3, sb3_ppo_model
from grpo import lander
from grpo.pool import parallel_map
from benchfile import write_bench

SEEDS = list(range(int(os.environ.get("BENCH_LANDER_SEEDS", 3))))
STEPS = int(os.environ.get("BENCH_LANDER_RETURN_STEPS", 1_000_000))   # chapter 6's PPO budget per run
EVAL_EVERY, VAL_EPISODES, TEST_EPISODES = 100_000, 16, 50                # chapter 6's protocol
OUT = Path(__file__).resolve().parents[1] / "data" / "bench" / "06_lander_returns.json"
TEST_SEEDS = range(lander.TEST_SEED0, lander.TEST_SEED0 + TEST_EPISODES)


class SB3Logits(nn.Module):
    """An SB3 policy seen as our actor: observations (n, 8) -> the 4 action logits."""

    def __init__(self, policy):
        super().__init__()
        self.policy = policy

    def forward(self, obs):
        return self.policy.get_distribution(obs).distribution.logits


def ours(seed: int) -> dict:
    r = lander.train(lander.RunSpec("ppo", seed, STEPS, EVAL_EVERY, VAL_EPISODES, TEST_EPISODES))
    return {"env_steps": r.env_steps, "best_det": float(np.mean(r.test_det)),
            "best_sampled": float(np.mean(r.test_sampled)), "final_det": float(np.mean(r.final_det)),
            "final_sampled": float(np.mean(r.final_sampled))}


def sb3(seed: int) -> dict:
    """SB3 PPO with chapter 6's checkpoint choice: a callback evaluates before each rollout, as
    ``lander._Tracker`` does, and keeps the best policy per mode (argmax, sampled)."""
    from stable_baselines3.common.callbacks import BaseCallback
    validate = lander.Evaluator(range(lander.VAL_SEED0, lander.VAL_SEED0 + VAL_EPISODES), rng_seed=seed)

    class Track(BaseCallback):
        next_eval, best, best_state = 0, {"det": -np.inf, "sampled": -np.inf}, {}

        def _evaluate(self):
            ev = validate(SB3Logits(self.model.policy))
            for mode in ("det", "sampled"):
                if ev[mode].mean() > self.best[mode]:
                    self.best[mode] = ev[mode].mean()
                    self.best_state[mode] = copy.deepcopy(self.model.policy.state_dict())

        def _on_rollout_start(self):
            if self.num_timesteps >= self.next_eval:
                self.next_eval = self.num_timesteps + EVAL_EVERY
                self._evaluate()

        def _on_training_end(self):
            self._evaluate()

        def _on_step(self):
            return True

    model, track = sb3_ppo_model(seed), Track()
    model.learn(total_timesteps=STEPS, callback=track)
    test = lander.Evaluator(TEST_SEEDS, rng_seed=seed)
    final = test(SB3Logits(model.policy))
    best = {}
    for mode in ("det", "sampled"):
        model.policy.load_state_dict(track.best_state[mode])
        best[mode] = test(SB3Logits(model.policy))[mode]
    return {"env_steps": int(model.num_timesteps), "best_det": float(best["det"].mean()),
            "best_sampled": float(best["sampled"].mean()), "final_det": float(final["det"].mean()),
            "final_sampled": float(final["sampled"].mean())}


def run(job):
    name, seed = job
    torch.set_num_threads(1)
    t0 = time.process_time()
    r = {"sb3_ppo": sb3, "ours_ppo": ours}[name](seed)
    r["cpu_seconds"] = round(time.process_time() - t0, 1)
    return r


def main():
    torch.set_num_threads(1)
    ensure_sb3()
    import stable_baselines3
    load_start = round(os.getloadavg()[0], 2)
    print(f"load average at the start: {load_start:.2f} (2 cores); seeds {SEEDS} x {STEPS} env steps")
    jobs = [(name, seed) for seed in SEEDS for name in ("sb3_ppo", "ours_ppo")]
    runs = {"sb3_ppo": [], "ours_ppo": []}
    for (name, seed), r in zip(jobs, parallel_map(run, jobs, workers=2, desc="lander runs")):
        runs[name].append(r)
        print(f"  {name:8s} seed {seed}: {r['env_steps']} steps, test argmax best {r['best_det']:7.1f} "
              f"final {r['final_det']:7.1f}, sampled best {r['best_sampled']:7.1f} "
              f"({r['cpu_seconds']} CPU-s)", flush=True)
    out = {"seeds": SEEDS, "env_step_budget": STEPS, "eval_every_env_steps": EVAL_EVERY,
           "val_episodes": VAL_EPISODES, "test_seed_range": [TEST_SEEDS.start, TEST_SEEDS.stop],
           "sb3_version": stable_baselines3.__version__,
           "load_average_start": load_start, "load_average_end": round(os.getloadavg()[0], 2),
           "note": "returns are means over the 50 held-out test seeds, argmax (det) or sampled action; "
                   "best = checkpoint chosen per mode on 16 validation seeds every 100k steps, "
                   "final = last policy"}
    for name, rs in runs.items():
        entry = {"env_steps": [r["env_steps"] for r in rs], "cpu_seconds": [r["cpu_seconds"] for r in rs]}
        for k in ("best_det", "final_det", "best_sampled", "final_sampled"):
            v = np.array([r[k] for r in rs])
            entry[f"{k}_per_seed"] = [round(float(x), 2) for x in v]
            entry[f"{k}_mean"] = round(float(v.mean()), 2)
            entry[f"{k}_sem"] = round(float(v.std(ddof=1) / np.sqrt(len(v))), 2) if len(v) > 1 else None
        out[name] = entry
    for k in ("best_det", "final_det"):
        out[f"ours_minus_sb3_{k}_mean"] = round(out["ours_ppo"][f"{k}_mean"] - out["sb3_ppo"][f"{k}_mean"], 2)
    write_bench(OUT, out, sort_keys=False)
    print(f"argmax return on the test seeds, mean over seeds (best checkpoint / final): "
          f"SB3 {out['sb3_ppo']['best_det_mean']} / {out['sb3_ppo']['final_det_mean']}, "
          f"ours {out['ours_ppo']['best_det_mean']} / {out['ours_ppo']['final_det_mean']}; wrote {OUT}")


if __name__ == "__main__":
    main()
