"""Chapter 6: the LunarLander port (env determinism, advantages, loss signs, rollouts, bad input)."""
import copy
import dataclasses

import numpy as np
import pytest
import torch

from grpo import lander as L
from grpo.objectives import grpo_advantages


def test_same_seed_same_actions_give_bit_identical_trajectories():
    a, b = L.make_env(), L.make_env()
    oa, ob = a.reset(seed=123)[0], b.reset(seed=123)[0]
    assert np.array_equal(oa, ob)
    actions = np.random.default_rng(0).integers(0, 4, 300)
    for act in actions:
        sa, sb = a.step(act), b.step(act)
        assert np.array_equal(sa[0], sb[0]) and sa[1:4] == sb[1:4]
        if sa[2] or sa[3]:
            break
    assert not np.array_equal(oa, L.make_env().reset(seed=124)[0])     # the seed matters


TINY_AC = L.ActorCriticConfig(n_envs=2, n_steps=64, minibatch=32, epochs=2)
TINY_GRPO = L.LanderGRPOConfig(group_size=2, prompts=2, minibatch=64, epochs=2, ref_every=2)


@pytest.mark.parametrize("algo,cfg", [("ppo", TINY_AC), ("grpo", TINY_GRPO),
                                      ("grpo_process",
                                       L.LanderGRPOConfig(group_size=2, prompts=2, process=True))])
