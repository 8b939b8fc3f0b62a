"""What chapter 9's runs cost: one GRPO iteration of the addition recipe (sampling, reference,
update) against one SFT step of its recipe, in CPU seconds (time.process_time), one torch thread,
fastest of 3. Writes data/bench/09_addition.json (`make bench`). Chapter 9's continued-SFT control
was given the CPU time of one GRPO run from these figures; the chapter keeps the ones its runs
were stored with (``grpo.experiments.ch09_addition.grids.SFT_BASIS``).
"""
import json
import os
import time
from dataclasses import replace
from pathlib import Path

import torch

from grpo.lm import addition as A
from grpo.lm.rl import train_lm_grpo
from grpo.lm.train import sft
from benchfile import write_bench

OUT = Path(__file__).resolve().parents[1] / "data" / "bench" / "09_addition.json"
REPEATS = 3
torch.set_num_threads(1)


def main():
    load = round(os.getloadavg()[0], 2)
    tok = A.addition_tokenizer()
    train, val, _ = A.make_addition_splits()
    model = A.addition_model(tok)
    sft(model, tok, train, val, replace(A.SFT_RECIPE, steps=500, eval_every=10_000, eval_problems=1))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = replace(A.GRPO_RECIPE, iterations=REPEATS + 2,
                  evaluation=replace(A.GRPO_RECIPE.evaluation, every=10_000, problems=1))
    log = train_lm_grpo(model, tok, train, val, cfg)["log"]
    split = {k: round(min(log[k][2:]), 4) for k in ("sample_cpu_s", "ref_cpu_s", "update_cpu_s")}

    def sft_cpu(steps):                     # an SFT run's CPU time, no evaluation, fastest of 3
        best = float("inf")
        for _ in range(REPEATS):
            model.load_state_dict(state)
            t = time.process_time()
            cfg = replace(A.SFT_RECIPE, steps=steps, eval_every=10_000, eval_problems=1)
            sft(model, tok, train, val, cfg)
            best = min(best, time.process_time() - t)
        return best

    step = (sft_cpu(200) - sft_cpu(50)) / 150    # per step, without sft()'s one-off tokenising
    out = {"grpo_iteration_cpu_s": split, "grpo_iteration_total_cpu_s": round(sum(split.values()), 4),
           "sft_step_cpu_s": round(step, 5), "repeats": REPEATS, "load_average_before": load,
           "load_average_after": round(os.getloadavg()[0], 2),
           "measured": time.strftime("%Y-%m-%d")}
    write_bench(OUT, out)
    print(json.dumps(out, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
