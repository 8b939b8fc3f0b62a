"""Chapter 6's stored study: what outcome GRPO's failure on LunarLander is made of.

Every arm trains on GRPO's own batches (B prompts x G episodes, the clip, k3 and Adam of
``train_lander_grpo``) and changes one thing:

    the credit-assignment ladder (only the advantage changes)
        outcome      the group's z-scored return on every step (the chapter's GRPO)
        value_time   the return-to-go minus a learned V(s, t): the critic sees the time, so the
                     1000-step limit is part of its state
        gae          PPO's credit: GAE(0.999, 0.98) from a learned V(s), the time limit
                     bootstrapped
        value_time_scaled, gae_scaled
                     the same two with the critic fitting target / 100: the returns are in the
                     hundreds, and a critic fitting them raw at lr 3e-4 learns only their mean
    one-flag ablations of outcome GRPO
        w1           every step weighs 1 instead of 1/L
        beta0        no k3 term
        no_std       R - mean, not divided by the group's std (Dr. GRPO)
        G4xB16       groups of 4 from 16 prompts: the same 64 episodes, four times the starts

3 seeds x 500,000 env steps per arm (the controls' budget in the chapter), more CPU than the
chapter's test budget can hold (each run's ``cpu_s`` is stored), so the runs are stored:
``python -m grpo.experiments.ch06_lander.credit_study --all`` (or ``make full``) writes
``data/runs/06_lander/credit.json``, the chapter reads it, and ``tests/test_stored_lander.py``
re-trains each arm's first iteration and checks it against the stored one.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from grpo.pool import parallel_map
from grpo.files import json_ready
from grpo.runstore import command_line, cpu_timed, read_json, run_dir, write_json
from grpo.lander import DIAGNOSTICS, LanderGRPOConfig, LanderResult, RunSpec, train

VALUE_SCALE = 100.0   # the size of the landing and crash rewards (+-100)
ARMS = {
    "outcome": LanderGRPOConfig(),
    "value_time": LanderGRPOConfig(baseline="value_time"),
    "gae": LanderGRPOConfig(baseline="gae"),
    "value_time_scaled": LanderGRPOConfig(baseline="value_time", value_scale=VALUE_SCALE),
    "gae_scaled": LanderGRPOConfig(baseline="gae", value_scale=VALUE_SCALE),
    "w1": LanderGRPOConfig(length_weights=False),
    "beta0": LanderGRPOConfig(beta=0.0),
    "no_std": LanderGRPOConfig(scale_by_std=False),
    "G4xB16": LanderGRPOConfig(group_size=4, prompts=16),
}
LADDER = ("outcome", "value_time", "gae", "value_time_scaled", "gae_scaled")
ABLATIONS = ("w1", "beta0", "no_std", "G4xB16")
SEEDS = (0, 1, 2)
SCALE = {"total_steps": 500_000, "eval_every": 100_000, "val_episodes": 16, "test_episodes": 50}
FIRST_ITERATIONS = 2          # diagnostics rows kept for the replay test
MODULE = "grpo.experiments.ch06_lander.credit_study"


def stored_path() -> Path:
    return run_dir("06_lander") / "credit.json"


def spec(arm: str, seed: int, **scale) -> RunSpec:
    """The RunSpec of one arm and seed (``scale`` overrides SCALE, e.g. for a short replay)."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {sorted(ARMS)}, got {arm!r}")
    cfg = ARMS[arm]
    return RunSpec(cfg.algo, seed, config=cfg, **{**SCALE, **scale})


def first_rows(diagnostics: dict, n: int = FIRST_ITERATIONS) -> list[dict]:
    """The first ``n`` iterations' diagnostics rows."""
    return [{k: diagnostics[k][i] for k in DIAGNOSTICS}
            for i in range(min(n, len(diagnostics["env_steps"])))]


def compact(run: LanderResult, cpu_s: float) -> dict:
    """What the chapter reads from one run: no weights, no curves beyond the validation one."""
    keep = ("env_steps", "iterations", "start_entropy", "visited_state_entropy", "sleep_gate",
            "outcomes", "kl_median", "clip_fraction_median", "clip_fraction_study_median",
            "approx_kl_median", "explained_variance_median", "group_return_std_median")
    out = {k: getattr(run, k) for k in keep}
    out.update({k: float(np.mean(getattr(run, key))) for k, key in (("det", "test_det"),
                                                           ("sampled", "test_sampled"),
                ("final_det", "final_det"), ("final_sampled", "final_sampled"))})
    out.update({"curve": {k: run.curve[k] for k in ("env_steps", "det", "sampled")},
                "first_iterations": first_rows(run.diagnostics), "cpu_s": round(cpu_s, 1)})
    return json_ready(out, nan_as_none=True)


def _timed_run(s: RunSpec) -> tuple:
    return cpu_timed(train, s)


def run_study(arms=tuple(ARMS), seeds=SEEDS, workers: int = 2, path: Path | None = None,
              **scale) -> Path:
    """Train every arm x seed in ``workers`` processes and write the stored file (``scale``
    overrides SCALE: the tests write a tiny study). Arms already stored at the same scale and
    seeds, and not in ``arms``, are kept."""
    specs = [(arm, seed) for arm in arms for seed in seeds]
    done = parallel_map(_timed_run, [spec(arm, seed, **scale) for arm, seed in specs], workers,
                        desc="06 study")
    path = Path(path or stored_path())
    scale_out = {**SCALE, **scale, "seeds": list(seeds)}
    kept = read_json(path, MODULE) if path.exists() else {}
    arms_out: dict = {a: v for a, v in kept.get("arms", {}).items()
                      if a in ARMS and a not in arms and kept.get("scale") == scale_out}
    for (arm, seed), (run, cpu_s) in zip(specs, done):
        arms_out.setdefault(arm, {"config": asdict(ARMS[arm]), "runs": {}})["runs"][str(seed)] = \
            compact(run, cpu_s)
    arms_out = {a: arms_out[a] for a in ARMS if a in arms_out}
    return write_json(path, {"scale": scale_out, "ladder": list(LADDER),
                             "ablations": list(ABLATIONS), "arms": arms_out})


def load_study(path: Path | None = None) -> dict:
    """The stored study, as ``run_study`` wrote it."""
    return read_json(Path(path or stored_path()), MODULE)


def main(argv=None) -> None:
    """``python -m grpo.experiments.ch06_lander.credit_study --all`` (or some arms by name)."""
    command_line(MODULE, __doc__, lambda names, workers: run_study(tuple(names), workers=workers),
                 argv, registry=ARMS, workers=2)


if __name__ == "__main__":
    main()