def test_a_short_training_run_is_deterministic(algo, cfg):
    spec = L.RunSpec(algo, 3, 600, eval_every=300, val_episodes=2, test_episodes=2, config=cfg)
    r1, r2 = L.train(spec), L.train(spec)
    for k in r1.final_state:
        assert torch.equal(r1.final_state[k], r2.final_state[k])
    assert r1.test_det == r2.test_det and r1.test_sampled == r2.test_sampled
    assert r1.env_steps >= 600
    if algo == "ppo":                     # K epochs of minibatches over each rollout
        assert r1.adam_steps == r1.iterations * cfg.epochs * cfg.n_envs * cfg.n_steps // cfg.minibatch
    else:                                 # K epochs of minibatches over each iteration's episodes
        new = np.diff(r1.diagnostics["env_steps"], prepend=0)
        assert r1.adam_steps == cfg.epochs * sum(-(-n // cfg.minibatch) for n in new)
    final = L.Evaluator(range(L.TEST_SEED0, L.TEST_SEED0 + 2), rng_seed=3)(L.load_actor(r1.final_state))
    assert r1.final_det == final["det"].tolist() and r1.final_sampled == final["sampled"].tolist()
    chosen = L.Evaluator(range(L.TEST_SEED0, L.TEST_SEED0 + 2), rng_seed=3)(L.load_actor(r1.det_state))
    assert r1.test_det == chosen["det"].tolist()        # the argmax row flies the argmax-chosen weights
    r3 = L.train(L.RunSpec(algo, 4, 600, eval_every=300, val_episodes=2, test_episodes=2, config=cfg))
    assert not torch.equal(r1.final_state["0.weight"], r3.final_state["0.weight"])


def test_a_tiny_a2c_run_takes_plain_policy_gradient_steps_and_is_deterministic():
    """A2C_CONFIG: one gradient step per fresh rollout of 8 envs x 5 steps, so rho = 1 at every step
    and the clip never engages; the run is seeded by its spec alone."""
    spec = L.RunSpec("a2c", 5, 400, eval_every=200, val_episodes=2, test_episodes=2, config=L.A2C_CONFIG)
    r1, r2 = L.train(spec), L.train(spec)
    cfg = L.A2C_CONFIG
    assert r1.iterations == 400 // (cfg.n_envs * cfg.n_steps) == 10 and r1.env_steps == 400
    assert r1.clip_fraction_median == 0.0
    assert r1.config["lam"] == 1.0 and r1.algo == "a2c"
    start = L.make_actor(5).state_dict()
    assert not torch.equal(start["4.weight"], r1.final_state["4.weight"])    # it did learn something
    for k in r1.final_state:
        assert torch.equal(r1.final_state[k], r2.final_state[k])
    assert r1.test_det == r2.test_det and r1.test_sampled == r2.test_sampled


def test_outcome_advantage_is_the_group_zscore_broadcast_with_equal_weight_per_episode():
    returns = np.array([10.0, -30.0, 5.0, 5.0, 1.0, 2.0])
    adv = L.outcome_advantages(returns, group_size=3)
    g = returns[:3]
    assert np.allclose(adv[:3], (g - g.mean()) / (g.std() + 1e-4))
    assert np.array_equal(adv[3:], grpo_advantages(returns[3:], eps=1e-4))
    lengths = np.array([3, 1, 4, 2, 2, 5])
    per_step = np.repeat(adv, lengths)
    assert np.all(per_step[:3] == adv[0]) and per_step[3] == adv[1]
    w = L.step_weights(lengths)
    assert len(w) == lengths.sum() and np.isclose(w.mean(), 1.0)
    sums = np.add.reduceat(w, np.r_[0, np.cumsum(lengths)[:-1]])
    assert np.allclose(sums, sums[0]) and np.isclose(sums[0], lengths.sum() / len(lengths))


def test_degenerate_group_gives_zero_advantage():
    assert np.array_equal(L.outcome_advantages([7.0, 7.0, 1.0, 3.0], 2)[:2], [0.0, 0.0])
    assert all(np.array_equal(a, np.zeros(len(a))) for a in L.process_advantages([[1.0, 1.0], [1.0]]))


def test_process_advantage_on_a_hand_example():
    # episode 1 rewards [1, 2], episode 2 [3]: all steps have mean 2, population std sqrt(2/3)
    adv = L.process_advantages([[1.0, 2.0], [3.0]])
    s = np.sqrt(2 / 3) + 1e-4
    # normalised rewards: [-1/s, 0] and [1/s]; summed from each step to its episode's end
    assert np.allclose(adv[0], [-1 / s + 0.0, 0.0]) and np.allclose(adv[1], [1 / s])


def test_gae_with_lambda_one_is_the_discounted_return():
    r = np.array([[1.0], [2.0], [3.0]])
    v = np.array([[0.5], [0.5], [0.5]])
    dones = np.array([[False], [True], [False]])
    _, ret = L.gae(r, v, dones, last_values=np.array([10.0]), gamma=0.9, lam=1.0)
    assert np.allclose(ret[:, 0], [1 + 0.9 * 2, 2.0, 3 + 0.9 * 10])     # the done cuts the sum


def lambda_return_advantages(rewards, values, next_values, ends, gamma, lam):
    """Brute force for one env: A_t = G_t^lambda - V(s_t), G^lambda the (1 - lam)-weighted mean of the
    n-step returns G^(n) = sum_k<n gamma^k r_{t+k} + gamma^n V(s_{t+n}), truncated at the episode's end.
    ``next_values[t]`` is V of the state after step t (0 after a terminal step), ``ends[t]`` says an
    episode (or the rollout) ends after step t."""
    T = len(rewards)
    adv = np.zeros(T)
    for t in range(T):
        e = next(j for j in range(t, T) if ends[j])                 # the last step of t's episode
        N = e - t + 1
        n_step = [sum(gamma ** k * rewards[t + k] for k in range(n)) + gamma ** n * next_values[t + n - 1]
                  for n in range(1, N + 1)]
        g_lam = ((1 - lam) * sum(lam ** (n - 1) * n_step[n - 1] for n in range(1, N))
                 + lam ** (N - 1) * n_step[-1])
        adv[t] = g_lam - values[t]
    return adv


def test_gae_with_lambda_below_one_equals_the_lambda_return_by_brute_force():
    rng = np.random.default_rng(0)
    T, N, gamma, lam = 9, 3, 0.9, 0.7
    r, v = rng.normal(size=(T, N)), rng.normal(size=(T, N))
    dones = np.zeros((T, N), bool)
    dones[2, 0] = dones[6, 0] = dones[4, 1] = True                 # env 2 runs through the rollout
    last = rng.normal(size=N)
    adv, ret = L.gae(r, v, dones, last, gamma, lam)
    for i in range(N):
        next_v = np.append(v[1:, i], last[i]) * ~dones[:, i]        # V(s_{t+1}), 0 after a terminal
        ends = dones[:, i].copy()
        ends[-1] = True                                             # the rollout's end bootstraps V
        brute = lambda_return_advantages(r[:, i], v[:, i], next_v, ends, gamma, lam)
        assert np.allclose(adv[:, i], brute, atol=1e-12)
    assert np.allclose(ret, adv + v)


def test_the_time_limit_bootstrap_treats_truncation_as_a_cut_not_a_terminal():
    """train_actor_critic adds gamma * V(final obs) to the reward of a step the time limit cut, then
    runs GAE with that step done: the same advantages as an episode that goes on to a state of value
    V(final obs) and is cut there (brute force), not those of a crash (value 0)."""
    rng = np.random.default_rng(1)
    T, gamma, lam = 8, 0.99, 0.9
    r, v = rng.normal(size=(T, 1)), rng.normal(size=(T, 1))
    dones = np.zeros((T, 1), bool)
    dones[4, 0] = True                                              # truncated after step 4
    v_final, last = 3.0, np.array([0.5])
    boot = r.copy()
    boot[4, 0] += gamma * v_final                                   # what the trainer does
    adv, _ = L.gae(boot, v, dones, last, gamma, lam)
    next_v = np.append(v[1:, 0], last)
    next_v[4] = v_final                                             # the state the limit cut off
    ends = dones[:, 0].copy()
    ends[-1] = True
    assert np.allclose(adv[:, 0], lambda_return_advantages(r[:, 0], v[:, 0], next_v, ends, gamma, lam))
    terminal, _ = L.gae(r, v, dones, last, gamma, lam)
    assert not np.allclose(adv[:5], terminal[:5])                   # a terminal would differ there
    assert np.allclose(adv[5:], terminal[5:])                       # the next episode is unaffected


def test_grpo_loss_and_its_gradient_match_a_hand_computation():
    logp = torch.tensor([-1.0, -1.2, -0.7, -2.0], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([-1.05, -1.0, -0.7, -1.5], dtype=torch.float64)
    ref = torch.tensor([-1.1, -1.3, -0.5, -2.0], dtype=torch.float64)
    adv = torch.tensor([1.0, -0.5, 2.0, 1.5], dtype=torch.float64)
    w = torch.tensor([0.5, 0.5, 1.5, 1.5], dtype=torch.float64)
    clip, beta = 0.2, 0.04
    loss, clipped, k3 = L.lander_grpo_loss(logp, old, ref, adv, w, clip, beta)
    loss.backward()
    x, o, rf, A, W = (t.detach().numpy() for t in (logp, old, ref, adv, w))
    rho = np.exp(x - o)                               # [1.051, 0.819, 1, 0.607]
    surr = np.minimum(rho * A, np.clip(rho, 0.8, 1.2) * A)
    u = rf - x
    k3_hand = np.exp(u) - u - 1
    assert np.isclose(loss.item(), -np.mean(W * (surr - beta * k3_hand)))
    # d/dlogp: the surrogate gives rho*A unless clipped; k3 gives 1 - exp(u)
    live = ~clipped.numpy()
    assert list(live) == [True, True, True, True]     # step 4: rho < 0.8 but A > 0, so it corrects
    grad_hand = -W * (live * rho * A - beta * (1 - np.exp(u))) / 4
    assert np.allclose(logp.grad.numpy(), grad_hand)
    # sign: a positive advantage makes the loss fall as that action's log-prob rises
    assert logp.grad[0] < 0 and logp.grad[1] > 0


def test_the_clip_zeroes_the_gradient_past_the_band_in_the_advantage_direction():
    logp = torch.tensor([0.0], requires_grad=True)
    loss, clipped, _ = L.lander_grpo_loss(logp, torch.tensor([-0.5]), torch.tensor([0.0]),
                                          torch.tensor([1.0]), torch.tensor([1.0]), 0.2, 0.0)
    loss.backward()
    assert clipped.item() and logp.grad.item() == 0.0


def test_no_reset_transition_enters_a_batch():
    """Replay every stored transition in a fresh env from its recorded reset seed: each must be a
    real step of an episode (a NEXT_STEP reset transition would have no counterpart)."""
    initial = np.random.default_rng(0).integers(*L.TRAIN_SEEDS, size=3)   # the collector's first draws
    collector = L.StepCollector(3, np.random.default_rng(0))
    later = [[] for _ in collector.envs]
    for i, env in enumerate(collector.envs):
        def reset(seed=None, _orig=env.reset, _i=i, **kw):
            later[_i].append(seed)
            return _orig(seed=seed, **kw)
        env.reset = reset
    s = collector.collect(L.make_actor(0), 400)
    for i in range(3):
        replay, starts = L.make_env(), iter(later[i])
        obs = replay.reset(seed=int(initial[i]))[0]
        for t in range(400):
            assert np.array_equal(s.obs[t, i], obs)
            obs, r, term, trunc, _ = replay.step(s.actions[t, i])
            assert r == s.rewards[t, i] and (term or trunc) == s.dones[t, i]
            if term or trunc:
                obs = replay.reset(seed=next(starts))[0]
        assert len(later[i]) == int(s.dones[:, i].sum())
    assert len(s.episode_returns) == int(s.dones.sum()) > 0


def test_gumbel_max_samples_the_softmax():
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4]])).repeat(40_000, 0)
    a = L.sample_actions(logits, np.random.default_rng(1))
    assert np.allclose(np.bincount(a, minlength=4) / len(a), [0.1, 0.2, 0.3, 0.4], atol=0.01)
    assert np.array_equal(L.sample_actions(logits[:3], None, greedy=True), [3, 3, 3])
    assert np.isclose(L.entropy_of(np.zeros((1, 4)))[0], np.log(4))


