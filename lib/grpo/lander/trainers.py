"""Chapter 6's trainers: PPO and A2C (one actor-critic trainer with GAE) and GRPO (outcome,
process, and the two baseline controls on GRPO's own batches), with their configs, the run spec,
the tracker that evaluates and keeps the best checkpoint per mode, and the worker pool.

GRPO is PPO minus the critic: both policy steps ascend the same clipped surrogate through
``grpo_loss_grad`` / ``ppo_loss_grad`` on ``grpo.mlp``'s NumPy networks.
"""
from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from ..mlp import Adam, FlatMLP
from ..pool import parallel_map
from .env import (OBS_DIM, TEST_SEED0, TRAIN_SEEDS, VAL_SEED0, Evaluator, StepCollector, entropy_of,
                  episode_outcomes, log_softmax, make_actor, make_critic, make_env, play_episodes,
                  policy_logits, start_obs, visited_state_entropy)
from .objectives import (GROUP_EPS, baseline_advantages, gae, grpo_loss_grad, outcome_advantages,
                         ppo_loss_grad, process_advantages, returns_to_go, step_weights, time_baseline)

ALGOS = ("ppo", "a2c", "grpo", "grpo_process", "grpo_value", "grpo_time")
BASELINES = {"grpo": "group", "grpo_process": "group", "grpo_value": "value", "grpo_time": "time"}


def gradient_agreement(grads) -> dict:
    """How much M minibatch gradients (an (M, P) array) agree: their mean pairwise cosine, and the
    signal-to-noise ratio |mean g|^2 / mean |g - mean g|^2. Both near 0: the steps mostly cancel."""
    g = np.asarray(grads, dtype=float)
    if g.ndim != 2 or g.shape[0] < 2 or not np.isfinite(g).all():
        raise ValueError(f"grads must be a finite (M >= 2, P) array, got shape {g.shape}")
    unit = g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-30)
    M, mean = len(g), g.mean(0)
    cosine = (np.sum(unit.sum(0) ** 2) - np.sum(unit ** 2)) / (M * (M - 1))
    noise = np.mean(np.sum((g - mean) ** 2, axis=1))
    return {"cosine": float(cosine), "snr": float(np.sum(mean ** 2) / noise) if noise > 0 else float("inf")}

# ---------------------------------------------------------------------------------------------
# Trainers
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ActorCriticConfig:
    """PPO with rl-zoo's LunarLander settings (lr 3e-4 constant, as there); A2C is the same trainer
    with A2C_CONFIG's values."""
    n_envs: int = 16
    n_steps: int = 1024          # per env per rollout
    gamma: float = 0.999         # episodes last hundreds of steps: a long horizon
    lam: float = 0.98
    epochs: int = 4
    minibatch: int = 64
    clip: float = 0.2
    lr: float = 3e-4
    adam_eps: float = 1e-5
    max_grad_norm: float = 0.5
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    normalize_adv: bool = True   # per minibatch, as SB3
    measure_gradients: bool = False   # log the first epoch's minibatch-gradient agreement (actor)


# rl-zoo's A2C numbers for LunarLander (8 envs x 5 steps, gamma 0.995, lambda 1, entropy 1e-5,
# lr 8.3e-4), with two differences: rl-zoo decays the lr linearly to 0 over the run (lin_0.00083)
# and SB3's A2C uses RMSprop; here the lr stays constant and the optimiser is Adam.
A2C_CONFIG = ActorCriticConfig(n_envs=8, n_steps=5, gamma=0.995, lam=1.0, epochs=1, minibatch=40,
                               lr=8.3e-4, ent_coef=1e-5, normalize_adv=False)


@dataclass(frozen=True)
class GRPOConfig:
    """Outcome GRPO as the published port ran it; ``process=True`` swaps in per-step credit."""
    group_size: int = 16         # G episodes per prompt
    prompts: int = 4             # B prompts per iteration: 64 episodes
    epochs: int = 4
    minibatch: int = 64
    clip: float = 0.2
    lr: float = 3e-4
    adam_eps: float = 1e-5
    max_grad_norm: float = 0.5
    beta: float = 0.04           # k3 KL to the reference policy
    ref_every: int = 10          # iterations between reference refreshes
    process: bool = False
    baseline: str = "group"      # "group": GRPO | "value": a learned V(s) | "time": the group's mean by step
    measure_gradients: bool = False   # log the first epoch's minibatch-gradient agreement


