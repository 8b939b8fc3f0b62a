"""What each of chapter 9's RETRAIN switches would cost: the CPU time to train its stored runs
again, estimated from one job of each kind measured here. Writes data/bench/09_switches.json
(`make bench`), which chapter 9 and its lab notes read at their switches.

The stored files under data/runs/09_addition/ do not record what their runs took, and training
them all again takes about an hour of CPU. So, per file, the jobs are grouped by what sets their
cost (GRPO iterations, prompts, group size, evaluations, test samples; not the learning rate or the
seed), one job of each group runs here from chapter 9's start (``time.process_time``, one torch
thread), and the file's estimate is each group's measured job times its count. An SFT run's cost
is its steps and evaluations at the per-step and per-evaluation costs of two short runs.
"""
import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from grpo.lm import addition as A
from grpo.lm.train import sft
from grpo.runstore import read_json
from grpo.runstore.addition_jobs import (ADDITION_FOLDER, ENDPOINTS_FOLDER, LEVELS, READER,
                                         SFT_FOLDER, SFT_RUN, addition_model, config_from_spec,
                                         job_from_spec, run_job, stored_sft_run)
from benchfile import write_bench

OUT = "09_switches.json"
START_LEVEL = 0.36   # chapter 9's start: the first check of its SFT run to reach this accuracy
torch.set_num_threads(1)
# What sets a job's cost: its kind, then these fields of its config, then its test samples.
GRPO_COST = ("iterations", "prompts", "G", "max_new_tokens", "reuse", "dynamic_sampling",
             "evaluation", "train_pool")
SFT_COST = ("steps", "batch_size", "eval_every", "eval_problems")


def cost_group(job) -> tuple:
    """The fields that set ``job``'s CPU time: jobs with the same group cost the same."""
    cfg, tail = job.cfg, (job.samples, job.many_samples)
    if cfg is None:
        return ("start", *tail)
    fields = asdict(cfg)
    if type(cfg).__name__ == "RunConfig":
        return ("grpo", *(fields[k] for k in GRPO_COST), fields["beta"] == 0, *tail)
    return ("sft", *(fields[k] for k in SFT_COST), *tail)


def cpu_s(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def grid_estimate(path: Path, state: dict, tok) -> dict:
    """One stored grid (``stored_jobs``): its jobs, their cost groups, and the estimate."""
    jobs = [job_from_spec(s) for s in read_json(path, READER)["specs"]]
    groups = {}
    for job in jobs:
        groups.setdefault(cost_group(job), []).append(job)
    measured = {g: cpu_s(lambda j=js[0]: run_job(j, state, tok)) for g, js in groups.items()}
    return {"jobs": len(jobs), "jobs_measured": len(groups),
            "estimate_cpu_s": round(sum(measured[g] * len(js) for g, js in groups.items()), 1)}


def sft_unit_costs(tok) -> dict:
    """Chapter 9's SFT recipe: CPU seconds a step and an evaluation (of ``SFT_RUN.eval_problems``
    problems), from 100 steps evaluated once and evaluated ten times."""
    train, val, _ = A.make_addition_splits()

    def run(eval_every):
        model = addition_model(tok)
        return cpu_s(lambda: sft(model, tok, train, val, replace(SFT_RUN, steps=100,
                                                                 eval_every=eval_every)))
    once, ten_times = run(100), run(10)
    evaluation = (ten_times - once) / 9
    return {"step_cpu_s": round((once - evaluation) / 100, 5), "evaluation_cpu_s": round(evaluation, 3)}


def evaluations(cfg) -> int:
    """How many times ``sft`` evaluates a run of ``cfg``: every ``eval_every`` steps and at the end."""
    return cfg.steps // cfg.eval_every + (cfg.steps % cfg.eval_every != 0)


def sft_estimate(steps: int, evaluations: int, units: dict) -> float:
    return steps * units["step_cpu_s"] + evaluations * units["evaluation_cpu_s"]


def main():
    load = round(os.getloadavg()[0], 2)
    tok = A.addition_tokenizer()
    history, starts = stored_sft_run("sft_run", SFT_RUN, LEVELS, tok)
    start = next(s for s, g in zip(history["eval_step"], history["eval_greedy"]) if g >= START_LEVEL)
    state = starts[start]
    units = sft_unit_costs(tok)
    files = {p.stem: grid_estimate(p, state, tok) for p in sorted(ADDITION_FOLDER.glob("*.json"))}
    for path in sorted(SFT_FOLDER.glob("*.json")):          # one run each: its stored curve
        run = json.loads(path.read_text())["history"]
        files[f"sft/{path.stem}"] = {"jobs": 1, "jobs_measured": 0, "estimate_cpu_s": round(
            sft_estimate(run["step"][-1], len(run["eval_step"]), units), 1)}
    for path in sorted(ENDPOINTS_FOLDER.glob("*.json")):
        cfgs = [config_from_spec(c) for c in json.loads(path.read_text())["specs"]]
        files[f"endpoints/{path.stem}"] = {"jobs": len(cfgs), "jobs_measured": 0, "estimate_cpu_s": round(
            sum(sft_estimate(c.steps, evaluations(c), units) for c in cfgs), 1)}
    out = {"files": files, "sft_units": units, "start_step": start, "load_average_before": load,
           "load_average_after": round(os.getloadavg()[0], 2), "measured": time.strftime("%Y-%m-%d")}
    write_bench(OUT, out)
    print(json.dumps(out, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
