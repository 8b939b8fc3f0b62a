"""Chapter 6's stored gradient-noise study: how much of one batch's gradient is signal.

The trainers' own measure (``gradient_agreement``) compares the M minibatch gradients of *one*
batch. Its signal-to-noise ratio is 1/(M - 1) when the batch gradient is pure noise, and it counts
noise shared by a batch's steps (one episode's steps move together) as signal. Here the policy is
frozen at checkpoints of a training run, and K batches are drawn from it independently, each as its
trainer draws one (GRPO: B fresh starts flown G times; PPO: a rollout of n_envs x n_steps after one
rollout of burn-in, from a fresh collector). Each batch's full-batch actor gradient g_k is the
gradient of its trainer's loss at the first step of an update (pi = pi_old = pi_ref, so the clip and
k3 do not act; PPO keeps its entropy bonus), computed in closed form as the trainers do. Then

    noise   = sum_k |g_k - g_bar|^2 / (K - 1)   one batch gradient's variance (covariance trace)
    signal  = |g_bar|^2 - noise / K             an unbiased estimate of |E g|^2 (can come out < 0)
    snr     = signal / noise                    ~ 1: a batch's gradient is as much signal as noise
    cosine  = the mean cosine between two of the K batch gradients
              (independent batches: > 0 only from signal)

with 95% delete-one jackknife intervals over the K batches (``jackknife``).

Methods: PPO, outcome GRPO, and GRPO with the learned critics the chapter's controls use (a V(s)
baseline, GAE from V(s), and GAE from a V(s) that fits target / 100, the ladder's critic that
learns), each trained for one seed to 500k env steps with the chapter's settings; the checkpoints
are the evaluations at 100k, 300k and 500k. The results are stored:
``python -m grpo.experiments.ch06_lander.gradient_noise --all`` (and ``make full``) writes
``data/runs/06_lander/gradient_noise.json`` (naming some methods instead of ``--all`` re-measures
those and keeps the rest), the chapter reads it, and ``tests/test_lander_noise.py`` re-computes
one batch gradient and checks it against the stored one.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from grpo.mlp import FlatMLP
from grpo.objectives import action_logprobs
from grpo.pool import parallel_map
from grpo.runstore import command_line, cpu_timed, read_json, run_dir, write_json
from grpo.stats import interval_p_value, t975
from grpo.lander import (LEARNED_BASELINES, OBS_DIM, ActorCriticConfig, LanderGRPOConfig, RunSpec,
                         StepCollector, episode_advantages, gae_targets, group_batch,
                         grpo_loss_grad, make_actor, make_critic, make_envs, normalize_advantages,
                         play_groups, ppo_loss_grad, train)

METHODS = {
    "ppo": ActorCriticConfig(),
    "grpo": LanderGRPOConfig(),
    "grpo_value": LanderGRPOConfig(baseline="value"),
    "grpo_gae": LanderGRPOConfig(baseline="gae"),
    # the critic that learns
    "grpo_gae_scaled": LanderGRPOConfig(baseline="gae", value_scale=100.0),
}
# each method's name on the pages
METHOD_NAMES = {"ppo": "PPO", "grpo": "outcome GRPO", "grpo_value": "GRPO, V(s) baseline",
         "grpo_gae": "GRPO, GAE from V(s)", "grpo_gae_scaled": "GRPO, GAE, V fits target / 100"}
CHECKPOINTS = (100_000, 300_000, 500_000)
BATCHES = 8                      # K independent batches per checkpoint
SEED = 0                         # the training run the checkpoints come from
SCALE = {"total_steps": 500_000, "eval_every": 100_000, "val_episodes": 16, "test_episodes": 50}
MODULE = "grpo.experiments.ch06_lander.gradient_noise"


def stored_path() -> Path:
    return run_dir("06_lander") / "gradient_noise.json"


def _load(cfg, actor_state, critic_flat):
    """The frozen actor (as a FlatMLP) and, for a method with a critic, its critic."""
    actor = make_actor(SEED)
    actor.load_state_dict(actor_state)
    vf = None
    if critic_flat is not None:
        n_in = OBS_DIM + (getattr(cfg, "baseline", "") == "value_time")
        vf = FlatMLP(make_critic(SEED, n_in))
        vf.flat[:] = critic_flat
    return actor, FlatMLP(actor), vf


def batch_gradient(cfg, actor_state, critic_flat,
                   rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """One independent batch drawn as ``cfg``'s trainer draws it, and the actor's full-batch
    gradient of that trainer's loss at the update's first step; also the batch's env steps."""
    actor, pi, vf = _load(cfg, actor_state, critic_flat)
    if isinstance(cfg, LanderGRPOConfig):
        ep = play_groups(make_envs(cfg.group_size * cfg.prompts), cfg.prompts, cfg.group_size,
                         actor, rng)
        b = group_batch(ep, episode_advantages(cfg, ep, vf)[0], cfg.length_weights, pi, pi)
        act = b.act                     # at the update's first step pi = pi_old = pi_ref
        d_logits = grpo_loss_grad(pi.forward(b.obs), act, b.logp_old, b.logp_ref, b.adv, b.w,
                                  cfg.clip, cfg.beta).d_logits
    else:
        collector = StepCollector(cfg.n_envs, rng)
        # burn-in: episodes under way, as in training
        collector.collect(actor, cfg.n_steps)
        s = collector.collect(actor, cfg.n_steps)
        _, adv, _ = gae_targets(s, vf, cfg.gamma, cfg.lam)
        adv = adv.reshape(-1)
        if cfg.normalize_adv:
            adv = normalize_advantages(adv)
        obs, act = s.obs.reshape(-1, OBS_DIM), s.actions.reshape(-1)
        logits = pi.forward(obs)
        logp = action_logprobs(logits, act)
        d_logits, _ = ppo_loss_grad(logits, act, logp, adv, cfg.clip, cfg.ent_coef)
    pi.backward(d_logits)
    return pi.grad.copy(), len(act)


