"""Chapter 9's stored grids as jobs, in one place: the chapter (which writes its results file from
them) and its lab notes (``book/lab_09_addition.ipynb``, which shows them) build the same jobs from
these functions, so both read the same stored file (``grpo.runstore.addition_jobs.stored_jobs``
keys a file by its jobs' reprs; a job that differs runs again into scratch). The SFT run the starts
come from, its levels and the recipes are the run store's (chapter 12 reads them too).

``main_runs_from_results`` rebuilds the main run's per-problem test outcomes from the results file
the chapter writes (``data/results/09_grpo_addition.json``, ``addition.outcomes``), so the lab
notes pair their grids against the main run without training it again.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from grpo.lm.addition import EVAL_SAMPLES
from grpo.lm.grpo import PRESETS
from grpo.lm.rl import ADAM_BETAS, RunConfig
from grpo.lm.train import SFTConfig
from grpo.runstore import DATA_DIR
from grpo.runstore.addition_jobs import GRPO_RECIPE, SFT_RECIPE, Job

# Annealed SFT: warm-up 20, cosine to 5%, at these lengths; the chapter picks one on validation.
ANNEAL_LENGTHS = (300, 400, 500, 600, 800, 850, 900, 910, 920, 930, 940, 950, 1000)

# Three more SFT runs (seeds fixed before running), each cut as a snapshot and an annealed start.
SFT_SEEDS = (1, 2, 3)
UPDATE_SEEDS = range(3)
SNAPSHOT_RUN = replace(SFT_RECIPE, eval_every=10, steps=1000)
CELL_SEEDS = range(5)

# The ablations: each changes one thing in the reference recipe (chapter 9's lab notes).
ABLATIONS = {
    "no baseline": dict(advantage="raw"),
    "no std": dict(advantage="center"),
    "RLOO": dict(advantage="rloo"),
    "REINFORCE, group baseline": dict(advantage="center", clip=False, beta=0.0,
                                      aggregation="token"),
    "reuse 4": dict(reuse=4),
    "reuse 4, same steps": dict(reuse=4, iterations=GRPO_RECIPE.iterations // 4),
    "reuse 4, no clip": dict(reuse=4, clip=False),
    "G 4": dict(G=4, prompts=96),
    "G 16": dict(G=16, prompts=24),
    "no KL": dict(beta=0.0),
    "Dr. GRPO preset": PRESETS["dr_grpo"].loss_options(),
    "DAPO preset": dict(PRESETS["dapo"].loss_options(), dynamic_sampling=True),
}
STRESS, SEEDS5, FRESH, MAP_SEEDS = 3, range(5), range(5, 10), (0, 1, 2)


def anneal_configs() -> list[SFTConfig]:
    return [replace(SFT_RECIPE, steps=n, warmup=20, min_lr_frac=0.05, eval_every=n)
            for n in ANNEAL_LENGTHS]


def sft_like_grpo(R: RunConfig, lr: float) -> SFTConfig:
    """SFT with GRPO's optimizer: the reference answers, GRPO's Adam, lr and step count."""
    return SFTConfig(steps=R.iterations, batch_size=R.prompts, lr=lr, warmup=0, min_lr_frac=1.0,
                     weight_decay=0.0, betas=ADAM_BETAS, grad_clip=R.grad_clip,
                     eval_every=10_000, eval_problems=1)


def updates(R: RunConfig, lr: float) -> dict:
    """The 2 x 2's three updates, by name."""
    return {"GRPO": replace(R, lr=lr), "SFT, GRPO's optimizer": sft_like_grpo(R, lr),
            "GRPO, random reward": replace(R, lr=lr, reward="random")}


def grid_jobs(start, annealed: str, ups: dict) -> list:
    """The 2 x 2 of starts and updates (the snapshot's GRPO cell is the main run, not stored)."""
    jobs = [Job(annealed, None)]
    for s in (start, annealed):
        for name, cfg in ups.items():
            if not (s == start and name == "GRPO"):
                jobs += [Job(s, replace(cfg, seed=k)) for k in CELL_SEEDS]
    return jobs


def across_jobs(keys, ups: dict) -> list:
    """From each further SFT run's start (``keys``, in order): the start, then each update's
    ``UPDATE_SEEDS``."""
    jobs = []
    for key in keys:
        jobs.append(Job(key, None))
        for cfg in ups.values():
            jobs += [Job(key, replace(cfg, seed=g)) for g in UPDATE_SEEDS]
    return jobs


# A GRPO iteration's CPU and an SFT step's, as make bench measured them when the grids were stored
# (data/bench/09_addition.json, 2026-12-02). They fix the continued-SFT control's length, so a later
# make bench, on this machine or another, changes no stored job.
SFT_BASIS = {"grpo_iteration_total_cpu_s": 0.1909, "sft_step_cpu_s": 0.03622}