@dataclass(frozen=True)
class RunSpec:
    """What to run: algorithm, seed, env-step budget and the evaluation protocol."""
    algo: str
    seed: int
    total_steps: int
    eval_every: int = 100_000    # env steps between periodic evaluations
    val_episodes: int = 20
    test_episodes: int = 50
    config: object = field(default=None)
    stop_at: float | None = None  # stop once a validation argmax mean reaches this (benches: time to land)

    def resolved_config(self):
        if self.config is not None:
            return self.config
        return {"ppo": ActorCriticConfig(), "a2c": A2C_CONFIG, "grpo": GRPOConfig(),
                "grpo_process": GRPOConfig(process=True), "grpo_value": GRPOConfig(baseline="value"),
                "grpo_time": GRPOConfig(baseline="time")}[self.algo]


def _check_spec(spec: RunSpec) -> None:
    if spec.algo not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS}, got {spec.algo!r}")
    cfg = spec.resolved_config()
    if not (spec.total_steps > 0 and spec.eval_every > 0 and spec.val_episodes > 0
            and spec.test_episodes > 0 and cfg.lr > 0 and cfg.epochs > 0 and cfg.minibatch > 0):
        raise ValueError(f"steps, episodes, lr, epochs and minibatch must be > 0: {spec}")
    if spec.stop_at is not None and not np.isfinite(spec.stop_at):
        raise ValueError(f"stop_at must be a finite return or None, got {spec.stop_at}")
    if isinstance(cfg, GRPOConfig) and (cfg.group_size < 2 or cfg.prompts < 1):
        raise ValueError(f"GRPO needs G >= 2 and B >= 1, got G={cfg.group_size}, B={cfg.prompts}")
    # the label must say what runs: the trainer reads the config, the results carry the label
    grpo = spec.algo.startswith("grpo")
    wanted = GRPOConfig if grpo else ActorCriticConfig
    if not isinstance(cfg, wanted):
        raise ValueError(f"algo {spec.algo!r} needs a config of type {wanted.__name__}, "
                         f"got {type(cfg).__name__}")
    if grpo and cfg.baseline not in ("group", "value", "time"):
        raise ValueError(f"GRPOConfig.baseline must be 'group', 'value' or 'time', got {cfg.baseline!r}")
    if grpo and cfg.baseline != BASELINES[spec.algo]:
        right = next(a for a, b in BASELINES.items() if b == cfg.baseline and a != "grpo_process")
        raise ValueError(f"algo {spec.algo!r} runs baseline {BASELINES[spec.algo]!r}, but the config says "
                         f"{cfg.baseline!r}: use algo={right!r}")
    if grpo and cfg.process != (spec.algo == "grpo_process"):
        raise ValueError(f"algo {spec.algo!r} with a GRPOConfig(process={cfg.process}) would run "
                         f"{'process' if cfg.process else 'outcome'} GRPO under the wrong label: use "
                         f"algo={'grpo_process' if cfg.process else 'grpo'!r}")
    checks = [("clip", cfg.clip, 0 < cfg.clip < 1, "in (0, 1)"),
              ("adam_eps", cfg.adam_eps, cfg.adam_eps > 0, "> 0"),
              ("max_grad_norm", cfg.max_grad_norm, cfg.max_grad_norm > 0, "> 0")]
    if grpo:
        checks += [("beta", cfg.beta, cfg.beta >= 0, ">= 0"),
                   ("ref_every", cfg.ref_every, cfg.ref_every >= 1, ">= 1")]
    else:
        checks += [("gamma", cfg.gamma, 0 < cfg.gamma <= 1, "in (0, 1]"),
                   ("lam", cfg.lam, 0 <= cfg.lam <= 1, "in [0, 1]"),
                   ("n_envs", cfg.n_envs, cfg.n_envs >= 1, ">= 1"),
                   ("n_steps", cfg.n_steps, cfg.n_steps >= 1, ">= 1"),
                   ("vf_coef", cfg.vf_coef, cfg.vf_coef >= 0, ">= 0"),
                   ("ent_coef", cfg.ent_coef, cfg.ent_coef >= 0, ">= 0")]
    for name, value, ok, rule in checks:
        if not (ok and np.isfinite(value)):
            raise ValueError(f"{type(cfg).__name__}.{name} must be {rule}, got {value!r}")


