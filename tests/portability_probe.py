"""A sample of the book's computations, written as JSON: what ``test_portability.py`` runs under
other kernel paths (pins) and compares. Run as ``python tests/portability_probe.py OUT.json``.

- the first two iterations of a stored GRPO run and the first two steps of an SFT run (the stored
  runs' replays, ``grpo.experiments.ch10_word_problems.long_runs.rerun``), from chapter 7's checkpoint;
- the first updates of a PPO and a GRPO lander run (chapter 6's trainers), to their final weights
  and held-out returns;
- the machine fingerprint, to show which kernels ran.
"""
import dataclasses
import json
import sys
import time

import numpy as np
import torch

from grpo import lander
from grpo.book import machine
from grpo.experiments.ch10_word_problems import long_runs as runs

LANDER_STEPS = 12_000


def lander_probe(algo: str, lr_scale: float = 1.0) -> dict:
    spec = lander.RunSpec(algo, 0, LANDER_STEPS, eval_every=10**9, val_episodes=2, test_episodes=3)
    cfg = spec.resolved_config()
    r = lander.train(dataclasses.replace(spec, config=dataclasses.replace(cfg, lr=cfg.lr * lr_scale)))
    weights = np.concatenate([v.numpy().ravel() for v in r.final_state.values()])
    return {"env_steps": r.env_steps, "test_det": r.test_det, "test_sampled": r.test_sampled,
            "weights_head": weights[:16].tolist(), "weights_sum": float(weights.sum()),
            "weights_abs_sum": float(np.abs(weights).sum())}


def main(out: str) -> None:
    torch.set_num_threads(1)
    grpo_run = next(n for n, s in runs.RUNS.items() if s.kind == "grpo")
    sft_run = next(n for n, s in runs.RUNS.items() if s.kind == "sft")
    result, seconds = {}, {}
    for key, fn in (("grpo " + grpo_run, lambda: runs.rerun(grpo_run, 2)),
                    ("sft " + sft_run, lambda: runs.rerun(sft_run, 2)),
                    ("lander ppo", lambda: lander_probe("ppo")),
                    ("lander grpo", lambda: lander_probe("grpo"))):
        t = time.process_time()
        result[key] = fn()
        seconds[key] = round(time.process_time() - t, 1)
    with open(out, "w") as f:
        json.dump({"results": result, "cpu_s": seconds, "machine": machine.fingerprint()}, f)


if __name__ == "__main__":
    main(sys.argv[1])
