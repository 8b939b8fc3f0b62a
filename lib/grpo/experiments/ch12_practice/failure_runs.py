"""Chapter 12's stored runs: the common ways GRPO fails, each cause and its fix shown by runs.

Two testbeds, both the book's own. Two-digit addition (chapter 9: GRPO lifts held-out accuracy
there in CPU-seconds a run) carries the grids that need many seeds; chapter 7's small GPT
on word problems carries the one question whose answers must vary in length (loss aggregation).
Seeds are fixed here, before running.

    addition grids (``grids``, read and written by ``grpo.runstore.addition_jobs.stored_jobs``, one
    file each in ``data/runs/12_practice/``), from chapter 9's stored SFT run (its weights at the
    starts, read from ``data/runs/09_addition/sft/``):
        lr_ladder      the recipe at lr 1e-6 (DeepSeekMath's RL rate) up to 1e-2
        truncation     the recipe with a 4-token budget, which cuts every three-digit sum's answer
        dynamic        from early in the SFT run, where most groups are all wrong: plain against
                       DAPO's refill
        ratio_level    K = 4 steps per batch (TRL's num_iterations): token against sequence ratios,
                       the latter also at GSPO's clip range
    word problems (``aggregation_runs``, ``data/runs/12_practice/aggregation.json``):
        the three loss aggregations TRL's ``loss_type`` selects ("grpo", "dapo", "dr_grpo"),
        and, per run, the token length and verdict of 4 samples on 200 held-out problems

``python -m grpo.experiments.ch12_practice.failure_runs`` re-stores them all (CPU-minutes; the
README's ``make full`` row gives the measured total; ``GRPO_STORE=1`` is set for it). The chapter
reads them; a reader who edits a grid's jobs runs them into ``scratch/runs/12_practice/``
instead.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import torch

from grpo import checks
from grpo.lm.addition import addition_tokenizer
from grpo.lm.data import PROTOCOL, encode_problem
from grpo.lm.eval import EvalConfig
from grpo.lm.grpo import LossOptions, grpo_loss
from grpo.lm.model import Sampling, sample
from grpo.lm.rl import RunConfig, train_lm_grpo
from grpo.lm.verifier import reward
from grpo.pool import parallel_map
from grpo.seeding import seeded_generator
from grpo.stats import over_seeds, paired_lift
from grpo.runstore import (STORE_ENV, command_line, cpu_timed, read_json, run_dir,
                           without_timings, writable, write_json)
from grpo.runstore.addition_jobs import (GRPO_RECIPE, LEVELS, SFT_RUN, Job, stored_jobs,
                                         stored_sft_run)

MODULE = "grpo.experiments.ch12_practice.failure_runs"
RUN_FOLDER = run_dir("12_practice")
READER = f"python -m {MODULE}"
SEEDS = (0, 1, 2)

# Addition: chapter 9's stored SFT run and its recipe, read from the run store. START is chapter 9's
# start (the first check at validation greedy >= 0.36); LOW its first kept check, where most groups
# are all wrong.
R = GRPO_RECIPE
LRS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
SHORT_BUDGET = 4          # '####', '▁' and two digits: a three-digit sum's answer is cut
REUSE = 4                 # K optimizer steps per sampled batch, TRL's num_iterations
# The ratio arms: token ratios, sequence ratios at the same clip, and at GSPO's own clip range
# (Zheng et al. 2025 clip the sequence ratio at 1 - 3e-4 and 1 + 4e-4).
RATIO_ARMS = {"token": ("token", {}), "sequence": ("sequence", {}),
              "sequence, GSPO's clip": ("sequence", {"eps_low": 3e-4, "eps_high": 4e-4})}
SAMPLES = 4               # sampled test outcomes per problem


def addition_starts(retrain: bool = False) -> tuple[dict, dict, int, int]:
    """Chapter 9's stored SFT run: ``(val_greedy, starts, START, LOW)``, validation greedy accuracy
    by SFT step, the weights at each level's first check, and the two starts used here."""
    history, starts = stored_sft_run("sft_run", SFT_RUN, LEVELS, addition_tokenizer(),
                                     retrain=retrain)
    val_greedy = dict(zip(history["eval_step"], history["eval_greedy"]))
    start = next(step for step, g in val_greedy.items() if g >= 0.36)
    low = min(starts)
    return val_greedy, starts, start, low


