"""One PPO minibatch step on chapter 6's networks: autograd and torch.optim against the NumPy path
(``grpo.lander.ppo_loss_grad``, ``grpo.mlp.FlatMLP`` and ``grpo.mlp.Adam``). (`make bench`)

Both do the same step on the same 64 rows: actor and critic forward, the clipped surrogate with the
entropy bonus and the value loss, backward, joint gradient-norm clip 0.5, Adam. The autograd side is
the code the trainers ran before the NumPy path (``loss.backward()``, ``clip_grad_norm_``, fused
Adam). One thread, 2,048 steps each after 256 warm-up steps, the best of 3 repeats.
Writes data/bench/06_lander_update.json.
"""
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from grpo.objectives import log_softmax
from grpo import lander
from grpo.mlp import Adam, FlatMLP
from grpo.surrogate import clipped_surrogate
from benchfile import write_bench

N, MB, STEPS, WARMUP, REPEATS = 16_384, 64, 2_048, 256, 3
OUT = Path(__file__).resolve().parents[1] / "data" / "bench" / "06_lander_update.json"


def data():
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((N, lander.OBS_DIM)).astype(np.float32)
    return (obs, rng.integers(0, lander.N_ACTIONS, N), rng.standard_normal(N).astype(np.float32),
            rng.standard_normal(N).astype(np.float32), rng.permutation(N))


def autograd_steps(n):
    obs, act, adv, ret, order = data()
    actor, critic = lander.make_actor(0), lander.make_critic(0)
    params = list(actor.parameters()) + list(critic.parameters())
    opt = torch.optim.Adam(params, lr=3e-4, eps=1e-5, fused=True)
    # float64, as the networks (the NumPy path upcasts the same float32 arrays)
    b_obs, b_adv, b_ret = (torch.from_numpy(x.astype(np.float64)) for x in (obs, adv, ret))
    b_act = torch.from_numpy(act)
    with torch.no_grad():
        b_logp_old = torch.log_softmax(actor(b_obs), -1).gather(1, b_act[:, None])[:, 0]
    for i in range(n):
        mb = torch.from_numpy(order[(i * MB) % N:(i * MB) % N + MB])
        logp_all = torch.log_softmax(actor(b_obs[mb]), -1)
        logp = logp_all.gather(1, b_act[mb, None])[:, 0]
        a = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
        surr, _ = clipped_surrogate(logp, b_logp_old[mb], a, 0.2)
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        value_loss = ((critic(b_obs[mb])[:, 0] - b_ret[mb]) ** 2).mean()
        loss = -surr.mean() + 0.5 * value_loss - 0.01 * entropy.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 0.5)
        opt.step()


def numpy_steps(n):
    obs, act, adv, ret, order = data()
    pi, vf = FlatMLP(lander.make_actor(0)), FlatMLP(lander.make_critic(0))
    opt = Adam([pi, vf], lr=3e-4, eps=1e-5, max_grad_norm=0.5)
    logp_old = log_softmax(pi.forward(obs))[np.arange(N), act]
    for i in range(n):
        mb = order[(i * MB) % N:(i * MB) % N + MB]
        a = (adv[mb] - adv[mb].mean()) / (adv[mb].std(ddof=1) + 1e-8)
        d_logits, _ = lander.ppo_loss_grad(pi.forward(obs[mb]), act[mb], logp_old[mb], a, 0.2, 0.01)
        pi.backward(d_logits)
        vf.backward((2 * 0.5 / MB * (vf.forward(obs[mb])[:, 0] - ret[mb]))[:, None])
        opt.step()


def per_step_us(fn):
    fn(WARMUP)
    best = float("inf")
    for _ in range(REPEATS):
        t = time.process_time()
        fn(STEPS)
        best = min(best, time.process_time() - t)
    return 1e6 * best / STEPS


def main():
    torch.set_num_threads(1)
    slow, fast = per_step_us(autograd_steps), per_step_us(numpy_steps)
    out = {"minibatch": MB, "steps": STEPS, "autograd_cpu_us_per_step": round(slow, 1),
           "numpy_cpu_us_per_step": round(fast, 1), "speedup": round(slow / fast, 2),
           "torch": torch.__version__, "numpy": np.__version__,
           "note": "CPU microseconds per PPO minibatch step (forward, loss, backward, clip, Adam), best of 3"}
    write_bench(OUT, out, indent=1, sort_keys=False)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