def test_actor_has_the_published_size_and_starts_near_uniform():
    actor = L.make_actor(0)
    assert sum(p.numel() for p in actor.parameters()) == 4996
    ent = L.entropy_of(L.policy_logits(actor, L.start_obs(range(5))))
    assert (ent > 1.38).all()


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="algo"):
        L.RunSpec("dqn", 0, 100)
    with pytest.raises(ValueError, match="shape"):
        L.policy_logits(L.make_actor(0), np.zeros((3, 5)))
    with pytest.raises(ValueError, match="G >= 2"):
        L.outcome_advantages([1.0, 2.0], group_size=1)
    with pytest.raises(ValueError, match="G >= 2"):
        L.process_advantages([[1.0, 2.0]])
    with pytest.raises(ValueError, match="NaN"):
        L.process_advantages([[1.0, np.nan], [2.0]])
    with pytest.raises(ValueError, match="NaN"):
        L.outcome_advantages([1.0, np.nan], group_size=2)
    with pytest.raises(ValueError, match="positive"):
        L.step_weights([3, 0])


@pytest.mark.parametrize("kind, fields, match", [
    ("ac", dict(clip=1.5), "clip must be in \\(0, 1\\), got 1.5"),
    ("ac", dict(clip=0.0), "clip must be in \\(0, 1\\), got 0.0"),
    ("ac", dict(gamma=2.0), "gamma must be in \\(0, 1\\], got 2.0"),
    ("ac", dict(lam=-0.1), "lam must be in \\[0, 1\\], got -0.1"),
    ("ac", dict(max_grad_norm=float("nan")), "max_grad_norm must be > 0, got nan"),
    ("ac", dict(ent_coef=-0.01), "ent_coef must be >= 0, got -0.01"),
    ("ac", dict(epochs=0.5), "epochs must be an int >= 1, got 0.5"),
    ("ac", dict(lr=0.0), "lr must be > 0"),
    ("grpo", dict(beta=-1.0), "beta must be >= 0, got -1.0"),
    ("grpo", dict(clip=1.5), "clip must be in \\(0, 1\\), got 1.5"),
    ("grpo", dict(ref_every=0), "ref_every must be an int >= 1, got 0"),
    ("grpo", dict(group_size=2.5), "group_size must be an int >= 2, got 2.5"),
    ("grpo", dict(group_size=1), "group_size must be an int >= 2, got 1"),
    ("grpo", dict(baseline="nope"), "baseline must be one of"),
    ("grpo", dict(process="yes"), "process must be True or False"),
])
def test_a_bad_config_is_refused_at_construction(kind, fields, match):
    with pytest.raises(ValueError, match=match):
        (L.ActorCriticConfig if kind == "ac" else L.LanderGRPOConfig)(**fields)


@pytest.mark.parametrize("algo, cfg, match", [
    ("grpo_process", L.LanderGRPOConfig(), "its config runs 'grpo'"),
    ("grpo", L.LanderGRPOConfig(process=True), "its config runs 'grpo_process'"),
    ("grpo", L.ActorCriticConfig(), "its config runs 'ppo'"),
    ("ppo", L.LanderGRPOConfig(), "its config runs 'grpo'"),
    ("ppo", L.A2C_CONFIG, "use algo='a2c'"),
    ("grpo_value", L.LanderGRPOConfig(), "its config runs 'grpo'"),
    ("grpo", L.LanderGRPOConfig(baseline="value"), "use algo='grpo_value'"),
])
def test_the_label_is_what_the_config_runs(algo, cfg, match):
    with pytest.raises(ValueError, match=match):
        L.RunSpec(algo, 0, 100, config=cfg)


def test_a_bad_spec_is_refused_at_construction():
    with pytest.raises(ValueError, match="RunSpec.algo must be one of"):
        L.RunSpec("foo", 0, 100)
    with pytest.raises(ValueError, match="total_steps must be an int >= 1"):
        L.RunSpec("ppo", 0, 0)


def test_the_default_specs_and_the_a2c_config_pass_the_checks():
    specs = [L.RunSpec(algo, 0, 100) for algo in L.ALGOS] + [L.RunSpec("a2c", 0, 100, config=L.A2C_CONFIG)]
    assert [s.resolved_config().algo for s in specs] == list(L.ALGOS) + ["a2c"]
    with pytest.raises(ValueError, match="spec must be a RunSpec"):
        L.train({"algo": "ppo"})