def grids(start: int, low: int) -> dict:
    """The addition grids by name, as lists of ``Job`` (the start itself first)."""
    def job(s, cfg):
        return Job(s, cfg, samples=SAMPLES)
    return {
        "lr_ladder": [job(start, None)] + [job(start, replace(R, lr=lr, seed=s))
                                           for lr in LRS for s in SEEDS],
        "truncation": [job(start, replace(R, max_new_tokens=budget, seed=s))
                       for budget in (SHORT_BUDGET, R.max_new_tokens) for s in SEEDS],
        "dynamic": [job(low, None)] + [job(low, replace(R, dynamic_sampling=dyn, seed=s))
                                        for dyn in (False, True) for s in SEEDS],
        "ratio_level": [job(start, replace(R, reuse=REUSE, seed=s, ratio_level=level, **clip))
                        for level, clip in RATIO_ARMS.values() for s in SEEDS],
    }


def stored_grid(name: str, jobs, starts: dict, retrain: bool = False) -> list[dict]:
    """One grid's outputs (``run_jobs``), from ``data/runs/12_practice/<name>.json``."""
    return stored_jobs(name, jobs, starts, addition_tokenizer(), folder=RUN_FOLDER, reader=READER,
                       retrain=retrain)


# Word problems: chapter 8's recipe at half its batch and at chapter 10's largest rate (3e-4), so
# that 40 iterations move the model; one aggregation per run.
AGGREGATIONS = {"grpo": "sequence", "dapo": "token", "dr_grpo": "constant"}   # TRL's loss_type
WORD = RunConfig(iterations=40, prompts=16, G=8, lr=3e-4, temperature=0.7, beta=0.04,
                 evaluation=EvalConfig(every=10_000, problems=1, samples=1, at_start=False))
LENGTH_PROBLEMS, LENGTH_SAMPLES, LENGTH_SEED = 200, 4, 4321


