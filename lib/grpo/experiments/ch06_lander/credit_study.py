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

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from grpo.pool import parallel_map
from grpo.files import json_ready
from grpo.runstore import command_line, cpu_timed, read_json, run_dir, write_json
from grpo.stats import SeedInterval, holm, over_seeds
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


def runs_of(study: dict, arm: str) -> list[dict]:
    """One arm's stored runs (``compact``'s records), in the study's seed order."""
    if arm not in study["arms"]:
        raise ValueError(f"arm must be one of {sorted(study['arms'])}, got {arm!r}")
    return [study["arms"][arm]["runs"][str(s)] for s in study["scale"]["seeds"]]


def training_cpu_s(study: dict) -> float:
    """The CPU seconds every stored run of the study took to train."""
    return sum(r["cpu_s"] for arm in study["arms"] for r in runs_of(study, arm))


@dataclass(frozen=True)
class ArmReading:
    """One arm of the stored study, its final policies flown on the held-out starts, over its
    seeds (``read_arms``)."""
    final_det: SeedInterval              # argmax return
    final_sampled: SeedInterval          # sampled return
    landed_det: float                    # share of the argmax flights that came to rest
    landed_sampled: float                # ... and of the sampled ones
    p_no_engine_legs_down: float | None  # sampled, at legs-down states (None: never down)
    explained_variance: float | None     # its critic's, median over updates (None: no critic)
    minus_outcome: SeedInterval | None   # argmax return minus outcome GRPO's, paired by seed
    holm_p: float | None                 # minus_outcome's p, Holm-adjusted over the other arms

    @property
    def lifts(self) -> bool:
        """Its argmax return is above outcome GRPO's, by a difference that survives Holm."""
        return self.minus_outcome is not None and self.minus_outcome.mean > 0 \
            and self.holm_p < 0.05

    def record(self) -> dict:
        """The results registry's entry for this arm."""
        out = {"final_det": self.final_det.mean, "final_det_ci95": list(self.final_det.ci95),
               "final_sampled": self.final_sampled.mean, "landed_det": self.landed_det,
               "landed_sampled": self.landed_sampled,
               "p_no_engine_legs_down": self.p_no_engine_legs_down,
               "explained_variance": self.explained_variance}
        if self.minus_outcome is not None:
            out.update(minus_outcome=self.minus_outcome.mean,
                       minus_outcome_ci95=list(self.minus_outcome.ci95), holm_p=self.holm_p)
        return out


def _mean_of_known(values) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def read_arms(study: dict) -> dict[str, ArmReading]:
    """Every arm of the stored ``study`` (ladder, then ablations), read over its seeds; each arm
    but outcome GRPO is compared with it, paired by seed, Holm-corrected over those arms."""
    order = [*study["ladder"], *study["ablations"]]
    if "outcome" not in order:
        raise ValueError(f"the study must hold the outcome arm, got {order}")

    def per_seed(arm, key):
        return np.array([r[key] for r in runs_of(study, arm)])

    compared = [a for a in order if a != "outcome"]
    minus = {a: over_seeds(per_seed(a, "final_det") - per_seed("outcome", "final_det"))
             for a in compared}
    adjusted = dict(zip(compared, holm([minus[a].p_value for a in compared])))
    readings = {}
    for arm in order:
        runs = runs_of(study, arm)
        landed = [float(np.mean([r["outcomes"][m]["landed"] for r in runs]))
                  for m in ("final_det", "final_sampled")]
        readings[arm] = ArmReading(
            over_seeds(per_seed(arm, "final_det")), over_seeds(per_seed(arm, "final_sampled")),
            landed[0], landed[1],
            _mean_of_known(r["sleep_gate"]["p_no_engine"] for r in runs),
            _mean_of_known(r["explained_variance_median"] for r in runs),
            minus.get(arm), float(adjusted[arm]) if arm in adjusted else None)
    return readings


def main(argv=None) -> None:
    """``python -m grpo.experiments.ch06_lander.credit_study --all`` (or some arms by name)."""
    command_line(MODULE, __doc__, lambda names, workers: run_study(tuple(names), workers=workers),
                 argv, registry=ARMS, workers=2)


if __name__ == "__main__":
    main()