class _Tracker:
    """Env-step counter, periodic evaluation, the best checkpoint per mode and the curves."""

    def __init__(self, spec: RunSpec, progress=None):
        self.spec, self.steps, self.progress = spec, 0, progress
        self.validate = Evaluator(range(VAL_SEED0, VAL_SEED0 + spec.val_episodes), rng_seed=spec.seed)
        self.next_eval = 0
        self.best = {"det": -np.inf, "sampled": -np.inf}       # best validation return per mode,
        self.best_state = {"det": None, "sampled": None}       # and the weights that scored it
        self.curve = {"env_steps": [], "det": [], "sampled": [],
                      "train_cpu_s": []}   # CPU-s of training so far, evaluations left out (benches only)
        self.cpu0, self.eval_cpu = time.process_time(), 0.0
        self.snapshots = []                # (env steps, actor weights) at every evaluation
        self.train_returns = {"env_steps": [], "return": []}

    def add(self, n_steps: int, episode_returns) -> None:
        self.steps += n_steps
        for r in episode_returns:
            self.train_returns["env_steps"].append(self.steps)
            self.train_returns["return"].append(float(r))
        if self.progress is not None:
            self.progress.update(n_steps)

    def maybe_evaluate(self, actor, force: bool = False) -> None:
        if self.steps < self.next_eval and not force:
            return
        self.next_eval = self.steps + self.spec.eval_every
        t = time.process_time()
        self.curve["train_cpu_s"].append(t - self.cpu0 - self.eval_cpu)
        ev = self.validate(actor)
        det, samp = float(ev["det"].mean()), float(ev["sampled"].mean())
        self.curve["env_steps"].append(self.steps)
        self.curve["det"].append(det)
        self.curve["sampled"].append(samp)
        self.snapshots.append((self.steps, copy.deepcopy(actor.state_dict())))
        for mode, score in (("det", det), ("sampled", samp)):   # each mode picks its own checkpoint
            if score > self.best[mode]:
                self.best[mode], self.best_state[mode] = score, copy.deepcopy(actor.state_dict())
        self.eval_cpu += time.process_time() - t

    @property
    def done(self) -> bool:
        det, stop = self.curve["det"], self.spec.stop_at
        return self.steps >= self.spec.total_steps or (stop is not None and bool(det) and det[-1] >= stop)


def train_actor_critic(spec: RunSpec, progress=None) -> dict:
    """PPO (and A2C with A2C_CONFIG): rollouts of n_envs x n_steps, GAE, clipped update with a critic."""
    cfg = spec.resolved_config()
    _check_spec(spec)
    rng = np.random.default_rng(spec.seed)
    actor, critic = make_actor(spec.seed), make_critic(spec.seed)
    pi, vf = FlatMLP(actor), FlatMLP(critic)    # NumPy forward/backward on the modules' own weights
    opt = Adam([pi, vf], lr=cfg.lr, eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm)
    collector, track = StepCollector(cfg.n_envs, rng), _Tracker(spec, progress)
    clip_fracs, iterations, agreement = [], 0, {"env_steps": [], "grad_cosine": [], "grad_snr": []}
    while not track.done:
        track.maybe_evaluate(actor)
        # 1. rollout with the current policy (it is pi_old for this update)
        s = collector.collect(actor, cfg.n_steps)
        track.add(s.rewards.size, s.episode_returns)
        T, N = s.actions.shape
        values = vf.forward(s.obs.reshape(-1, OBS_DIM))[:, 0].reshape(T, N)
        last_v = vf.forward(s.next_obs)[:, 0]
        if s.truncated:                # the time limit is not a terminal state: bootstrap V(last obs)
            final_v = vf.forward(np.stack([o for _, _, o in s.truncated]))[:, 0]
            for (t, i, _), v in zip(s.truncated, final_v):
                s.rewards[t, i] += cfg.gamma * v
        adv, ret = gae(s.rewards, values, s.dones, last_v, cfg.gamma, cfg.lam)
        # 2. flatten; log pi_old computed once
        b_obs, b_act = s.obs.reshape(-1, OBS_DIM), s.actions.reshape(-1)
        b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
        b_logp_old = log_softmax(pi.forward(b_obs))[np.arange(T * N), b_act]
        # 3. K epochs of minibatch steps on the clipped surrogate + value loss - entropy bonus
        grads = []
        for epoch in range(cfg.epochs):
            order = rng.permutation(T * N)
            for mb in np.split(order, range(cfg.minibatch, T * N, cfg.minibatch)):
                a = b_adv[mb]
                if cfg.normalize_adv and len(mb) > 1:
                    a = (a - a.mean()) / (a.std(ddof=1) + 1e-8)
                d_logits, clipped = ppo_loss_grad(pi.forward(b_obs[mb]), b_act[mb], b_logp_old[mb], a,
                                                  cfg.clip, cfg.ent_coef)
                pi.backward(d_logits)
                v = vf.forward(b_obs[mb])[:, 0]    # + vf_coef * mean((V - target)^2)
                vf.backward((2 * cfg.vf_coef / len(mb) * (v - b_ret[mb]))[:, None])
                if cfg.measure_gradients and epoch == 0:
                    grads.append(pi.grad.copy())
                opt.step()                         # joint gradient-norm clip, then Adam
                clip_fracs.append(float(clipped.mean()))
        if len(grads) >= 2:
            agree = gradient_agreement(grads)
            for k, v in (("env_steps", track.steps), ("grad_cosine", agree["cosine"]),
                         ("grad_snr", agree["snr"])):
                agreement[k].append(v)
        iterations += 1
    track.maybe_evaluate(actor, force=True)
    return _finish(spec, cfg, actor, track, {"clip_fraction_median": float(np.median(clip_fracs)),
                                             "iterations": iterations, "adam_steps": len(clip_fracs),
                                             "gradient_agreement": agreement})


