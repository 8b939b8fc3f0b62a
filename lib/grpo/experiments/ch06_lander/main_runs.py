"""Chapter 6's fifteen main runs, stored: PPO, outcome GRPO, the V(s) control, process GRPO and A2C,
three seeds each.

Most of the chapter's CPU (the chapter states it, from each run's stored ``cpu_s``), and the same
bits on every run (a run is seeded by its spec alone), so the chapter reads them:
``python -m grpo.experiments.ch06_lander.main_runs`` (or ``make full``) writes
``data/runs/06_lander/main/``:

    runs.json     every run's result as ``train`` returns it, less its weights and per-episode
                  training returns (which the chapter does not read)
    weights.npz   each run's actors (float64, exactly as trained): the argmax- and sampled-chosen
                  checkpoints and the final policy, and PPO's and GRPO's periodic snapshots

``load_stored`` rebuilds the results ``run_and_store`` trained (``train`` of each spec), and
refuses a file written for other specs. ``tests/test_lander_main_runs.py`` re-trains each
algorithm's first iteration and checks it against the stored one.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from grpo.files import json_ready
from grpo.pool import parallel_map
from grpo.runstore import (command_line, cpu_timed, read_arrays, read_json, run_dir, write_arrays,
                           write_json_rows)
from grpo.lander import (A2C_CONFIG, TEST_SEED0, ActorCriticConfig, Evaluator, LanderGRPOConfig,
                         RunSpec, entropy_of, load_actor, policy_logits, result_from_fields, train)

SEEDS = (0, 1, 2)
EVAL_EVERY, VAL_EPISODES, TEST_EPISODES = 100_000, 16, 50
ENV_STEPS = {
    "ppo": 1_000_000,
    "grpo": 1_000_000,  # per run; the published study used 2,000,000
    "grpo_value": 500_000,
    "grpo_process": 500_000,
    "a2c": 500_000,
}
# measure_gradients logs the agreement of the first epoch's minibatch gradients; a unit test shows
# that it leaves a run bit-identical
CONFIGS = {
    "ppo": ActorCriticConfig(measure_gradients=True),
    "a2c": A2C_CONFIG,
    "grpo": LanderGRPOConfig(measure_gradients=True),
    "grpo_value": LanderGRPOConfig(baseline="value", measure_gradients=True),
    "grpo_process": LanderGRPOConfig(process=True, measure_gradients=True),
}
# each algorithm's name on the pages, in their figures' legends and tables (grpo.book.plots.COLORS)
ALGO_NAMES = {"ppo": "PPO", "grpo": "GRPO", "grpo_value": "GRPO, V(s) baseline",
         "grpo_process": "GRPO process", "a2c": "A2C"}
WEIGHTS = ("det_state", "sampled_state", "final_state")
SNAPSHOTS_KEPT = ("ppo", "grpo")   # periodic snapshots (env steps, weights): the 1M runs' only
DROPPED = WEIGHTS + ("snapshots", "critic_snapshots", "train_returns")


def specs() -> list[RunSpec]:
    """The chapter's fifteen runs, algorithm by algorithm, seed by seed."""
    return [RunSpec(algo, seed, ENV_STEPS[algo], EVAL_EVERY, VAL_EPISODES, TEST_EPISODES,
                    config=CONFIGS[algo])
            for algo in ENV_STEPS for seed in SEEDS]


MODULE = "grpo.experiments.ch06_lander.main_runs"


def stored_dir() -> Path:
    return run_dir("06_lander") / "main"


def _spec_record(s: RunSpec) -> dict:
    return {**asdict(s), "config": asdict(s.resolved_config())}


def _key(algo: str, seed: int, which: str) -> str:
    return f"{algo}/{seed}/{which}"


def store(results: list, runs: list, cpu_s: list, directory: Path | None = None) -> Path:
    """Write ``results`` (``train`` of each of ``runs``) and each run's CPU seconds."""
    if len(results) != len(runs) or len(cpu_s) != len(runs):
        raise ValueError(f"results, runs and cpu_s must have one entry per run, got "
                         f"{len(results)}, {len(runs)} and {len(cpu_s)}")
    directory = Path(directory or stored_dir())
    arrays, records = {}, []
    for run, cpu in zip(results, cpu_s):
        for which in WEIGHTS:
            for name, t in getattr(run, which).items():
                arrays[f"{_key(run.algo, run.seed, which)}/{name}"] = t.detach().cpu().numpy()
        snapshots = run.snapshots if run.algo in SNAPSHOTS_KEPT else []
        for steps, state in snapshots:
            for name, t in state.items():
                key = _key(run.algo, run.seed, f"snapshot_{steps}")
                arrays[f"{key}/{name}"] = t.detach().cpu().numpy()
        records.append({**{k: v for k, v in run.as_dict().items() if k not in DROPPED},
                        "snapshot_steps": [steps for steps, _ in snapshots],
                        "cpu_s": round(cpu, 1)})
    write_arrays(directory / "weights.npz", arrays)
    # compact JSON, one spec and one run a line (A2C's 12,500 iterations of logs are most of it)
    write_json_rows(directory / "runs.json", {"specs": [_spec_record(s) for s in runs],
                                              "runs": json_ready(records)},
                    compact=("specs", "runs"))
    return directory


