"""Chapter 8's main runs, stored: GRPO from chapter 7's checkpoint (two seeds), the continued-SFT
control at one GRPO run's CPU, and the checkpoint's own evaluation (a run of zero iterations).

Nearly all of the chapter's CPU (each job's ``cpu_s`` is stored; the chapter states it), and the
same bits on every run and every CPU (a job is seeded by its config alone, and the small model
computes in float64), so the chapter reads them:
``python -m grpo.experiments.ch08_grpo_math.main_runs`` (or ``make full``) writes
``data/runs/08_grpo_math/main/``:

    runs.json                 each job's config and result as ``models.run_from_sft`` returns it:
                              logs and evaluations in full precision, per-problem outcomes as 0/1
                              strings, and each job's CPU seconds
    grpo_seed0.safetensors    the first main run's final weights (float64, exactly as trained),
                              which the chapter's before-and-after examples decode from

``load_stored`` rebuilds what ``models.run_from_sft`` returned for each of ``jobs()``, and refuses
a file written for other jobs. ``tests/test_lm_main_runs.py`` re-runs each GRPO seed's first
iterations and the control's first SFT steps against the stored logs, and re-scores held-out
problems from the stored weights.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from grpo.files import json_ready
from grpo.lm.data import HELD_OUT, PROTOCOL
from grpo.lm.eval import EvalConfig, lift_by_chain
from grpo.lm.rl import RunConfig
from grpo.runstore.models import run_from_sft
from grpo.lm.train import SFTConfig
from grpo.pool import parallel_map
from grpo.stats import Lift, paired_lift
from grpo.runstore import (bits, command_line, cpu_timed, read_json, read_weights, run_dir, unbits,
                           write_json_rows, write_weights)

MODULE = "grpo.experiments.ch08_grpo_math.main_runs"

MAIN = RunConfig(
    iterations=40,
    prompts=32,
    G=8,
    lr=5e-5,
    temperature=0.7,
    beta=0.04,
    evaluation=EvalConfig(every=20, at_start=False, final_samples=8, held_out=HELD_OUT),
)
SEEDS = (0, 1)
# One GRPO run's CPU in SFT steps: a GRPO iteration's and an SFT step's CPU-seconds as make bench
# measured them when the runs were stored (data/bench/08_grpo_loop.json, 2026-12-03), fixed here so
# that a later make bench changes no stored job.
SFT_BASIS = {"iteration_cpu_s": 7.430, "sft_step_cpu_s": 0.5331}
SFT_STEPS = round(MAIN.iterations * SFT_BASIS["iteration_cpu_s"] / SFT_BASIS["sft_step_cpu_s"])
# Chapter 7's SFT loop, on a fresh cosine schedule from a tenth of its peak lr, another data order.
CONTINUED_SFT = SFTConfig(
    steps=SFT_STEPS,
    batch_size=32,
    lr=3e-4,
    warmup=20,
    eval_every=SFT_STEPS,
    eval_problems=200,
    seed=1,
)
# Zero iterations: chapter 7's checkpoint evaluated (and sampled 8 times a problem for pass@k).
BASELINE = replace(MAIN, iterations=0,
                   evaluation=replace(MAIN.evaluation, at_start=True, held_out=0))
WORKERS = 3  # three processes on two cores: the three long jobs run side by side
WEIGHTS = "grpo_seed0.safetensors"


def jobs(main: RunConfig = MAIN) -> list:
    """The stored jobs, longest first: GRPO seed by seed, the continued SFT, the baseline. A
    ``main`` other than ``MAIN`` (a reader's edit) gives jobs the stored file does not hold:
    ``load_stored`` refuses them, and ``run_and_store`` runs them."""
    return [replace(main, seed=s) for s in SEEDS] + [CONTINUED_SFT, BASELINE]


def stored_dir() -> Path:
    return run_dir("08_grpo_math") / "main"


def _job_record(cfg) -> dict:
    return {"kind": type(cfg).__name__, **json_ready(asdict(cfg))}


def _outcomes_record(o: dict) -> dict:
    return {
        "greedy": bits(o["greedy"]),
        "sampled": bits(o["sampled"]),
        "samples": o["sampled"].shape[1],
    }


def _outcomes_array(r: dict) -> dict:
    return {"greedy": unbits(r["greedy"]), "sampled": unbits(r["sampled"], r["samples"])}


def _record(result: dict) -> dict:
    out = {
        k: json_ready(v)
        for k, v in result.items()
        if k not in ("state", "held_out", "final_correct")
    }
    if "held_out" in result:
        out["held_out"] = _outcomes_record(result["held_out"])
    if "final_correct" in result:
        fc = np.asarray(result["final_correct"])
        out["final_correct"] = {"bits": bits(fc), "samples": fc.shape[1]}
    return out


def _result(record: dict) -> dict:
    out = {k: v for k, v in record.items() if k not in ("held_out", "final_correct", "cpu_s")}
    if "held_out" in record:
        out["held_out"] = _outcomes_array(record["held_out"])
    if "final_correct" in record:
        out["final_correct"] = unbits(
            record["final_correct"]["bits"], record["final_correct"]["samples"]
        )
    return out


def store(results: list, runs: list, cpu_s: list, directory: Path | None = None) -> Path:
    """Write ``results`` (``models.run_from_sft`` of each of ``runs``), each job's CPU seconds, and
    the first GRPO run's final weights."""
    if len(results) != len(runs) or len(cpu_s) != len(runs):
        raise ValueError(
            f"results, runs and cpu_s must have one entry per job, got "
            f"{len(results)}, {len(runs)} and {len(cpu_s)}"
        )
    if not isinstance(runs[0], RunConfig) or "state" not in results[0]:
        raise ValueError("runs[0] must be a GRPO run (a RunConfig) whose weights are stored")
    directory = Path(directory or stored_dir())
    write_weights(directory / WEIGHTS, results[0]["state"])
    records = [{**_record(r), "cpu_s": round(c, 1)} for r, c in zip(results, cpu_s)]
    write_json_rows(directory / "runs.json",
                    {"jobs": [_job_record(j) for j in runs], "runs": records},
                    compact=("runs",))
    return directory


def load_stored(runs: list | None = None, directory: Path | None = None) -> list:
    """The stored results, as ``models.run_from_sft`` returned them (outcomes as 0/1 float
    arrays; the first run's ``state`` as float64 tensors); ``runs`` defaults to ``jobs()``
    and must be the ones the file was written for."""
    runs = jobs() if runs is None else list(runs)
    directory = Path(directory or stored_dir())
    payload = read_json(directory / "runs.json", MODULE)
    if payload["jobs"] != [_job_record(j) for j in runs]:
        raise ValueError(
            f"runs must be the ones stored in {directory / 'runs.json'}: "
            f"re-run `python -m {MODULE}` after changing them"
        )
    results = [_result(r) for r in payload["runs"]]
    results[0]["state"] = read_weights(directory / WEIGHTS)
    return results


def cpu_seconds(directory: Path | None = None) -> list[float]:
    """Each stored job's CPU seconds, in job order."""
    directory = Path(directory or stored_dir())
    return [r["cpu_s"] for r in read_json(directory / "runs.json", MODULE)["runs"]]


class MainLifts(NamedTuple):
    """The chapter's lifts over the start, on the held-out problems."""
    grpo: Lift                  # greedy, GRPO's seeds
    grpo_sampled: Lift          # sampled (each problem's mean over its samples), GRPO's seeds
    continued: Lift             # greedy, the continued-SFT control (one run: over problems)
    continued_sampled: Lift     # sampled, the continued-SFT control


def main_lifts(start_greedy, start_sampled, runs: list, continued: dict) -> MainLifts:
    """GRPO's seeds and the continued-SFT control against the start, greedy and sampled, paired
    problem by problem (``paired_lift``)."""
    return MainLifts(
        paired_lift(start_greedy, [r["held_out"]["greedy"] for r in runs]),
        paired_lift(start_sampled, [r["held_out"]["sampled"].mean(1) for r in runs]),
        paired_lift(start_greedy, continued["held_out"]["greedy"]),
        paired_lift(start_sampled, continued["held_out"]["sampled"].mean(1)))


def chain_lifts(start: np.ndarray, runs: list, continued: dict) -> dict:
    """GRPO's seeds and the continued-SFT control, each against the start's held-out greedy
    outcomes, on the new-chain problems and on the rest (``lift_by_chain``, chains resampled)."""
    held, train = PROTOCOL.held_out(HELD_OUT), PROTOCOL.splits()[0]
    return {"GRPO, both seeds": lift_by_chain(start, [r["held_out"]["greedy"] for r in runs], held,
                                              train),
            "continued SFT, same CPU": lift_by_chain(start, continued["held_out"]["greedy"], held,
                                                     train)}


def _timed_job(job_and_held_out) -> tuple:
    return cpu_timed(run_from_sft, *job_and_held_out)


def run_and_store(
    runs: list | None = None, workers: int = WORKERS, directory: Path | None = None
) -> Path:
    """Run ``runs`` (default ``jobs()``) in ``workers`` processes, each by ``models.run_from_sft``
    (the SFT control scored on ``HELD_OUT`` problems), and store them."""
    runs = jobs() if runs is None else list(runs)
    done = parallel_map(_timed_job, [(j, HELD_OUT) for j in runs], workers,
                        desc="08 main runs")
    return store([r for r, _ in done], runs, [c for _, c in done], directory)


def main(argv=None) -> None:
    command_line(MODULE, __doc__, run_and_store, argv, workers=WORKERS)


__all__ = [
    "MAIN",
    "SEEDS",
    "CONTINUED_SFT",
    "BASELINE",
    "jobs",
    "load_stored",
    "store",
    "run_and_store",
    "cpu_seconds",
]

if __name__ == "__main__":
    main()