def train_grpo(spec: RunSpec, progress=None) -> dict:
    """GRPO: B prompts x G episodes, group-relative advantage, clipped update + beta*k3, no critic.
    The controls keep the same batches and update and change only the baseline: ``"value"`` a
    learned V(s), advantage G_t - V(s_t) (lambda = 1, no GAE); ``"time"`` the group's mean G_t at
    the same step index."""
    cfg = spec.resolved_config()
    _check_spec(spec)
    rng = np.random.default_rng(spec.seed)
    actor = make_actor(spec.seed)
    pi = FlatMLP(actor)                        # NumPy forward/backward on the module's own weights
    opt = Adam([pi], lr=cfg.lr, eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm)
    vf = FlatMLP(make_critic(spec.seed)) if cfg.baseline == "value" else None
    if vf is not None:
        critic_opt = Adam([vf], lr=cfg.lr, eps=cfg.adam_eps, max_grad_norm=cfg.max_grad_norm)
    envs, track = [make_env() for _ in range(cfg.group_size * cfg.prompts)], _Tracker(spec, progress)
    diag = {k: [] for k in ("env_steps", "group_std", "degenerate", "near_degenerate", "kl_median",
                            "kl_max", "clip_fraction", "start_entropy", "grad_cosine", "grad_snr")}
    it = adam_steps = 0
    while not track.done:
        track.maybe_evaluate(actor)
        if it % cfg.ref_every == 0:            # iterative GRPO: the reference follows the actor
            ref = FlatMLP(copy.deepcopy(actor))
        # 1. B prompts (reset seeds), each flown G times with actions sampled from pi_old
        prompts = rng.integers(*TRAIN_SEEDS, size=cfg.prompts)
        seeds = np.repeat(prompts, cfg.group_size)
        ep = play_episodes(envs, seeds, actor, rng)
        track.add(int(ep.lengths.sum()), ep.returns)
        b_obs = np.concatenate(ep.obs)
        # 2. advantages: one number per episode broadcast to its steps, or per-step process credit
        if cfg.process:
            G = cfg.group_size
            adv = np.concatenate([a for g in range(cfg.prompts)
                                  for a in process_advantages(ep.rewards[g * G:(g + 1) * G])])
        elif cfg.baseline == "group":
            adv = np.repeat(outcome_advantages(ep.returns, cfg.group_size), ep.lengths)
        else:                                  # the controls: return-to-go minus V(s_t), or the time mean
            to_go = returns_to_go(ep.rewards)
            if vf is not None:
                base = vf.forward(b_obs)[:, 0]
                b_to_go = np.concatenate(to_go)
            else:
                base = time_baseline(to_go, cfg.group_size)
            adv = baseline_advantages(np.concatenate(to_go), base)
        w = step_weights(ep.lengths)
        # 3. flatten; log pi_old and log pi_ref computed once
        b_act, rows = np.concatenate(ep.actions), np.arange(len(b_obs))
        b_adv, b_w = adv, w
        b_logp_old = log_softmax(pi.forward(b_obs))[rows, b_act]
        b_logp_ref = log_softmax(ref.forward(b_obs))[rows, b_act]
        starts = b_obs[np.concatenate([[0], np.cumsum(ep.lengths)[:-1]])[::cfg.group_size]]
        # 4. K epochs of minibatch steps on the same clipped surrogate, minus beta * k3, no critic
        clip_fracs, kls, grads = [], [], []
        for epoch in range(cfg.epochs):
            order = rng.permutation(len(b_act))
            for mb in np.split(order, range(cfg.minibatch, len(b_act), cfg.minibatch)):
                d_logits, clipped, k3 = grpo_loss_grad(pi.forward(b_obs[mb]), b_act[mb], b_logp_old[mb],
                                                       b_logp_ref[mb], b_adv[mb], b_w[mb], cfg.clip, cfg.beta)
                pi.backward(d_logits)
                if cfg.measure_gradients and epoch == 0:
                    grads.append(pi.grad.copy())
                opt.step()                     # gradient-norm clip, then Adam
                if vf is not None:             # the control's V(s), fitted to G_t on the same minibatch
                    vf.backward((2 / len(mb) * (vf.forward(b_obs[mb])[:, 0] - b_to_go[mb]))[:, None])
                    critic_opt.step()
                clip_fracs.append(float(clipped.mean()))
                if epoch == cfg.epochs - 1:
                    kls.append(k3)
        adam_steps += len(clip_fracs)
        stds = ep.returns.reshape(cfg.prompts, cfg.group_size).std(1)
        kl = np.concatenate(kls)
        agree = gradient_agreement(grads) if len(grads) >= 2 else {"cosine": np.nan, "snr": np.nan}
        for k, v in (("env_steps", track.steps), ("group_std", float(np.mean(stds))),
                     ("degenerate", float(np.mean(stds < GROUP_EPS))),
                     ("near_degenerate", float(np.mean(stds < 1.0))),
                     ("kl_median", float(np.median(kl))), ("kl_max", float(kl.max())),
                     ("clip_fraction", float(np.mean(clip_fracs))),
                     ("start_entropy", float(entropy_of(policy_logits(actor, starts)).mean())),
                     ("grad_cosine", agree["cosine"]), ("grad_snr", agree["snr"])):
            diag[k].append(v)
        it += 1
    track.maybe_evaluate(actor, force=True)
    summary = {"degenerate_fraction": float(np.mean(diag["degenerate"])),
               "near_degenerate_fraction": float(np.mean(diag["near_degenerate"])),
               "kl_median": float(np.median(diag["kl_median"])),
               "clip_fraction_median": float(np.median(diag["clip_fraction"])),
               "group_return_std_median": float(np.median(diag["group_std"])),
               "iterations": it, "adam_steps": adam_steps, "diagnostics": diag}
    return _finish(spec, cfg, actor, track, summary)


