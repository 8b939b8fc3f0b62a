"""Chapter 6's registry entries: one algorithm's per-seed runs summarised."""
from __future__ import annotations

import numpy as np

from .env import SOLVED
from .trainers import LanderResult, is_grpo

# GRPO's own logs (trainers.GRPOResult's fields) and its clip fraction, each a mean over the seeds
GRPO_MEANS = ("degenerate_fraction", "near_degenerate_fraction", "kl_median",
              "clip_fraction_median", "group_return_std_median")

# SB3's logs, each seed's median over its updates: what both families log, and PPO's entropy
SB3_MEDIANS = ("clip_fraction_study_median", "approx_kl_median", "explained_variance_median")

def summarize(runs) -> dict:
    """The registry entry of one algorithm from its per-seed runs (returns on the held-out seeds):
    ``train``'s results, or the stored ones. Each run is its family's dataclass
    (``trainers.result_type``), so what is read is there by type, never by asking."""
    runs = list(runs)
    if not runs:
        raise ValueError("runs must hold at least one run, got none")
    if not all(isinstance(r, LanderResult) for r in runs):
        raise ValueError("runs must be train's results (LanderResult), got "
                         f"{sorted({type(r).__name__ for r in runs})}")
    if len({r.algo for r in runs}) > 1:
        raise ValueError("runs must be one algorithm's, got "
                         f"{sorted({r.algo for r in runs})}")
    out = {}
    # det, sampled: the mode's own checkpoint
    for mode in ("det", "sampled", "final_det", "final_sampled"):
        key = f"test_{mode}" if mode in ("det", "sampled") else mode
        ret = np.array([getattr(r, key) for r in runs])
        out.update({f"{mode}_return_mean": float(ret.mean()),
                    f"{mode}_return_per_seed": ret.mean(1).tolist(),
                    f"{mode}_return_mean_minus_std": float(ret.mean() - ret.std()),
                    f"{mode}_solved_fraction": float((ret >= SOLVED).mean())})
    ends = ("landed", "crashed", "timed_out", "legs_down", "length", "main_engine")
    out["outcomes"] = {mode: {k: float(np.mean([r.outcomes[mode][k] for r in runs]))
                              for k in ends}
                       for mode in runs[0].outcomes}
    out.update({"start_entropy_mean": float(np.mean([r.start_entropy for r in runs])),
                "visited_state_entropy_mean":
                    float(np.mean([r.visited_state_entropy for r in runs])),
                "iterations": [r.iterations for r in runs],
                "adam_steps": [r.adam_steps for r in runs],
                "env_steps": int(round(np.mean([r.env_steps for r in runs]))),
                "env_steps_per_seed": [int(r.env_steps) for r in runs]})
    grpo = is_grpo(runs[0].algo)
    # the gradient probe: GRPO logs it with its diagnostics, PPO and A2C on their own
    probes = [r.diagnostics if grpo else r.gradient_agreement for r in runs]
    for k in ("grad_cosine", "grad_snr"):   # medians over every update that measured them
        v = np.concatenate([np.asarray(p[k], float) for p in probes])
        if np.isfinite(v).any():
            out[f"{k}_median"] = float(np.nanmedian(v))
    if grpo:
        for k in GRPO_MEANS:
            out[k] = float(np.mean([getattr(r, k) for r in runs]))
    # SB3's logs: each seed's median over its updates, averaged over the seeds (NaN: not logged)
    for k in SB3_MEDIANS if grpo else (*SB3_MEDIANS, "entropy_median"):
        per_seed = np.array([getattr(r, k) for r in runs], float)
        if np.isfinite(per_seed).any():
            out[k] = float(np.nanmean(per_seed))
    gates = [r.sleep_gate for r in runs]     # the final policy, sampled, at legs-down states
    out["sleep_gate"] = {"legs_down_states": int(sum(g["legs_down_states"] for g in gates)),
                         **{k: float(np.nanmean([g[k] for g in gates]))
                            if any(np.isfinite(g[k]) for g in gates) else float("nan")
                            for k in ("entropy", "p_no_engine", "p_quiet_run")}}
    return out