def _fake_run(algo: str = "grpo", **changes) -> L.LanderResult:
    """A result with made-up fields, for ``summarize``: ``None`` where it reads nothing."""
    ends = {k: 0.5 for k in ("landed", "crashed", "timed_out", "legs_down", "length", "main_engine")}
    values = {f.name: None for f in dataclasses.fields(L.result_type(algo))}
    values.update(
        algo=algo, seed=0, test_det=[250.0, 100.0], test_sampled=[0.0, 300.0], start_entropy=1.0,
        final_det=[0.0, 0.0], final_sampled=[10.0, 30.0], visited_state_entropy=1.2, env_steps=1000,
        outcomes={"det": ends, "sampled": {**ends, "landed": 1.0}}, iterations=5, adam_steps=20,
        clip_fraction_median=0.1, clip_fraction_study_median=0.2, approx_kl_median=0.01,
        explained_variance_median=np.nan,
        sleep_gate={"legs_down_states": 3, "entropy": 0.5, "p_no_engine": 0.9, "p_quiet_run": 0.8},
        diagnostics={"grad_cosine": [0.1, np.nan, 0.3], "grad_snr": [1.0, 2.0, 9.0]})
    if L.is_grpo(algo):
        values.update(degenerate_fraction=0.0, near_degenerate_fraction=0.5, kl_median=0.01,
                      group_return_std_median=30.0)
    else:
        values.update(entropy_median=0.7, gradient_agreement=values["diagnostics"])
    return L.result_from_fields({**values, **changes})


def test_summarize_needs_results_of_one_algorithm():
    with pytest.raises(ValueError, match="at least one run"):
        L.summarize([])
    with pytest.raises(ValueError, match="one algorithm"):
        L.summarize([_fake_run("ppo"), _fake_run("a2c")])
    with pytest.raises(ValueError, match="LanderResult"):      # a dict is not a result
        L.summarize([_fake_run("ppo").as_dict()])


def test_fly_returns_downscaled_frames_one_per_step_plus_the_start():
    frames, ret = L.fly(L.make_actor(0), 5, greedy=True, scale=4)
    assert frames.shape[1:] == (100, 150, 3) and frames.dtype == np.uint8
    ep = L.play_episodes([L.make_env()], [5], L.make_actor(0), None, greedy=True)
    assert len(frames) == ep.lengths[0] + 1 and ret == ep.returns[0]


def test_summarize_builds_the_registry_entry():
    run = _fake_run("grpo")
    s = L.summarize([run, dataclasses.replace(run, env_steps=1003)])
    assert s["det_return_mean"] == 175.0 and s["det_solved_fraction"] == 0.5
    assert s["det_return_mean_minus_std"] == 175.0 - 75.0
    assert s["sampled_return_per_seed"] == [150.0, 150.0] and s["iterations"] == [5, 5]
    assert s["final_sampled_return_mean"] == 20.0 and s["final_det_solved_fraction"] == 0.0
    assert s["outcomes"]["sampled"]["landed"] == 1.0 and s["outcomes"]["det"]["legs_down"] == 0.5
    assert s["env_steps"] == 1002 and s["env_steps_per_seed"] == [1000, 1003]
    assert s["visited_state_entropy_mean"] == 1.2 and s["near_degenerate_fraction"] == 0.5
    assert s["grad_cosine_median"] == pytest.approx(0.2) and s["grad_snr_median"] == 2.0
    assert s["approx_kl_median"] == 0.01 and "explained_variance_median" not in s    # NaN: not logged
    assert s["sleep_gate"]["legs_down_states"] == 6 and s["adam_steps"] == [20, 20]
    # read by family: PPO's probe is its own field, and GRPO's logs are not in its entry
    p = L.summarize([_fake_run("ppo", gradient_agreement={"grad_cosine": [0.5], "grad_snr": [4.0]})])
    assert p["entropy_median"] == 0.7 and p["grad_snr_median"] == 4.0 and "kl_median" not in p


def test_every_trainer_returns_its_familys_dataclass(monkeypatch):
    """train's result is result_type(algo): GRPO's adds its own logs, PPO's and A2C's the critic
    family's; a result with a field missing or unknown is refused by name."""
    grpo, ppo = ({f.name for f in dataclasses.fields(L.result_type(a))} for a in ("grpo_value", "ppo"))
    assert grpo - ppo == {"degenerate_fraction", "near_degenerate_fraction", "kl_median",
                          "group_return_std_median"}
    assert ppo - grpo == {"entropy_median", "gradient_agreement"}
    assert L.result_type("a2c") is L.ActorCriticResult and L.result_type("grpo_time") is L.GRPOResult
    with pytest.raises(ValueError, match="algo"):
        L.is_grpo("sac")
    spec = L.RunSpec("ppo", 3, 300, eval_every=300, val_episodes=2, test_episodes=2, config=TINY_AC)
    assert type(L.train(spec)) is L.ActorCriticResult
    values = _fake_run("ppo").as_dict()
    with pytest.raises(ValueError, match="missing \\['entropy_median'\\]"):
        L.result_from_fields({k: v for k, v in values.items() if k != "entropy_median"})
    with pytest.raises(ValueError, match="unknown \\['kl_median'\\]"):
        L.result_from_fields({**values, "kl_median": 0.0})
    summary = L.PPODiagnostics.summary
    monkeypatch.setattr(L.PPODiagnostics, "summary",
                        lambda self: {k: v for k, v in summary(self).items() if k != "entropy_median"})
    with pytest.raises(TypeError, match="entropy_median"):     # a trainer that drifted
        L.train(spec)


