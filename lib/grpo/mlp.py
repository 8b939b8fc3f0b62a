"""Chapter 6's small networks trained in NumPy, with the backward pass written out.

On minibatches of 64 rows through an 8 -> 64 -> 64 -> 4 MLP, autograd's per-operation overhead is
most of the cost (``bench/bench_lander_update.py`` times one PPO minibatch step both ways and writes
the figures to data/bench/06_lander_update.json). The networks stay torch modules
(orthogonal init, ``state_dict``, inference in ``grpo.lander.policy_logits``): ``FlatMLP`` points
their parameters at one flat float64 array, so every in-place update below is what the module
computes with. The tests check ``backward`` and ``Adam`` against autograd and ``torch.optim.Adam``.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn


class FlatMLP:
    """A torch ``Linear, Tanh, Linear, Tanh, Linear`` network run forward and backward in NumPy.

    ``flat`` holds every parameter (the module's tensors are views of it) and ``grad`` the gradient
    of the last ``backward``, in the same layout: [W1, b1, W2, b2, W3, b3] with W shaped (out, in).
    """

    def __init__(self, net: nn.Sequential):
        params = list(net.parameters())
        if len(params) != 6 or [p.ndim for p in params] != [2, 1, 2, 1, 2, 1]:
            raise ValueError(f"FlatMLP needs Linear, Tanh, Linear, Tanh, Linear; got {net}")
        self.flat = np.concatenate([p.detach().numpy().ravel() for p in params]).astype(np.float64)
        self.grad = np.zeros_like(self.flat)
        self.params, self.grads = _views(self.flat, params), _views(self.grad, params)
        with torch.no_grad():
            for p, view in zip(params, self.params):
                p.data = torch.from_numpy(view)   # the module now reads (and sees updates to) flat
        self._cache = None

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Outputs for a (B, in) batch (float64, as the
        weights); keeps the activations for ``backward``."""
        w1, b1, w2, b2, w3, b3 = self.params
        h1 = np.tanh(x @ w1.T + b1)
        h2 = np.tanh(h1 @ w2.T + b2)
        self._cache = (x, h1, h2)
        return h2 @ w3.T + b3

    def backward(self, d_out: np.ndarray) -> None:
        """``grad`` = d loss / d parameters, given d loss / d outputs of the last ``forward``."""
        x, h1, h2 = self._cache
        w1, _, w2, _, w3, _ = self.params
        gw1, gb1, gw2, gb2, gw3, gb3 = self.grads
        np.dot(d_out.T, h2, out=gw3)
        gb3[:] = d_out.sum(0)
        d2 = (d_out @ w3) * (1 - h2 * h2)        # tanh' = 1 - tanh^2
        np.dot(d2.T, h1, out=gw2)
        gb2[:] = d2.sum(0)
        d1 = (d2 @ w2) * (1 - h1 * h1)
        np.dot(d1.T, x, out=gw1)
        gb1[:] = d1.sum(0)


def _views(buffer: np.ndarray, params) -> list:
    out, start = [], 0
    for p in params:
        out.append(buffer[start:start + p.numel()].reshape(p.shape))
        start += p.numel()
    return out


class Adam:
    """``clip_grad_norm_`` over all the nets' gradients jointly, then ``torch.optim.Adam`` (no
    weight decay), in NumPy on each ``FlatMLP``'s flat arrays, in place."""

    def __init__(self, nets, lr: float, eps: float = 1e-8, max_grad_norm: float = float("inf"),
                 betas=(0.9, 0.999)):
        if not (lr > 0 and eps > 0 and max_grad_norm > 0 and all(0 <= b < 1 for b in betas)):
            raise ValueError(f"need lr > 0, eps > 0, max_grad_norm > 0, betas in [0, 1): "
                             f"{lr}, {eps}, {max_grad_norm}, {betas}")
        self.nets, self.lr, self.eps, self.betas = list(nets), lr, eps, betas
        self.max_grad_norm = max_grad_norm
        self.m = [np.zeros_like(n.flat) for n in self.nets]
        self.v = [np.zeros_like(n.flat) for n in self.nets]
        self.t = 0

    def step(self) -> float:
        """One update from the nets' current ``grad``; returns the gradient norm before clipping."""
        norm = float(np.sqrt(sum(np.dot(n.grad, n.grad) for n in self.nets)))
        if not np.isfinite(norm):
            raise ValueError(f"gradient norm is {norm}: a NaN or inf reached the gradients")
        scale = min(1.0, self.max_grad_norm / (norm + 1e-6))   # torch's clip_coef, clamped
        self.t += 1
        b1, b2 = self.betas
        step_size = self.lr / (1 - b1 ** self.t)
        root_bias2 = math.sqrt(1 - b2 ** self.t)
        for net, m, v in zip(self.nets, self.m, self.v):
            g = net.grad * scale
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            net.flat -= step_size * m / (np.sqrt(v) / root_bias2 + self.eps)
        return norm
