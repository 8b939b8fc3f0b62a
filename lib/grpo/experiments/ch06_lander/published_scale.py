"""Chapter 6's algorithms at the published scale (5 seeds x 2M env steps), with a progress bar and
each seed's results written to ``--out``; not stored in data/runs/:

    python -m grpo.experiments.ch06_lander.published_scale --algo ppo --out ppo.json
"""
from __future__ import annotations

import argparse

import numpy as np

from grpo.files import json_ready
from grpo.lander import ALGOS, RunSpec, train
from grpo.runstore import cpu_timed, write_json

def main(argv=None) -> None:
    from tqdm.auto import tqdm
    p = argparse.ArgumentParser(prog="python -m grpo.experiments.ch06_lander.published_scale",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--algo", choices=ALGOS, required=True)
    p.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1")
    p.add_argument("--steps", type=int, default=2_000_000, help="env steps per seed")
    p.add_argument("--eval-every", type=int, default=100_000)
    p.add_argument("--out", default=None, help="JSON file for the per-seed results")
    a = p.parse_args(argv)
    runs = []
    for seed in range(a.seeds):
        with tqdm(total=a.steps, desc=f"{a.algo} seed {seed}", unit="step", unit_scale=True) as bar:
            r, cpu_s = cpu_timed(train, RunSpec(a.algo, seed, a.steps, eval_every=a.eval_every),
                                 bar)
        r = {k: v for k, v in r.as_dict().items() if not k.endswith("_state") and k != "snapshots"}
        print(f"{a.algo} seed {seed}: test argmax {np.mean(r['test_det']):.1f}, "
              f"sampled {np.mean(r['test_sampled']):.1f} ({cpu_s:.0f} CPU-s)")
        runs.append(r)
    if a.out:
        write_json(a.out, json_ready(runs))


if __name__ == "__main__":
    main()