def noise_measures(grads) -> dict:
    """Signal and noise of K independent batch gradients
    (a (K, P) array); see the module docstring."""
    g = np.asarray(grads, dtype=float)
    if g.ndim != 2 or g.shape[0] < 2 or not np.isfinite(g).all():
        raise ValueError(f"grads must be a finite (K >= 2, P) array, got shape {g.shape}")
    K, mean = len(g), g.mean(0)
    noise = float(np.sum((g - mean) ** 2) / (K - 1))
    signal = float(np.sum(mean ** 2) - noise / K)
    unit = g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-30)
    cosine = float((np.sum(unit.sum(0) ** 2) - K) / (K * (K - 1)))
    return {"mean_norm": float(np.linalg.norm(g, axis=1).mean()), "noise": noise, "signal": signal,
            "snr": signal / noise if noise > 0 else float("inf"), "cosine": cosine}


def jackknife(grads) -> dict:
    """95% intervals of ``noise_measures``' snr and cosine by the delete-one jackknife: the estimate
    +- t(0.975, K - 1) x SE, SE^2 = (K - 1)/K x sum_i (theta_(-i) - mean_j theta_(-j))^2. (A
    percentile bootstrap over so few batches understates the noise: a resample repeats batches, so
    its spread shrinks, and every resampled SNR lands above the estimate.)"""
    g = np.asarray(grads, dtype=float)
    if len(g) < 3:
        raise ValueError(f"the jackknife needs K >= 3 batch gradients, got {len(g)}")
    K, out = len(g), {}
    leave_one_out = [noise_measures(np.delete(g, i, axis=0)) for i in range(K)]
    full = noise_measures(g)
    for k in ("snr", "cosine"):
        theta = np.array([m[k] for m in leave_one_out])
        se = math.sqrt((K - 1) / K * np.sum((theta - theta.mean()) ** 2))
        out[f"{k}_ci95"] = [full[k] - t975(K - 1) * se, full[k] + t975(K - 1) * se]
    return out