def test_mlp_forward_and_gradients_are_bit_identical_to_the_plain_sequential():
    actor = L.make_actor(0)
    plain = torch.nn.Sequential(*actor)                # the same layers, module by module
    assert list(actor.state_dict()) == list(plain.state_dict()) == ["0.weight", "0.bias", "2.weight",
                                                                   "2.bias", "4.weight", "4.bias"]
    x = torch.randn(64, L.OBS_DIM, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    grads = []
    for net in (actor, plain):
        net.zero_grad()
        out = torch.log_softmax(net(x), -1)[:, 1].sum()
        out.backward()
        grads.append([p.grad.clone() for p in net.parameters()])
    assert torch.equal(actor(x), plain(x))
    assert all(torch.equal(a, b) for a, b in zip(*grads))
    y0, twin = actor(x).detach(), copy.deepcopy(actor)   # a copy (GRPO's reference) flies its own weights
    with torch.no_grad():
        actor[4].bias += 1.0
    assert torch.equal(twin(x), y0) and torch.equal(actor(x), y0 + 1.0)


def test_empty_groups_are_a_clear_error():
    with pytest.raises(ValueError, match="whole number"):
        L.outcome_advantages([], 4)
    with pytest.raises(ValueError, match=">= 1 step"):
        L.process_advantages([[], []])


def _episodes(rewards, actions=None, legs=None):
    actions = actions or [np.zeros(len(r), np.int64) for r in rewards]
    last = [np.r_[np.zeros(6), [1.0, 1.0] if down else [1.0, 0.0]].astype(np.float32)
            for down in (legs or [False] * len(rewards))]
    return L.Episodes([np.zeros((len(r), 8), np.float32) for r in rewards], actions,
                      [np.asarray(r, float) for r in rewards], last)


def test_episode_outcomes_read_the_terminal_reward():
    ep = _episodes([[1.0, 2.0, 100.0], [0.5, -100.0], [0.1] * 4, [3.0, 99.5]],
                   [np.array([2, 2, 0]), np.array([1, 2]), np.array([2, 3, 2, 2]), np.array([0, 0])],
                   legs=[True, False, True, False])        # one leg down counts as not down
    out = L.episode_outcomes(ep)
    assert (out["landed"], out["crashed"], out["timed_out"]) == (0.25, 0.25, 0.5)
    assert out["legs_down"] == 0.5
    assert out["length"] == 11 / 4 and out["main_engine"] == (2 + 1 + 3 + 0) / 4
    R = np.array([103.0, -99.5, 0.4, 102.5])
    assert np.isclose(out["return_mean_minus_std"], R.mean() - R.std())
    with pytest.raises(ValueError, match="at least one"):
        L.episode_outcomes(_episodes([]))
    with pytest.raises(ValueError, match="last obs"):
        L.episode_outcomes(L.Episodes(ep.obs, ep.actions, ep.rewards))


def test_a_real_crash_and_a_real_landing_end_on_exactly_minus_and_plus_100():
    crash = L.play_episodes([L.make_env()], [3], L.make_actor(0), None, greedy=True)   # near uniform: falls
    assert crash.rewards[0][-1] == -100.0 and L.episode_outcomes(crash)["crashed"] == 1.0
    env = L.make_env()
    env.reset(seed=3)
    for a in crash.actions[0]:                           # the stored last obs is the env's last obs
        last = env.step(int(a))[0]
    assert np.array_equal(crash.last_obs[0], last)


def test_visited_state_entropy_is_the_mean_over_every_visited_state():
    actor = L.make_actor(1)
    ep = L.play_episodes([L.make_env(), L.make_env()], [4, 5], actor, np.random.default_rng(0))
    want = L.entropy_of(L.policy_logits(actor, np.concatenate(ep.obs))).mean()
    assert L.visited_state_entropy(actor, ep) == pytest.approx(want)
    assert 1.3 < want <= np.log(4)                      # the fresh actor is near uniform everywhere


def test_gradient_agreement_on_hand_examples():
    same = L.gradient_agreement([[1.0, 2.0], [2.0, 4.0]])
    assert same["cosine"] == pytest.approx(1.0)
    opposite = L.gradient_agreement([[1.0, 0.0], [-1.0, 0.0]])
    assert opposite["cosine"] == pytest.approx(-1.0) and opposite["snr"] == 0.0
    g = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    mean = g.mean(0)
    snr = (mean ** 2).sum() / np.mean(((g - mean) ** 2).sum(1))
    cos = np.mean([0.0, 1 / np.sqrt(2), 1 / np.sqrt(2)])
    out = L.gradient_agreement(g)
    assert out["snr"] == pytest.approx(snr) and out["cosine"] == pytest.approx(cos)
    assert L.gradient_agreement([[1.0, 1.0], [1.0, 1.0]])["snr"] == float("inf")
    rng = np.random.default_rng(0)
    assert abs(L.gradient_agreement(rng.normal(size=(200, 500)))["cosine"]) < 0.01
    for bad in ([[1.0, 2.0]], [[1.0, np.nan], [1.0, 2.0]], [1.0, 2.0]):
        with pytest.raises(ValueError, match="grads"):
            L.gradient_agreement(bad)


def test_returns_to_go_and_the_time_baseline_by_hand():
    to_go = L.returns_to_go([[1.0, 2.0, 3.0], [4.0]])
    assert [x.tolist() for x in to_go] == [[6.0, 5.0, 3.0], [4.0]]
    base = L.time_baseline(to_go, group_size=2)    # step 0: (6 + 4) / 2; later the ended one counts 0
    assert base.tolist() == [5.0, 2.5, 1.5, 5.0]
    adv = L.baseline_advantages(np.concatenate(to_go), base)
    a = np.array([1.0, 2.5, 1.5, -1.0])
    assert np.allclose(adv, a / (a.std() + L.GROUP_EPS))
    assert (L.baseline_advantages([2.0, 3.0], [1.0, 2.0]) == 0).all()    # all equal: no signal, no NaN
    with pytest.raises(ValueError, match="G >= 2"):
        L.time_baseline(to_go, group_size=1)
    with pytest.raises(ValueError, match="finite"):
        L.baseline_advantages([1.0, np.nan], [0.0, 0.0])


@pytest.mark.parametrize("algo", ["grpo_value", "grpo_time"])
def test_the_baseline_controls_run_on_grpo_batches_and_are_deterministic(algo):
    cfg = L.LanderGRPOConfig(group_size=2, prompts=2, minibatch=64, epochs=2, ref_every=2,
                       baseline=L.DEFAULT_CONFIGS[algo].baseline, measure_gradients=True)
    spec = L.RunSpec(algo, 3, 600, eval_every=300, val_episodes=2, test_episodes=2, config=cfg)
    r1, r2 = L.train(spec), L.train(spec)
    for k in r1.final_state:
        assert torch.equal(r1.final_state[k], r2.final_state[k])
    plain = L.LanderGRPOConfig(group_size=2, prompts=2, minibatch=64, epochs=2, ref_every=2)
    grpo = L.train(L.RunSpec("grpo", 3, 600, eval_every=300, val_episodes=2, test_episodes=2, config=plain))
    assert not torch.equal(r1.final_state["4.weight"], grpo.final_state["4.weight"])
    assert all(np.isfinite(r1.diagnostics["grad_cosine"]))
    assert all(np.isnan(grpo.diagnostics["grad_snr"]))


def test_measuring_gradients_leaves_the_run_unchanged():
    for algo, cfg in (("grpo", TINY_GRPO), ("ppo", TINY_AC)):
        spec = L.RunSpec(algo, 3, 600, eval_every=300, val_episodes=2, test_episodes=2, config=cfg)
        plain = L.train(spec)
        measured = L.train(L.RunSpec(algo, 3, 600, eval_every=300, val_episodes=2, test_episodes=2,
                                     config=type(cfg)(**{**cfg.__dict__, "measure_gradients": True})))
        for k in plain.final_state:
            assert torch.equal(plain.final_state[k], measured.final_state[k])
    assert measured.gradient_agreement["grad_cosine"] and not plain.gradient_agreement["grad_cosine"]


def test_stop_at_ends_a_run_at_the_first_validation_that_reaches_it():
    spec = L.RunSpec("grpo", 3, 3000, eval_every=300, val_episodes=2, test_episodes=2, config=TINY_GRPO,
                     stop_at=-1e9)                     # any return reaches it: stop after the first rollout
    r = L.train(spec)
    assert r.env_steps < 3000 and len(r.curve["train_cpu_s"]) == len(r.curve["det"])
    assert all(c >= 0 for c in r.curve["train_cpu_s"])
    with pytest.raises(ValueError, match="stop_at"):
        L.RunSpec("ppo", 0, 100, stop_at=float("nan"))


def test_each_mode_keeps_the_checkpoint_that_scored_best_in_that_mode():
    track = L.trainers._Tracker(L.RunSpec("ppo", 0, 10, eval_every=1, val_episodes=1))
    scores = [(10.0, 50.0), (30.0, 20.0), (20.0, 40.0)]       # argmax best at 1, sampled best at 0
    actor = L.make_actor(0)
    for i, (det, samp) in enumerate(scores):
        track.validate = lambda _, d=det, s=samp: {"det": np.array([d]), "sampled": np.array([s])}
        with torch.no_grad():
            actor[0].bias.fill_(float(i))                     # marks which evaluation the weights are
        track.maybe_evaluate(actor, force=True)
    assert track.best == {"det": 30.0, "sampled": 50.0}
    assert track.best_state["det"]["0.bias"][0] == 1.0 and track.best_state["sampled"]["0.bias"][0] == 0.0


def test_gae_with_int_rewards_is_not_truncated():
    """Regression: GAE wrote float advantages into an array shaped and typed like the rewards."""
    rewards, dones = np.array([[1], [0], [2]]), np.zeros((3, 1), bool)
    adv, _ = L.gae(rewards, np.zeros((3, 1)), dones, np.zeros(1), gamma=0.5, lam=0.5)
    as_float, _ = L.gae(rewards.astype(float), np.zeros((3, 1)), dones, np.zeros(1), gamma=0.5, lam=0.5)
    assert adv.dtype == np.float64 and np.array_equal(adv, as_float) and adv[0, 0] == 1.125


def test_loss_grads_refuse_actions_outside_the_four():
    logits, ones = np.zeros((2, L.N_ACTIONS)), np.ones(2)
    for bad in (np.array([0, -1]), np.array([0, 4]), np.array([0.0, 1.0])):
        with pytest.raises(ValueError, match="actions must be ints"):
            L.grpo_loss_grad(logits, bad, ones, ones, ones, ones, 0.2, 0.04)
        with pytest.raises(ValueError, match="actions must be ints"):
            L.ppo_loss_grad(logits, bad, ones, ones, 0.2, 0.01)


# --- the NumPy trainers against a torch-autograd reference ----------------------------------------
def _two_iterations(algo, cfg, monkeypatch):
    """Train exactly two iterations; return the run and the episodes each iteration collected."""
    from grpo.lander import trainers
    collected, real = [], trainers.play_groups

    def recording(*args, **kwargs):
        ep = real(*args, **kwargs)
        collected.append(ep)
        return ep

    monkeypatch.setattr(trainers, "play_groups", recording)
    spec = dict(eval_every=10**6, val_episodes=1, test_episodes=1, config=cfg)
    L.train(L.RunSpec(algo, 5, 1, **spec))                     # one iteration: how many steps
    first = int(collected[0].lengths.sum())
    collected.clear()
    run = L.train(L.RunSpec(algo, 5, first + 1, **spec))       # so exactly two
    assert len(collected) == 2
    return run, collected


def _reference_grpo(cfg, episodes, seed=5, swap_old_and_ref=False):
    """The same iterations with autograd: torch's log-softmax, ``lander_grpo_loss``, clip_grad_norm_ and
    torch.optim.Adam, in float64 as the NumPy path computes (one minibatch an epoch)."""
    actor = L.make_actor(seed).double()
    opt = torch.optim.Adam(actor.parameters(), lr=cfg.lr, eps=cfg.adam_eps)
    ref = copy.deepcopy(actor)                                 # ref_every > 2: the start policy
    critic = L.make_critic(seed).double() if cfg.baseline == "value" else None
    critic_opt = None if critic is None else torch.optim.Adam(critic.parameters(), lr=cfg.lr,
                                                              eps=cfg.adam_eps)
    for ep in episodes:
        obs = torch.from_numpy(np.concatenate(ep.obs)).double()
        act = torch.from_numpy(np.concatenate(ep.actions)).long()
        w = torch.from_numpy(L.step_weights(ep.lengths))
        to_go = torch.from_numpy(np.concatenate(L.returns_to_go(ep.rewards)))
        with torch.no_grad():
            if critic is None:
                adv = np.repeat(L.outcome_advantages(ep.returns, cfg.group_size), ep.lengths)
            else:
                adv = L.baseline_advantages(to_go.numpy(), cfg.value_scale * critic(obs)[:, 0].numpy())
            logp_old = torch.log_softmax(actor(obs), -1).gather(1, act[:, None])[:, 0]
            logp_ref = torch.log_softmax(ref(obs), -1).gather(1, act[:, None])[:, 0]
        if swap_old_and_ref:
            logp_old, logp_ref = logp_ref, logp_old
        adv = torch.from_numpy(adv)
        for _ in range(cfg.epochs):
            logp = torch.log_softmax(actor(obs), -1).gather(1, act[:, None])[:, 0]
            loss = L.lander_grpo_loss(logp, logp_old, logp_ref, adv, w, cfg.clip, cfg.beta)[0]
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(actor.parameters(), cfg.max_grad_norm)
            opt.step()
            if critic is not None:               # V(s) fitted to G_t / value_scale, its own Adam
                value_loss = ((critic(obs)[:, 0] - to_go / cfg.value_scale) ** 2).mean()
                critic_opt.zero_grad()
                value_loss.backward()
                torch.nn.utils.clip_grad_norm_(critic.parameters(), cfg.max_grad_norm)
                critic_opt.step()
    return {k: v.float() for k, v in actor.state_dict().items()}


def _max_gap(a, b):
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@pytest.mark.parametrize("baseline, value_scale", [("group", 1.0), ("value", 1.0), ("value", 100.0)])
def test_two_grpo_iterations_match_an_autograd_reference_trainer(baseline, value_scale, monkeypatch):
    """train_lander_grpo's NumPy path (FlatMLP, grpo_loss_grad, mlp.Adam) lands on the weights that
    autograd and torch.optim.Adam reach on the same episodes. The second iteration has
    pi_old != pi_ref, so swapping them (a mis-wired trainer) lands elsewhere; for the V(s)
    control, the second iteration's advantages come from the critic the first one trained (on
    G_t / value_scale), so a trainer that ignored value_scale would land elsewhere too."""
    cfg = L.LanderGRPOConfig(group_size=2, prompts=2, epochs=3, minibatch=10**6, ref_every=10,
                       beta=0.5, baseline=baseline, value_scale=value_scale)
    run, episodes = _two_iterations(L.LanderGRPOConfig().algo if baseline == "group" else "grpo_value",
                                    cfg, monkeypatch)
    reference = _reference_grpo(cfg, episodes)
    moved = _max_gap({k: v.float() for k, v in L.make_actor(5).state_dict().items()}, reference)
    assert _max_gap(run.final_state, reference) < 1e-6 < moved / 100
    swapped = _reference_grpo(cfg, episodes, swap_old_and_ref=True)
    assert _max_gap(swapped, reference) > 100 * _max_gap(run.final_state, reference)
    if value_scale != 1.0:
        unscaled = _reference_grpo(dataclasses.replace(cfg, value_scale=1.0), episodes)
        assert _max_gap(unscaled, reference) > 100 * _max_gap(run.final_state, reference)


def _reference_ppo(cfg, rollouts, seed=5, ent_sign=1.0):
    """PPO's iterations with autograd: GAE from the critic, the clipped surrogate, the entropy bonus
    and the value loss, one joint gradient-norm clip and one torch Adam over actor and critic."""
    actor, critic = L.make_actor(seed).double(), L.make_critic(seed).double()
    opt = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=cfg.lr, eps=cfg.adam_eps)
    for s in rollouts:
        T, N = s.actions.shape
        obs = torch.from_numpy(s.obs.reshape(-1, L.OBS_DIM)).double()
        act = torch.from_numpy(s.actions.reshape(-1)).long()
        with torch.no_grad():
            values = critic(obs)[:, 0].numpy().reshape(T, N)
            last_v = critic(torch.from_numpy(s.next_obs).double())[:, 0].numpy()
            rewards = s.rewards.copy()
            for t, i, o in s.truncated:
                rewards[t, i] += cfg.gamma * float(critic(torch.from_numpy(o[None]).double())[0, 0])
            logp_old = torch.log_softmax(actor(obs), -1).gather(1, act[:, None])[:, 0]
        adv, ret = L.gae(rewards, values, s.dones, last_v, cfg.gamma, cfg.lam)
        adv, ret = torch.from_numpy(adv.reshape(-1)), torch.from_numpy(ret.reshape(-1))
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)       # per minibatch (one here), ddof 1 as SB3
        for _ in range(cfg.epochs):
            logp_all = torch.log_softmax(actor(obs), -1)
            logp = logp_all.gather(1, act[:, None])[:, 0]
            surrogate = torch.minimum(torch.exp(logp - logp_old) * adv,
                                      torch.clamp(torch.exp(logp - logp_old), 1 - cfg.clip,
                                                  1 + cfg.clip) * adv)
            entropy = -(logp_all.exp() * logp_all).sum(1)
            value_loss = ((critic(obs)[:, 0] - ret) ** 2).mean()
            loss = -surrogate.mean() - ent_sign * cfg.ent_coef * entropy.mean() + cfg.vf_coef * value_loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_([*actor.parameters(), *critic.parameters()], cfg.max_grad_norm)
            opt.step()
    return {k: v.float() for k, v in actor.state_dict().items()}