def _finish(spec, cfg, actor, track, extra) -> dict:
    """The held-out test: the argmax-chosen checkpoint flown by argmax, the sampled-chosen one
    sampled, and the final policy both ways; how each ended; entropies of the final policy."""
    test = Evaluator(range(TEST_SEED0, TEST_SEED0 + spec.test_episodes), rng_seed=spec.seed)
    chosen = {mode: make_actor(spec.seed) for mode in ("det", "sampled")}
    for mode, net in chosen.items():
        net.load_state_dict(track.best_state[mode])
    flights = {"det": test.play(chosen["det"], True), "sampled": test.play(chosen["sampled"], False),
               "final_det": test.play(actor, True), "final_sampled": test.play(actor, False)}
    out = {"algo": spec.algo, "seed": spec.seed, "env_steps": track.steps,
           "config": asdict(cfg), "curve": track.curve, "train_returns": track.train_returns,
           **{(f"test_{k}" if k in ("det", "sampled") else k): ep.returns.tolist()
              for k, ep in flights.items()},
           "outcomes": {k: episode_outcomes(ep) for k, ep in flights.items()},
           "start_entropy": float(entropy_of(policy_logits(actor, start_obs(test.seeds))).mean()),
           "visited_state_entropy": visited_state_entropy(actor, flights["final_sampled"]),
           "det_state": chosen["det"].state_dict(), "sampled_state": chosen["sampled"].state_dict(),
           "final_state": copy.deepcopy(actor.state_dict()), "snapshots": track.snapshots}
    out.update(extra)
    return out


def train(spec: RunSpec, progress=None) -> dict:
    """Run one (algo, seed) to ``spec.total_steps`` env steps; see ``ALGOS``."""
    torch.set_num_threads(1)
    _check_spec(spec)
    trainer = train_grpo if spec.algo.startswith("grpo") else train_actor_critic
    return trainer(spec, progress)


def run_all(specs, workers: int = 2) -> list:
    """Train every spec in ``workers`` spawned processes, one torch thread each; results in spec order.

    Each run is seeded by its spec alone, so the results do not depend on process scheduling. A
    progress bar counts finished runs (off under the book's ``TQDM_DISABLE``).
    """
    return parallel_map(train, specs, workers, desc="lander runs")