def control_config(R: RunConfig, basis: dict = SFT_BASIS) -> SFTConfig:
    """Continued SFT at GRPO's CPU (decayed from 3e-4): ``R.iterations`` GRPO iterations' CPU in SFT
    steps, at the per-step costs of ``basis``."""
    return replace(SFT_RECIPE,
                   steps=round(R.iterations * basis["grpo_iteration_total_cpu_s"]
                               / basis["sft_step_cpu_s"]),
                   lr=3e-4, warmup=10, min_lr_frac=0.05, eval_every=10_000)


def ablation_jobs(start, R: RunConfig, lr: float) -> list:
    """The reference at ``STRESS`` x lr, then every ablation at 1 x and ``STRESS`` x lr."""
    jobs = [Job(start, replace(R, lr=lr * STRESS, seed=s), samples=4) for s in SEEDS5]
    for change in ABLATIONS.values():
        for mult in (1, STRESS):
            jobs += [Job(start, replace(R, lr=lr * mult, seed=s, **change), samples=4)
                     for s in SEEDS5]
    return jobs


def replication_jobs(start, R: RunConfig, lr: float, rep_keys) -> list:
    """Fresh seeds of the reference at each multiplier called, then of each called row."""
    jobs = []
    for mult in sorted({m for _, m in rep_keys}):
        jobs += [Job(start, replace(R, lr=lr * mult, seed=s), samples=4) for s in FRESH]
    for name, mult in rep_keys:
        jobs += [Job(start, replace(R, lr=lr * mult, seed=s, **ABLATIONS[name]), samples=4)
                 for s in FRESH]
    return jobs


def map_jobs(map_starts, start, R: RunConfig, lr: float, control: SFTConfig) -> list:
    """Per start: the start, GRPO's ``MAP_SEEDS`` (not at the main start: the main run), and the
    continued-SFT control's."""
    jobs = []
    for s0 in map_starts:
        jobs.append(Job(s0, None, samples=4))
        if s0 != start:
            jobs += [Job(s0, replace(R, lr=lr, seed=s), samples=4) for s in MAP_SEEDS]
        jobs += [Job(s0, replace(control, seed=s + 1), samples=4) for s in MAP_SEEDS]
    return jobs


def _greedy(bits: str) -> np.ndarray:
    return np.array([int(c) for c in bits], dtype=float)


def _sampled(letters: str, n: int = EVAL_SAMPLES) -> np.ndarray:
    """(problems, n) 0/1 with each problem's count of right samples (their order is not stored;
    the mean over samples, all a paired lift reads, is exact)."""
    counts = np.array([ord(c) - ord("a") for c in letters])
    return (np.arange(n)[None, :] < counts[:, None]).astype(float)


def main_runs_from_results(path=None) -> tuple[dict, list[dict]]:
    """``(before, main_runs)``: the start's and the main run's seeds' per-problem test outcomes
    (``greedy`` (2000,), ``sampled`` (2000, 16)), from the results file chapter 9 writes."""
    path = path or DATA_DIR / "results" / "09_grpo_addition.json"
    o = json.loads(path.read_text())["addition"]["outcomes"]
    before = {"greedy": _greedy(o["start_greedy"]), "sampled": _sampled(o["start_sampled"])}
    runs = [{"greedy": _greedy(g), "sampled": _sampled(s)}
            for g, s in zip(o["grpo_greedy_per_seed"], o["grpo_sampled_per_seed"])]
    return before, runs


SWITCH_COSTS = DATA_DIR / "bench" / "09_switches.json"   # bench/bench_addition_switches.py


def retrain_cost(*files: str, costs=SWITCH_COSTS) -> str:
    """What a RETRAIN switch over the stored ``files`` (``lr_sweep``, ``sft/sft_run``, ...; the
    names under ``data/runs/09_addition/``) would cost, as a sentence: their runs and their CPU
    time, ``make bench``'s estimate from one run of each kind (``data/bench/09_switches.json``)."""
    if not files:
        raise ValueError("files must name at least one stored file, got none")
    costs = Path(costs)
    if not costs.is_file():
        raise FileNotFoundError(f"no {costs}: run python bench/bench_addition_switches.py")
    known = json.loads(costs.read_text())["files"]
    unknown = [f for f in files if f not in known]
    if unknown:
        raise ValueError(f"files: {unknown} are not in {costs.name}; it has {sorted(known)}")
    runs = sum(known[f]["jobs"] for f in files)
    minutes = sum(known[f]["estimate_cpu_s"] for f in files) / 60
    about = "under 1 CPU-minute" if minutes < 0.5 else \
        f"about {minutes:.0f} CPU-minute{'s' * (round(minutes) != 1)}"
    return (f"RETRAIN = True would train again {runs} run{'s' * (runs != 1)}, {about} (make "
            "bench's estimate)")


__all__ = ["SWITCH_COSTS", "retrain_cost", "ANNEAL_LENGTHS", "SFT_SEEDS", "UPDATE_SEEDS",
           "SNAPSHOT_RUN",
           "CELL_SEEDS", "ABLATIONS", "STRESS", "SEEDS5", "FRESH", "MAP_SEEDS", "anneal_configs",
           "sft_like_grpo", "updates", "grid_jobs", "across_jobs", "control_config",
           "ablation_jobs", "replication_jobs", "map_jobs", "main_runs_from_results"]