def test_two_ppo_iterations_match_an_autograd_reference_trainer(monkeypatch):
    """train_actor_critic's NumPy path (GAE, ppo_loss_grad, the critic's backward, one joint clip
    and Adam) lands on the weights autograd reaches on the same rollouts; a flipped entropy bonus
    lands elsewhere."""
    from grpo.lander import trainers
    rollouts, real = [], trainers.StepCollector.collect

    def recording(self, actor, n_steps):
        s = real(self, actor, n_steps)
        rollouts.append(copy.deepcopy(s))                   # the trainer bootstraps in place
        return s

    monkeypatch.setattr(trainers.StepCollector, "collect", recording)
    cfg = L.ActorCriticConfig(n_envs=2, n_steps=64, epochs=3, minibatch=128, ent_coef=0.2)
    run = L.train(L.RunSpec("ppo", 5, 129, eval_every=10**6, val_episodes=1, test_episodes=1,
                            config=cfg))
    assert len(rollouts) == 2
    reference = _reference_ppo(cfg, rollouts)
    gap = _max_gap(run.final_state, reference)
    assert gap < 1e-6 < _max_gap({k: v.float() for k, v in L.make_actor(5).state_dict().items()},
                                 reference) / 100
    assert _max_gap(_reference_ppo(cfg, rollouts, ent_sign=-1.0), reference) > 100 * gap


