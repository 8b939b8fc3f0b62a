"""Time the training protocol of chapters 2-4 (run with `make bench`; timings are not tests).

The protocol: REINFORCE, PPO and GRPO, 5 seeds x 300 updates each, G = 8, exact evaluation on the
200 test floors every 10 updates; plus chapter 4's learning-rate ablation (PPO at lr 1.0 and 1.5,
REINFORCE at 1.5, GRPO at 1.0, 5 seeds each). Also times the group player, lava.play_steps
(flat arrays, used in training), and lava.play_group (the same runs split into Run objects).
"""
import time

import numpy as np

from grpo.toy import algos, lava


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def main():
    lava.held_out_floors(), lava.ceiling()            # warm the caches outside the timings
    total = 0.0
    print("protocol: 5 seeds x 300 updates, G = 8, exact test every 10 updates")
    for algo in ("REINFORCE", "PPO", "GRPO"):
        runs, dt = timed(algos.run_seeds, algo)
        total += dt
        print(f"  {algo:9s} lr 0.5: {dt:5.2f} s   final test score {runs.final_scores.mean():.3f}")
    for algo, lr in (("PPO", 1.0), ("PPO", 1.5), ("REINFORCE", 1.5), ("GRPO", 1.0)):
        runs, dt = timed(algos.run_seeds, algo, lr=lr)
        total += dt
        print(f"  {algo:9s} lr {lr}: {dt:5.2f} s   final test score {runs.final_scores.mean():.3f}")
    print(f"  all 35 training runs: {total:.2f} s")

    W = algos.train_grpo(0).W
    rng = np.random.default_rng(0)
    floors = [lava.make_floor(rng) for _ in range(2000)]
    for name, policy in (("untrained", np.zeros((4, 2))), ("trained GRPO", W)):
        _, t_group = timed(lambda: [lava.play_group(f, policy, 8, rng) for f in floors])
        _, t_steps = timed(lambda: [lava.play_steps(f, policy, 8, rng) for f in floors])
        print(f"one group of 8 runs, {name} policy: play_group "
              f"{t_group / len(floors) * 1e6:.0f} us, play_steps {t_steps / len(floors) * 1e6:.0f} us")


if __name__ == "__main__":
    main()