def snr_difference(a: dict, b: dict, key: str = "snr") -> dict:
    """``a[key] - b[key]`` for two measured checkpoints (``measure_gradient_noise``'s rows), with a
    95% interval from their jackknife standard errors (each half-width / t(0.975, K - 1), combined
    in quadrature, times the same t) and the two-sided t-test p-value on K - 1 dof that the interval
    inverts, for ``stats.holm``."""
    K = len(a["grad_norms"])
    se = [(c[f"{key}_ci95"][1] - c[f"{key}_ci95"][0]) / 2 / t975(K - 1) for c in (a, b)]
    diff, half = a[key] - b[key], t975(K - 1) * math.hypot(*se)
    ci95 = [diff - half, diff + half]
    return {"diff": diff, "ci95": ci95, "p_value": interval_p_value(diff, 0.0, half, K - 1)}


def _checkpoint(snapshots, steps: int):
    """The first snapshot at or past ``steps`` env steps: (its env steps, its weights)."""
    return next((s, w) for s, w in snapshots if s >= steps)


def measure_gradient_noise(method: str) -> dict:
    """Train ``method`` (seed ``SEED``, ``SCALE``), then at each checkpoint K batch gradients."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    cfg = METHODS[method]
    run, train_cpu = cpu_timed(train, RunSpec(cfg.algo, SEED, config=cfg, **SCALE))
    has_critic = not isinstance(cfg, LanderGRPOConfig) or cfg.baseline in LEARNED_BASELINES
    out = {"method": method, "algo": cfg.algo, "train_cpu_s": round(train_cpu, 1),
           "checkpoints": []}
    for target in CHECKPOINTS:
        steps, actor_state = _checkpoint(run.snapshots, target)
        critic = _checkpoint(run.critic_snapshots, target)[1] if has_critic else None
        draws, cpu_s = cpu_timed(_batch_gradients, cfg, actor_state, critic, steps)
        grads = np.stack([g for g, _ in draws])
        out["checkpoints"].append({"env_steps": steps, "batch_steps": [n for _, n in draws],
                                   "grad_norms": np.linalg.norm(grads, axis=1).tolist(),
                                   **noise_measures(grads), **jackknife(grads),
                                   "cpu_s": round(cpu_s, 1)})
    return out


def _batch_gradients(cfg, actor_state, critic_flat, steps: int) -> list:
    """``BATCHES`` independent batch gradients at the checkpoint ``steps`` env steps in."""
    return [batch_gradient(cfg, actor_state, critic_flat, np.random.default_rng([SEED, steps, k]))
            for k in range(BATCHES)]


def run_noise_study(workers: int = 2, methods=tuple(METHODS), kept: dict | None = None) -> dict:
    """``methods`` (default all), in ``workers`` spawned processes, with ``kept``'s other methods
    (a stored study's ``"methods"``); JSON-ready."""
    results = parallel_map(measure_gradient_noise, list(methods), workers, desc="gradient noise")
    measured = {**(kept or {}), **{r["method"]: r for r in results}}
    return {"methods": {m: measured[m] for m in METHODS if m in measured},
            "scale": {**SCALE, "seed": SEED, "checkpoints": list(CHECKPOINTS), "batches": BATCHES,
                      "interval": "delete-one jackknife, t on K - 1 dof"}}


def load_study(path: Path | None = None) -> dict:
    return read_json(path or stored_path(), MODULE)


def measure_and_store(names, workers: int = 2) -> Path:
    """Measure ``names`` (methods) and store them with the stored study's other methods."""
    path = stored_path()
    kept = load_study(path)["methods"] if path.is_file() and list(names) != list(METHODS) else None
    return write_json(path, run_noise_study(workers, tuple(names), kept), sort_keys=True)


def main(argv=None) -> None:
    """``python -m grpo.experiments.ch06_lander.gradient_noise --all`` (or some methods by name,
    keeping the stored others)."""
    command_line(MODULE, __doc__, measure_and_store, argv, registry=METHODS, workers=2)


if __name__ == "__main__":
    main()


__all__ = ["METHODS", "CHECKPOINTS", "BATCHES", "batch_gradient", "noise_measures", "jackknife",
           "snr_difference", "measure_gradient_noise", "run_noise_study", "load_study",
           "stored_path"]