def test_ratio_stats_count_the_band_and_approx_kl_by_hand():
    logits = np.zeros((4, 4))                                  # pi = 1/4 everywhere
    logp_old = np.log([0.25, 0.5, 0.2, 0.25])                  # rho = 1, 0.5, 1.25, 1
    frac, kl = L.ratio_stats(logits, np.array([0, 1, 2, 3]), logp_old, clip=0.2)
    rho = np.array([1.0, 0.5, 1.25, 1.0])
    assert frac == 0.5 and np.isclose(kl, np.mean(rho - 1 - np.log(rho)))
    with pytest.raises(ValueError, match="logits must be"):
        L.ratio_stats(logits, np.array([0, 1]), logp_old, clip=0.2)


def test_explained_variance_by_hand():
    target = np.array([1.0, 2.0, 3.0, 4.0])
    assert L.explained_variance(target, target) == 1.0
    assert L.explained_variance(np.full(4, 2.5), target) == 0.0
    assert np.isnan(L.explained_variance(target, np.ones(4)))
    with pytest.raises(ValueError, match="predicted and target"):
        L.explained_variance(target, target[:3])


def test_sleep_gate_reads_the_legs_down_states_only():
    actor = L.make_actor(0)
    with torch.no_grad():                                      # a policy that fires nothing w.p. 0.7
        for p in actor.parameters():
            p.zero_()
        actor[-1].bias.copy_(torch.log(torch.tensor([0.7, 0.1, 0.1, 0.1])))
    up, down = np.zeros((3, 8), np.float32), np.zeros((2, 8), np.float32)
    down[:, 6:] = 1.0                                          # both legs in contact
    ep = L.Episodes([up, down], [np.zeros(3, int), np.zeros(2, int)], [np.zeros(3), np.zeros(2)])
    gate = L.sleep_gate(actor, ep)
    assert gate["legs_down_states"] == 2 and np.isclose(gate["p_no_engine"], 0.7)
    assert np.isclose(gate["p_quiet_run"], 0.7 ** L.SLEEP_STEPS)
    assert np.isnan(L.sleep_gate(actor, L.Episodes([up], [np.zeros(3, int)], [np.zeros(3)]))["entropy"])
    with pytest.raises(ValueError, match="at least one episode"):
        L.sleep_gate(actor, L.Episodes([], [], []))