def lengths_and_verdicts(model, tok, problems, n: int, seed: int, max_new_tokens: int = 96):
    """``n`` samples of each problem at T 0.7: ``(lengths, right)``, two (problems, n) int arrays,
    each completion's token count (its <eos> included) and the verifier's 0/1."""
    prompts = [encode_problem(tok, p)[0] for p in problems]
    tokens, _, mask = sample(model, prompts, Sampling(n, max_new_tokens, 0.7),
                             seeded_generator(seed), eos_id=tok.eos_id)
    texts = [tok.decode(t[m].tolist()) for t, m in zip(tokens, mask)]
    right = [int(reward(x, problems[i // n]["answer"])) for i, x in enumerate(texts)]
    return (mask.sum(1).reshape(-1, n).numpy().astype(int),
            np.array(right, dtype=int).reshape(-1, n))


def _aggregation_job(job) -> dict:
    """One word-problem run, ``job = (loss_type, seed)``: GRPO (a loss_type of None: none, the start
    itself), then the held-out lengths and verdicts."""
    from grpo.runstore.models import load_sft
    loss_type, seed = job
    torch.set_num_threads(1)
    model, tok = load_sft()
    train, test = PROTOCOL.splits()
    out = {"loss_type": loss_type, "seed": seed}
    if loss_type is not None:
        cfg = replace(WORD, aggregation=AGGREGATIONS[loss_type], seed=seed)
        run, cpu = cpu_timed(train_lm_grpo, model, tok, train, test, cfg)
        out.update(cpu_s=cpu, log=without_timings(run["log"]))
    lengths, right = lengths_and_verdicts(model.eval(), tok, PROTOCOL.held_out(LENGTH_PROBLEMS),
                                          LENGTH_SAMPLES, LENGTH_SEED)
    out.update(lengths=lengths.tolist(), right=right.tolist())
    return out


def aggregation_jobs() -> list[tuple]:
    return [(None, 0)] + [(t, s) for t in AGGREGATIONS for s in SEEDS]


def aggregation_runs(retrain: bool = False, workers: int = 2) -> list[dict]:
    """The word-problem runs, read from ``data/runs/12_practice/aggregation.json`` when it holds
    these jobs (or from its scratch twin), else run and written to ``runstore.writable``."""
    checks.boolean("retrain", retrain)
    path = RUN_FOLDER / "aggregation.json"
    keys = {"config": repr(WORD), "jobs": [list(j) for j in aggregation_jobs()],
            "held_out": [LENGTH_PROBLEMS, LENGTH_SAMPLES, LENGTH_SEED]}
    for candidate in () if retrain else dict.fromkeys([path, writable(path)]):
        if candidate.is_file():
            stored = read_json(candidate, MODULE)
            if stored["keys"] == keys:
                return stored["runs"]
    runs = parallel_map(_aggregation_job, aggregation_jobs(), workers, desc="aggregation runs")
    write_json(writable(path), {"keys": keys, "runs": runs}, indent=0)
    return read_json(writable(path), MODULE)["runs"]


def loss_at_ratio_one(advantage: str = "trl") -> dict:
    """The loss each of TRL's loss types logs before anything is learned (every ratio 1), on one
    group of two answers: a right one of 10 tokens and a wrong one of 50."""
    lengths = torch.tensor([10, 50])
    mask = (torch.arange(50) < lengths[:, None]).double()       # 2 answers, 10 and 50 tokens
    logp = torch.zeros(2, 50, dtype=torch.float64)              # rho = 1 on every token
    rewards = torch.tensor([[1.0, 0.0]], dtype=torch.float64)   # the first answer right
    options = {t: LossOptions(advantage=advantage, beta=0.0, aggregation=a)
               for t, a in AGGREGATIONS.items()}
    return {t: grpo_loss(logp, logp, None, mask, rewards, o, max_tokens=50)[0].item()
            for t, o in options.items()}


class AggregationReadings(NamedTuple):
    """What chapter 12 and its lab notes read from ``aggregation_runs()``."""
    wrong_start: float          # the start's wrong answers: mean length in tokens
    wrong: dict                 # loss type -> each seed's wrong answers' mean length
    accuracy_lift: dict         # loss type -> its seeds' paired lift in accuracy over the start
    minus_grpo: dict            # "dapo", "dr_grpo" -> wrong-answer length minus grpo's, over seeds


def wrong_answer_length(run: dict) -> float:
    """The mean length, in tokens, of a run's wrong sampled answers."""
    lengths, right = np.array(run["lengths"]), np.array(run["right"])
    return float(lengths[right == 0].mean())


def aggregation_readings(runs: list[dict]) -> AggregationReadings:
    """``aggregation_runs()``'s start (its first run) against each loss type's seeds: the wrong
    answers' lengths, accuracy (each problem's share of right samples) paired with the start,
    and DAPO's and Dr. GRPO's wrong-answer lengths minus GRPO's, seed by seed."""
    if not runs or runs[0]["loss_type"] is not None:
        raise ValueError("runs must be aggregation_runs()'s list, the start (loss_type None) first")
    start = runs[0]
    by_type = {t: [r for r in runs[1:] if r["loss_type"] == t] for t in AGGREGATIONS}
    wrong = {t: [wrong_answer_length(r) for r in rs] for t, rs in by_type.items()}

    def accuracy(r):
        return np.array(r["right"]).mean(1)

    lift = {t: paired_lift(accuracy(start), np.stack([accuracy(r) for r in rs]))
            for t, rs in by_type.items()}
    minus = {t: over_seeds(np.subtract(wrong[t], wrong["grpo"])) for t in ("dapo", "dr_grpo")}
    return AggregationReadings(wrong_answer_length(start), wrong, lift, minus)


def store_all(workers: int = 2) -> list:
    """Every stored run of chapter 12, again, into ``data/runs/12_practice/``."""
    os.environ[STORE_ENV] = "1"
    _, starts, start, low = addition_starts()
    for name, jobs in grids(start, low).items():
        stored_grid(name, jobs, starts, retrain=True)
    aggregation_runs(retrain=True, workers=workers)
    return sorted(RUN_FOLDER.glob("*.json"))


def main(argv=None) -> None:
    command_line(MODULE, __doc__, store_all, argv, workers=2)


if __name__ == "__main__":
    main()
