"""GRPO ported to Gymnasium's LunarLander-v3, beside PPO and A2C (chapter 6).

The port, as in the published study: a *prompt* is a reset seed (it fixes the terrain and the first
push), a *group* is G complete episodes flown from that seed with actions sampled from pi_old, and
an episode's *answer score* is its undiscounted return. PPO and A2C share one actor-critic trainer
with GAE; GRPO is PPO minus the critic.

Modules (what the chapter, the experiments, the tests and the benches use is named here, so
``from grpo import lander; lander.train(...)`` works; the rest is imported from its module):
    env         the environment, the networks, rollouts (``play_episodes``, ``StepCollector``),
                episode outcomes, held-out evaluation (``Evaluator``) and ``fly`` for animations
    losses      outcome and process advantages, the controls' baselines, GAE, ``lander_grpo_loss``
                and the closed-form gradients ``grpo_loss_grad`` / ``ppo_loss_grad``
    trainers    the configs, ``RunSpec``, ``train_actor_critic`` (``PPODiagnostics`` attaches
                SB3's diagnostics and the gradient probe), ``train_lander_grpo`` (plain GRPO;
                ``GRPOControls`` attaches the controls' baselines and the diagnostics) and
                ``train`` (chapter 6's runs in worker processes: ``grpo.experiments.ch06_lander``),
                whose result is a dataclass: ``ActorCriticResult`` or ``GRPOResult``
    report      ``summarize``: one algorithm's per-seed runs as a registry entry
    (chapter 6's stored runs and studies are in ``grpo.experiments.ch06_lander``)
"""
# ruff: noqa: F401  (the surface: the pages, experiments, tests and benches use lander.<name>)
# tests/test_layout.py fails on a name here that none of them uses.
from .env import (ENV_ID, N_ACTIONS, OBS_DIM, SLEEP_STEPS, SOLVED, TEST_SEED0, TIME_LIMIT,
                  TRAIN_SEEDS, VAL_SEED0, Episodes, Evaluator, StepCollector, entropy_of,
                  episode_outcomes, fly, load_actor, make_actor, make_critic, make_env, make_envs,
                  play_episodes, play_groups, policy_logits, sample_actions, sleep_gate, start_obs,
                  visited_state_entropy)
from .losses import (GROUP_EPS, baseline_advantages, ended_at_terminal, episode_gae,
                     explained_variance, gae, grpo_loss_grad, lander_grpo_loss,
                     normalize_advantages, outcome_advantages, ppo_loss_grad, process_advantages,
                     ratio_stats, returns_to_go, step_weights, surrogate_slope, time_baseline)
from .report import summarize
from .trainers import (A2C_CONFIG, ALGOS, DEFAULT_CONFIGS, DIAGNOSTICS, LEARNED_BASELINES,
                       ActorCriticConfig, ActorCriticResult, GRPOResult, LanderGRPOConfig,
                       LanderResult, PPODiagnostics, RunSpec, critic_inputs, episode_advantages,
                       gae_targets, gradient_agreement, group_batch, is_grpo, lander_critic_values,
                       result_from_fields, result_type, train, train_actor_critic,
                       train_lander_grpo)

__all__ = [name for name in dir() if not name.startswith("__")
           and name not in ("env", "losses", "report", "trainers")]
