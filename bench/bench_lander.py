"""Time chapter 6's LunarLander code against the raw env and Stable-Baselines3 PPO (`make bench`).

Measures, in one run, one torch thread, ``render_mode=None`` everywhere:
- the raw env: one LunarLander-v3, random actions, no policy;
- SB3 2.9.2 PPO with rl-zoo's LunarLander settings (16 envs x 1024 steps, batch 64, 4 epochs,
  gamma 0.999, lambda 0.98, ent 0.01), end to end. SB3 is a bench-only dependency: it is
  pip-installed into this venv if missing and is kept out of requirements.txt;
- ours: ``grpo.lander`` PPO and GRPO end to end, and rollout collection alone (16 envs).
Each figure is env steps per second of wall time and of process CPU time (the CPU figure is the
fairer one when the machine is shared). Writes data/bench/06_lunar_lander.json.
"""
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from grpo import lander
from benchfile import write_bench

STEPS = int(os.environ.get("BENCH_LANDER_STEPS", 16 * 1024 * 12))     # ~197k env steps per trainer
OUT = Path(__file__).resolve().parents[1] / "data" / "bench" / "06_lunar_lander.json"


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def raw_env(n=100_000):
    env, rng = lander.make_env(), np.random.default_rng(0)
    env.reset(seed=0)
    for a in rng.integers(0, 4, n):
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    return n


def ours_rollout(rounds=8):
    collector = lander.StepCollector(16, np.random.default_rng(0))
    actor = lander.make_actor(0)
    for _ in range(rounds):
        collector.collect(actor, 1024)
    return rounds * 16 * 1024


def ours(algo):
    spec = lander.RunSpec(algo, 0, STEPS, eval_every=10 ** 12, val_episodes=1, test_episodes=1)
    return lander.train(spec).env_steps


def ensure_sb3():
    if importlib.util.find_spec("stable_baselines3") is None:
        print("installing stable-baselines3==2.9.2 into this venv (bench only)")
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet",
                               "--disable-pip-version-check", "stable-baselines3==2.9.2"])


def sb3_ppo_model(seed: int = 0):
    """SB3 PPO with rl-zoo's LunarLander hyperparameters (the same as ``lander.ActorCriticConfig``)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    env = make_vec_env(lander.ENV_ID, n_envs=16, seed=seed, env_kwargs={"render_mode": None})
    return PPO("MlpPolicy", env, n_steps=1024, batch_size=64, n_epochs=4, gamma=0.999, gae_lambda=0.98,
               ent_coef=0.01, seed=seed, device="cpu", verbose=0)


def sb3_ppo():
    model = sb3_ppo_model(0)
    model.learn(total_timesteps=STEPS)
    return model.num_timesteps


def main():
    torch.set_num_threads(1)
    ensure_sb3()
    import stable_baselines3  # noqa: F401  (imported outside the timing)
    rows = {}
    load_start = round(os.getloadavg()[0], 2)
    print(f"load average before: {load_start:.2f} (2 cores); {STEPS} env steps per trainer")
    for name, fn in (("raw_env", raw_env), ("ours_rollout", ours_rollout), ("sb3_ppo", sb3_ppo),
                     ("ours_ppo", lambda: ours("ppo")), ("ours_grpo", lambda: ours("grpo"))):
        n, wall, cpu = timed(fn)
        rows[name] = (n / wall, n / cpu)
        print(f"  {name:13s} {n:8d} steps  {n / wall:8.0f} steps/s wall  {n / cpu:8.0f} steps/s CPU")
    out = {f"{k}_steps_per_wall_s": round(v[0]) for k, v in rows.items()}
    out.update({f"{k}_steps_per_cpu_s": round(v[1]) for k, v in rows.items()})
    for k in ("ours_ppo", "ours_grpo"):
        out[f"{k}_over_sb3"] = round(rows[k][1] / rows["sb3_ppo"][1], 2)
    out["rollout_over_raw_env"] = round(rows["ours_rollout"][1] / rows["raw_env"][1], 2)
    out["env_steps_per_trainer"] = STEPS
    out["load_average_before"], out["load_average_after"] = load_start, round(os.getloadavg()[0], 2)
    out["note"] = ("ratios use CPU time; wall-time rates are inflated by other processes on a shared "
                   "machine")
    write_bench(OUT, out)
    print(f"ours/SB3 (CPU time): PPO {out['ours_ppo_over_sb3']}x, GRPO {out['ours_grpo_over_sb3']}x; "
          f"rollout = {out['rollout_over_raw_env']:.0%} of the raw env; wrote {OUT}")


if __name__ == "__main__":
    main()