def load_stored(runs: list | None = None, directory: Path | None = None) -> list:
    """The stored results, as ``train`` returned them for ``runs`` (weights as torch tensors;
    ``train_returns`` and ``critic_snapshots``, not stored, are ``None``); ``runs`` defaults to
    ``specs()`` and must be the ones the file was written for."""
    runs = specs() if runs is None else list(runs)
    directory = Path(directory or stored_dir())
    payload = read_json(directory / "runs.json", MODULE)
    if payload["specs"] != json_ready([_spec_record(s) for s in runs]):
        raise ValueError(f"runs must be the ones stored in {directory / 'runs.json'}: "
                         f"re-run `python -m {MODULE}` after changing them")
    arrays = read_arrays(directory / "weights.npz")

    def state(record, which):
        prefix = _key(record["algo"], record["seed"], which) + "/"
        return {k[len(prefix):]: torch.from_numpy(v) for k, v in arrays.items()
                if k.startswith(prefix)}

    results = []
    for record in payload["runs"]:
        run = {k: v for k, v in record.items() if k not in ("snapshot_steps", "cpu_s")}
        run.update({which: state(record, which) for which in WEIGHTS})
        run["snapshots"] = [(steps, state(record, f"snapshot_{steps}"))
                            for steps in record["snapshot_steps"]]
        run.update(train_returns=None, critic_snapshots=None)     # not stored
        results.append(result_from_fields(run))
    return results


def cpu_seconds(directory: Path | None = None) -> list[float]:
    """Each stored run's CPU seconds, in spec order."""
    directory = Path(directory or stored_dir())
    return [r["cpu_s"] for r in read_json(directory / "runs.json", MODULE)["runs"]]


def by_algo(results: list) -> dict:
    """The stored results grouped by algorithm, in ``ALGO_NAMES``' order, each list in seed
    order."""
    return {algo: [r for r in results if r.algo == algo] for algo in ALGO_NAMES}


def entropy_on_ppo_states(runs: dict) -> dict:
    """Each algorithm's final policies on one common state set, so that how sharp a policy is does
    not mix with where it flies: the mean entropy (nats) over the states PPO's final policies
    visit when they fly the held-out starts sampled, averaged over the algorithm's seeds. ``runs``
    maps each algorithm to its results (``by_algo``) and must hold PPO's."""
    if not runs.get("ppo"):
        raise ValueError(f"runs must hold PPO's results, got {sorted(runs)}")
    test_seeds = range(TEST_SEED0, TEST_SEED0 + TEST_EPISODES)
    states = np.concatenate([
        np.concatenate(Evaluator(test_seeds, rng_seed=r.seed)
                       .play(load_actor(r.final_state), greedy=False).obs)
        for r in runs["ppo"]])
    return {algo: float(np.mean([entropy_of(policy_logits(load_actor(r.final_state), states))
                                 .mean() for r in rs]))
            for algo, rs in runs.items()}


# The published study's four GRPO diagnostics, ranges over its seeds (lunarlander_grpo_port), and
# the keys of ``grpo.lander.summarize`` that hold ours: as the trainer counts it, and (where it
# differs) as SB3 and CleanRL count it, the way the study did
PUBLISHED_DIAGNOSTICS = {
    "start-state entropy (nats)": ((0.97, 1.21), "start_entropy_mean", None),
    "median KL to the reference": ((0.013, 0.019), "kl_median", None),
    "median clip fraction": ((0.028, 0.042), "clip_fraction_median", "clip_fraction_study_median"),
    "within-group return std": ((41, 82), "group_return_std_median", None),
}


def diagnostics_vs_published(grpo_summary: dict) -> dict:
    """Outcome GRPO's diagnostics (``summarize`` of its runs) beside the published ranges: for
    each, the range, ours, ours counted the study's way, and where that falls ("below",
    "inside" or "above" the range)."""
    out = {}
    for name, ((lo, hi), ours_key, study_key) in PUBLISHED_DIAGNOSTICS.items():
        ours = grpo_summary[ours_key]
        study_way = grpo_summary[study_key] if study_key else ours
        verdict = "below" if study_way < lo else "above" if study_way > hi else "inside"
        out[name] = {"published": [lo, hi], "ours": ours, "ours_study_definition": study_way,
                     "verdict": verdict}
    return out


def _timed_run(s: RunSpec) -> tuple:
    return cpu_timed(train, s)


def run_and_store(runs: list | None = None, workers: int = 2,
                  directory: Path | None = None) -> Path:
    """Train ``runs`` (default ``specs()``) in ``workers`` processes and store them."""
    runs = specs() if runs is None else list(runs)
    done = parallel_map(_timed_run, runs, workers, desc="06 main runs")
    return store([r for r, _ in done], runs, [c for _, c in done], directory)


def main(argv=None) -> None:
    command_line(MODULE, __doc__, run_and_store, argv, workers=2)


if __name__ == "__main__":
    main()