def test_episode_gae_is_gae_per_episode_with_terminals_and_bootstraps():
    rewards = [np.array([1.0, 2.0, -100.0]), np.array([0.5, 0.5])]       # a crash, then a cut
    values = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    adv, targets = L.episode_gae(rewards, values, [True, False], [9.0, 7.0], gamma=0.9, lam=0.8)
    a1, _ = L.gae(rewards[0][:, None], values[:3, None], np.array([[0], [0], [1]]), np.array([9.0]),
                  0.9, 0.8)
    a2, _ = L.gae(rewards[1][:, None], values[3:, None], np.zeros((2, 1)), np.array([7.0]), 0.9, 0.8)
    assert np.allclose(adv, np.r_[a1[:, 0], a2[:, 0]]) and np.allclose(targets, adv + values)
    assert np.isclose(adv[2], -100.0 - 0.3)                              # the crash: nothing after
    assert np.isclose(adv[4], 0.5 + 0.9 * 7.0 - 0.5)                     # the cut: bootstrapped
    with pytest.raises(ValueError, match="one terminal flag"):
        L.episode_gae(rewards, values[:4], [True, False], [9.0, 7.0], 0.9, 0.8)


def test_terminal_episodes_the_time_input_and_the_unscaled_outcome_advantage():
    ep = L.Episodes([np.zeros((3, 8)), np.zeros((2, 8))], [np.zeros(3, int), np.zeros(2, int)],
                    [np.array([1.0, 1.0, 100.0]), np.array([1.0, -0.5])], [np.zeros(8), np.zeros(8)])
    assert L.ended_at_terminal(ep).tolist() == [True, False]
    x = L.critic_inputs(L.LanderGRPOConfig(group_size=2, prompts=1, baseline="value_time"), ep)
    assert x.shape == (5, 9) and np.allclose(x[:, 8], np.r_[0, 1, 2, 0, 1] / L.TIME_LIMIT)
    assert L.critic_inputs(L.LanderGRPOConfig(group_size=2, prompts=1, baseline="value"), ep).shape == (5, 8)
    adv, _ = L.episode_advantages(L.LanderGRPOConfig(group_size=2, prompts=1, scale_by_std=False), ep)
    assert np.allclose(adv, np.repeat([50.75, -50.75], [3, 2]))          # R - mean, not / std


@pytest.mark.parametrize("field, value", [("scale_by_std", "no"), ("length_weights", 1),
                                          ("gamma", 0.0), ("lam", 1.5), ("baseline", "gea"),
                                          ("value_scale", 0.0), ("value_scale", True)])
def test_the_new_grpo_flags_are_checked(field, value):
    with pytest.raises(ValueError, match=field):
        L.LanderGRPOConfig(**{field: value})


def test_unit_weights_and_the_new_baselines_change_the_run():
    base = dict(group_size=2, prompts=2, minibatch=64, epochs=2)
    runs = {name: L.train(L.RunSpec(cfg.algo, 3, 600, eval_every=300, val_episodes=1, test_episodes=1,
                                    config=cfg)).final_state["4.weight"]
            for name, cfg in (("outcome", L.LanderGRPOConfig(**base)),
                              ("w1", L.LanderGRPOConfig(**base, length_weights=False)),
                              ("gae", L.LanderGRPOConfig(**base, baseline="gae")),
                              ("value_time", L.LanderGRPOConfig(**base, baseline="value_time")),
                              ("value_time_scaled", L.LanderGRPOConfig(**base, baseline="value_time",
                                                                 value_scale=100.0)))}
    for name in ("w1", "gae", "value_time"):
        assert not torch.equal(runs[name], runs["outcome"]), name
    assert not torch.equal(runs["value_time_scaled"], runs["value_time"])


def test_a_scaled_critic_predicts_its_output_times_the_scale():
    from grpo.mlp import FlatMLP
    vf = FlatMLP(L.make_critic(0))
    x = np.random.default_rng(0).normal(size=(5, L.OBS_DIM))
    assert np.array_equal(L.lander_critic_values(vf, x), vf.forward(x)[:, 0])
    assert np.allclose(L.lander_critic_values(vf, x, 100.0), 100.0 * vf.forward(x)[:, 0], rtol=1e-15)


def test_chapter_6s_printed_grpo_reads_top_to_bottom():
    """Chapter 6 prints ``train_lander_grpo`` as "GRPO is PPO minus the critic": plain GRPO in at
    most 40 lines and 20 locals, like CleanRL's loops (the controls and diagnostics attach through
    ``GRPOControls``; the rollout and the batch are ``play_groups`` and ``group_batch``, which the
    gradient-noise study shares)."""
    import inspect

    from grpo.experiments.ch06_lander import gradient_noise
    fn = L.train_lander_grpo
    assert len(inspect.getsource(fn).splitlines()) <= 40
    assert fn.__code__.co_nlocals <= 20
    for name in ("play_groups", "group_batch"):
        assert name in fn.__code__.co_names and name in gradient_noise.batch_gradient.__code__.co_names
