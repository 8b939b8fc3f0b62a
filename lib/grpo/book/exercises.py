"""The checks behind the chapters' exercises: each runs a reader's function on a few fixed cases
and prints one line, ``correct``, ``not attempted yet``, or one sentence naming the mistake it
found (the sample std where GRPO uses the population one, a missing mask, a flipped sign, ...).

Every check compares against the library function the chapter teaches (imported, never copied),
and recognises a mistake by what the library gives under the mistaken setting (``grpo_loss`` with
the token average, ``gae`` with lambda = 1, ...) or by a case built to expose it. A stub as the
notebook ships it raises NotImplementedError and reads ``not attempted yet``, so Run All runs to
the end; any other exception of the reader's code becomes one sentence, never a traceback. The
cases are fixed or drawn from seeded generators, so a notebook prints the same line on every run
(nbval compares it). Each check returns a ``CheckOutcome``; the texts of the exercises, their
stubs and solutions are in ``grpo.book.exercise_texts``.

Chapters 3 and 6-12 import torch, the lander or the language model inside their checks, so that
chapters 1, 2, 4 and 5 load none of them.
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from grpo.kl import exact_kl, kl_k1, kl_k2, kl_k3, random_pair
from grpo.lm.verifier import (CALCULATION_READINGS, check_annotations, last_number,
                               random_rewards, read_calculation, reward)
from grpo.objectives import clip_mask, group_advantages, grpo_advantages
from grpo.toy import lava
from grpo.toy.algos import grad_log_pi, policy_gradient, step_divisors

CHECK_STATUSES = ("correct", "mistake", "not attempted")


@dataclass(frozen=True)
class CheckOutcome:
    """What a check found: ``status`` (one of ``CHECK_STATUSES``) and the line it printed."""
    status: str
    line: str

    def _ipython_display_(self):
        """The check has printed its line already: a notebook shows nothing more."""


class _NotAttempted(Exception):
    """The reader's function still raises NotImplementedError."""


class _Mistake(Exception):
    """A sentence naming what is wrong with the reader's function."""


def _outcome(check, fn, run) -> CheckOutcome:
    """Run ``run(fn)``; print its line and return the outcome. ``run`` raises ``_Mistake`` with
    a hint, or returns None or a short phrase said after ``correct``."""
    if not callable(fn):
        raise ValueError(f"{check}(fn): fn must be the function you wrote (such as my_...), got "
                         f"{type(fn).__name__} {fn!r:.40}")
    try:
        praise = run(fn)
    except _NotAttempted:
        status, line = "not attempted", "not attempted yet"
    except _Mistake as mistake:
        status, line = "mistake", str(mistake)
    else:
        status, line = "correct", "correct" + (f": {praise}" if praise else "")
    print(line)
    return CheckOutcome(status, line)


def _call(fn, *args, raised=None):
    """``fn(*args)`` on copies of the arguments, warnings silenced (one printed line, nothing
    else); NotImplementedError means not attempted, any other exception is the reader's mistake
    (``raised(exc)`` may give a sentence for it)."""
    args = tuple(a.clone() if hasattr(a, "clone") else a.copy() if hasattr(a, "copy") else a
                 for a in args)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fn(*args)
    except NotImplementedError:
        raise _NotAttempted from None
    except Exception as exc:          # the reader's code: say what it raised, in one sentence
        hint = raised(exc) if raised else None
        message = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        raise _Mistake(hint or f"your function raised {type(exc).__name__}"
                       + (f": {message}" if message else "")) from None


def _numbers(out, shape, what: str) -> np.ndarray:
    """The reader's return value as a float array of ``shape`` (a tensor is read as NumPy)."""
    if out is None:
        raise _Mistake(f"your function returned None: it should return {what}")
    if hasattr(out, "detach"):
        out = out.detach().cpu().numpy()
    try:
        a = np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        raise _Mistake(f"your function returned {type(out).__name__}, not {what}") from None
    if a.shape != tuple(shape) and not (shape == () and a.size == 1):
        raise _Mistake(f"your function returned shape {a.shape}: it should return {what}, shape "
                       f"{tuple(shape)}")
    return a.reshape(shape)


def _close(a, b, rtol=1e-6, atol=1e-9) -> bool:
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _show(x) -> str:
    """A few numbers as the hints print them."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return f"{float(x):.4g}"
    more = ", ..." if x.size > 8 else ""
    return "[" + ", ".join(f"{v:.4g}" for v in x.ravel()[:8]) + more + "]"


def _nan_hint(a, where: str) -> None:
    if not np.isfinite(a).all():
        raise _Mistake(f"your function returned NaN or inf {where}")


# ---------------------------------------------------------------------------- chapter 1: lava

def _floor(lava_tiles) -> np.ndarray:
    floor = np.zeros(lava.N_TILES, dtype=bool)
    floor[list(lava_tiles)] = True
    return floor


def _exact_score_cases():
    """(what the case is, floor, LEAP probability per tile), simplest first."""
    rng = np.random.default_rng(101)
    cases = [("a floor with no lava", _floor([]), np.full(lava.N_TILES, 0.5)),
             ("a floor with lava on tile 1, always STEP", _floor([1]), np.zeros(lava.N_TILES)),
             ("a floor with lava on tile 2, always LEAP", _floor([2]), np.ones(lava.N_TILES)),
             ("a floor with lava on tiles 10 and 11, LEAP with probability 0.3",
              _floor([10, 11]), np.full(lava.N_TILES, 0.3))]
    for k in range(3):
        cases.append((f"random floor {k + 1} with a random LEAP probability on every tile",
                      lava.make_floor(rng), rng.random(lava.N_TILES)))
    return cases


_SWEEP_ADVICE = {
    "a floor with no lava": "with no lava every run reaches the dock, so the score is 1",
    "a floor with lava on tile 1, always STEP": "the run steps into lava on tile 1 and scores "
                                                "1/39 (a lava tile t is worth t/39, not 0)",
    "a floor with lava on tile 2, always LEAP": "a LEAP from tile 0 lands on tile 2 or 3, each "
                                                "with probability 1/2",
}


def _past_the_dock(exc) -> str | None:
    if isinstance(exc, IndexError):
        return (f"your function raised IndexError ({exc}): a LEAP from tile 38 lands on 40 or "
                "41, so give the tiles past 39 the dock's value, 1")
    return None


def check_exact_score(fn) -> CheckOutcome:
    """Chapter 1: ``fn(floor, q)``, the exact expected score of a policy that LEAPs with
    probability ``q[t]`` on tile t, against ``lava.tile_values``, the sweep ``exact_score``
    runs."""
    def run(fn):
        for what, floor, q in _exact_score_cases():
            got = _numbers(_call(fn, floor, q, raised=_past_the_dock), (), "one number, V(0)")
            want = lava.tile_values(floor, q[None, None])[0][0, 0]
            if not _close(got, want):
                advice = _SWEEP_ADVICE.get(what, "check V(t) = (1-q)V(t+1) + q(V(t+2)+V(t+3))/2, "
                                                 "t/39 on lava and 1 from tile 39 on")
                raise _Mistake(f"on {what} your score is {_show(got)} but the exact score is "
                               f"{_show(want)}: {advice}")
        return "every floor matches lava.tile_values"
    return _outcome("check_exact_score", fn, run)


def check_omniscient_score(fn) -> CheckOutcome:
    """Chapter 1: ``fn(floor)``, the best expected score of a bot that knows its tile and the
    floor, against ``lava.omniscient_score``."""
    rng = np.random.default_rng(102)
    cases = [("a floor with no lava", _floor([])),
             ("a floor with one one-tile channel on tile 10", _floor([10])),
             ("a floor with one two-tile channel on tiles 10 and 11", _floor([10, 11]))]
    cases += [(f"random floor {k + 1}", lava.make_floor(rng)) for k in range(3)]

    def run(fn):
        for what, floor in cases:
            got = _numbers(_call(fn, floor, raised=_past_the_dock), (), "one number, V(0)")
            want = lava.omniscient_score(floor).score
            if not _close(got, want):
                advice = {"a floor with one one-tile channel on tile 10":
                          "a LEAP from tile 9 always clears a one-tile channel, so the best "
                          "score is 1",
                          "a floor with one two-tile channel on tiles 10 and 11":
                          "the best any bot can do there is the 50/50 LEAP from tile 9"}.get(
                              what, "take the better of STEP and LEAP on every tile")
                raise _Mistake(f"on {what} your best score is {_show(got)} but omniscient_score "
                               f"gives {_show(want)}: {advice}")
        return "the bound matches omniscient_score on every floor"
    return _outcome("check_omniscient_score", fn, run)


# ---------------------------------------------------------------------------- chapter 2: REINFORCE

def check_grad_log_pi(fn) -> CheckOutcome:
    """Chapter 2: ``fn(W, s, a)``, the (4, 2) gradient of log pi(a|s), against
    ``algos.grad_log_pi``."""
    rng = np.random.default_rng(201)
    cases = [(np.zeros((4, 2)), lava.PATTERNS[lava.PATTERN_NAMES.index("L..")], lava.LEAP)]
    cases += [(rng.normal(size=(4, 2)), lava.PATTERNS[i], m) for i, m in ((0, 0), (6, 1), (3, 0))]

    def run(fn):
        for W, s, a in cases:
            got = _numbers(_call(fn, W, s, a), (4, 2),
                           "one row per sensor and one column per move")
            want = grad_log_pi(W, s, a)
            where = f"at sensors {lava.pattern_name(s)} and move {lava.MOVES[a]}"
            if _close(got, want):
                continue
            if _close(got, -want):
                raise _Mistake(f"the sign is flipped {where}: the column of the move taken rises "
                               "by 1 - pi(a|s), the other falls by as much")
            if _close(got, np.outer(s, np.eye(2)[a])):
                raise _Mistake(f"you left out - pi(.|s) {where}: the gradient is s (e_a - pi)^T, "
                               "so each row sums to 0")
            raise _Mistake(f"{where} your gradient is {_show(got)} but grad_log_pi gives "
                           f"{_show(want)} (rows lava +1, +2, +3, bias; columns STEP, LEAP)")
        return "it matches grad_log_pi"
    return _outcome("check_grad_log_pi", fn, run)


def _one_run(seed: int):
    """One run of a random policy on a floor, as (W, sensor rows, moves, score)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=0.5, size=(4, 2))
    r = lava.play(lava.make_floor(rng), W, rng)
    return W, r.sensors, r.moves, r.score


def check_reinforce_gradient(fn) -> CheckOutcome:
    """Chapter 2: ``fn(W, S, moves, score)``, REINFORCE's ascent direction for one run, against
    ``algos.policy_gradient`` with the run's score on every step."""
    runs = [_one_run(seed) for seed in (202, 203, 204)]

    def run(fn):
        for W, S, moves, score in runs:
            got = _numbers(_call(fn, W, S, moves, score), (4, 2), "a (4, 2) direction like W")
            want = policy_gradient(W, S, moves, np.full(len(moves), score))
            if _close(got, want):
                continue
            n = len(moves)
            for wrong, hint in ((-want, "the sign is flipped: REINFORCE climbs, W += lr * "
                                        "gradient, so the moves taken become more likely"),
                                (n * want, f"you summed over the run's {n} steps: the update "
                                           "takes their mean"),
                                (want / score, "you left out the run's score: it weights "
                                               "every step's grad log pi")):
                if _close(got, wrong):
                    raise _Mistake(hint)
            raise _Mistake(f"for a run of {n} moves scoring {score:.3f} your direction is "
                           f"{_show(got)} but policy_gradient gives {_show(want)}")
        return "it matches policy_gradient"
    return _outcome("check_reinforce_gradient", fn, run)


# ---------------------------------------------------------------------------- chapter 3: PPO

# rho inside and outside the band, with a good and a bad advantage: the chapter's six cases
_RHO = np.array([1.0, 1.3, 0.7, 1.0, 1.3, 0.7, 1.1, 0.85, 1.25, 0.75])
_ADV = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0, 0.4, -2.0, -0.3, 0.6])
_EPS = 0.2


def check_clipped_surrogate(fn) -> CheckOutcome:
    """Chapter 3: ``fn(rho, adv, eps)``, each step's min(rho*A, clip(rho, 1-eps, 1+eps)*A),
    against ``grpo.surrogate.clipped_surrogate``."""
    def run(fn):
        got = _numbers(_call(fn, _RHO, _ADV, _EPS), _RHO.shape, "one value per step")
        import torch                        # after the reader's call: a stub loads no torch

        from grpo.surrogate import clipped_surrogate
        logp_old = torch.zeros(len(_RHO), dtype=torch.float64)
        value, _ = clipped_surrogate(torch.log(torch.as_tensor(_RHO)), logp_old,
                                     torch.as_tensor(_ADV), _EPS)
        want = value.numpy()
        if _close(got, want):
            return "it matches clipped_surrogate on all ten steps"
        clipped = np.clip(_RHO, 1 - _EPS, 1 + _EPS) * _ADV
        for wrong, hint in ((np.maximum(_RHO * _ADV, clipped), "you took the max of the two "
                             "terms: PPO takes the min, the pessimistic one"),
                            (_RHO * _ADV, "you left out the clip: a step whose ratio left the "
                             "band in its advantage's direction must stop counting"),
                            (clipped, "you return the clipped term alone: the min keeps rho*A "
                             "where it is lower, which is what lets a correction through")):
            if _close(got, wrong):
                raise _Mistake(hint)
        k = int(np.flatnonzero(~np.isclose(got, want))[0])
        raise _Mistake(f"at rho = {_RHO[k]:g}, A = {_ADV[k]:+g} your value is {_show(got[k])} "
                       f"but clipped_surrogate gives {_show(want[k])}")
    return _outcome("check_clipped_surrogate", fn, run)


def check_clipped_steps(fn) -> CheckOutcome:
    """Chapter 3: ``fn(rho, adv, eps)``, True where the clip takes a step's gradient away,
    against ``grpo.objectives.clip_mask``."""
    def run(fn):
        out = _call(fn, _RHO, _ADV, _EPS)
        got = _numbers(out, _RHO.shape, "one True/False per step")
        want = clip_mask(_RHO, _ADV, _EPS)
        if not np.isin(got, (0, 1)).all():
            raise _Mistake("your function should return True or False for each step, not "
                           f"{_show(got)}")
        if np.array_equal(got.astype(bool), want):
            return "the clip takes the gradient from exactly those steps"
        outside = np.abs(_RHO - 1) > _EPS
        if np.array_equal(got.astype(bool), outside):
            raise _Mistake("you flagged every step outside the band: a correction, outside the "
                           "band against its advantage's direction, keeps its gradient")
        k = int(np.flatnonzero(got.astype(bool) != want)[0])
        says = "takes this step's gradient away" if want[k] else "leaves this step its gradient"
        raise _Mistake(f"at rho = {_RHO[k]:g}, A = {_ADV[k]:+g} you said {bool(got[k])}, but "
                       f"the clip {says}")
    return _outcome("check_clipped_steps", fn, run)


# ---------------------------------------------------------------------------- chapter 4: GRPO

def check_group_advantages(fn) -> CheckOutcome:
    """Chapter 4: ``fn(scores)``, one group's advantages, against ``grpo_advantages``
    (population std, exactly 0 for a group whose scores are all equal)."""
    rng = np.random.default_rng(401)
    groups = [np.array([1.0, 1.0, 0, 0, 0, 0, 0, 0]), np.round(rng.random(8), 3),
              np.round(rng.random(4), 3), np.full(8, 0.1), np.full(8, 0.0),
              np.full(3, 0.7)]            # its mean is not exactly 0.7 in floating point

    def run(fn):
        for r in groups:
            got = _numbers(_call(fn, r), r.shape, "one advantage per score")
            want = grpo_advantages(r)
            equal = bool(np.all(r == r[0]))
            if equal and not np.isfinite(got).all():
                raise _Mistake(f"your advantages are NaN or inf for a group whose scores are all "
                               f"{r[0]:g}: such a group carries no signal and must give exactly 0")
            _nan_hint(got, f"for the group {_show(r)}")
            if _close(got, want, atol=1e-6) and (not equal or np.all(got == 0)):
                continue
            if equal:
                raise _Mistake(f"for a group whose scores are all {r[0]:g} your advantages are "
                               f"{_show(got)}: such a group carries no signal and must give "
                               "exactly 0 (test for it before dividing)")
            G = len(r)
            if _close(got, want * np.sqrt((G - 1) / G), atol=1e-6):
                raise _Mistake("you divided by the sample std (ddof=1): GRPO divides by the "
                               "population std, NumPy's default np.std(r)")
            if _close(got, r - r.mean(), atol=1e-6):
                raise _Mistake("you left out the division by the group's std")
            raise _Mistake(f"for the group {_show(r)} your advantages are {_show(got)} but "
                           f"grpo_advantages gives {_show(want)}")
        return "population std, and 0 for a group that all scores the same"
    return _outcome("check_group_advantages", fn, run)


def check_step_divisors(fn) -> CheckOutcome:
    """Chapter 4: ``fn(run, G, averaging)``, each step's divisor d_n under "batch_steps",
    "per_answer" and "constant", against ``algos.step_divisors``."""
    rng = np.random.default_rng(402)
    group = lava.play_steps(lava.make_floor(rng), np.zeros((4, 2)), 8, rng)
    hints = {"batch_steps": "every step is divided by N, the group's total number of steps",
             "per_answer": "a step of run i is divided by G * |o_i|: the mean within its run, "
                           "then over the G runs",
             "constant": "every step is divided by G * 39, the longest possible group"}

    def run(fn):
        for averaging, hint in hints.items():
            got = _numbers(_call(fn, group.run, group.G, averaging), group.run.shape,
                           "one divisor per step")
            want = step_divisors(group.run, group.G, averaging)
            if not _close(got, want):
                raise _Mistake(f"under {averaging!r} your divisors are {_show(got)} but "
                               f"step_divisors gives {_show(want)}: {hint}")
        return "all three averages match step_divisors"
    return _outcome("check_step_divisors", fn, run)


# ---------------------------------------------------------------------------- chapter 5: k3

def check_kl_estimates(fn) -> CheckOutcome:
    """Chapter 5: ``fn(logp, logp_ref)`` returns (k1, k2, k3), against ``kl_k1``, ``kl_k2`` and
    ``kl_k3``; a pair whose log-ratio is 1e-8 needs expm1."""
    rng = np.random.default_rng(501)
    logp = np.log(rng.uniform(0.05, 0.9, size=6))
    logp_ref = np.log(rng.uniform(0.05, 0.9, size=6))
    tiny = np.array([-1.0, -2.0]), np.array([-1.0 + 1e-8, -2.0 - 1e-8])

    def run(fn):
        out = _call(fn, logp, logp_ref)
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise _Mistake("your function should return the three estimates as a tuple "
                           "(k1, k2, k3)")
        k1, k2, k3 = (_numbers(k, logp.shape, "one estimate per token") for k in out)
        for name, got, lib in (("k1", k1, kl_k1), ("k2", k2, kl_k2), ("k3", k3, kl_k3)):
            want = lib(logp, logp_ref)
            if _close(got, want):
                continue
            if _close(got, lib(logp_ref, logp)):
                raise _Mistake(f"your {name} swaps the two log-probabilities: x = pi_ref / "
                               "pi_theta, so log x = logp_ref - logp")
            if name == "k2" and _close(got, 2 * want):
                raise _Mistake("your k2 is missing its 1/2: k2 = (log x)^2 / 2")
            raise _Mistake(f"your {name} is {_show(got)} but kl_{name} gives {_show(want)}")
        small = _numbers(_call(fn, *tiny)[2], (2,), "k3 per token")
        want = kl_k3(*tiny)
        if not _close(small, want, rtol=1e-3, atol=0):
            raise _Mistake(f"at a log-ratio of 1e-8 your k3 is {_show(small)} instead of "
                           f"{_show(want)}: exp(u) - u - 1 cancels to noise, compute it as "
                           "np.expm1(u) - u")
        return "k1, k2 and k3 match the library, to the last digits at u = 1e-8"
    return _outcome("check_kl_estimates", fn, run)


def check_expected_k3(fn) -> CheckOutcome:
    """Chapter 5: ``fn(p_theta, p_ref)``, the exact mean of k3 over tokens drawn from p_theta,
    against ``exact_kl``: k3 is unbiased, so the two agree."""
    rng = np.random.default_rng(502)
    pairs = [random_pair(rng, 50, sigma) for sigma in (0.3, 1.0, 3.0)]

    def run(fn):
        for p, q in pairs:
            got = float(_numbers(_call(fn, p, q), (), "one number, the mean of k3"))
            want = float(exact_kl(p, q))
            if _close(got, want, rtol=1e-9):
                continue
            k3 = kl_k3(np.log(p), np.log(q))
            if _close(got, float(np.sum(q * k3)), rtol=1e-9):
                raise _Mistake("you weighted each token by pi_ref: the tokens are drawn from "
                               "pi_theta, so weight k3 by pi_theta(a)")
            if _close(got, float(np.mean(k3)), rtol=1e-9):
                raise _Mistake("you took a plain mean over the vocabulary: weight each token's "
                               "k3 by its probability pi_theta(a)")
            if _close(got, float(exact_kl(q, p)), rtol=1e-9):
                raise _Mistake("that is KL(pi_ref || pi_theta): k3 estimates KL(pi_theta || "
                               "pi_ref), with x = pi_ref / pi_theta and tokens from pi_theta")
            raise _Mistake(f"your mean of k3 is {_show(got)} but the exact KL is {_show(want)}")
        return "the mean of k3 is the exact KL on every pair: k3 is unbiased"
    return _outcome("check_expected_k3", fn, run)


# ---------------------------------------------------------------------------- chapter 6: lander

# one short flight: it descends well, drifts, and crashes
_FLIGHT = np.array([2.0, 1.5, 1.0, -1.0, -2.0, -100.0])
_FLIGHT_VALUES = np.array([-10.0, -20.0, -30.0, -45.0, -60.0, -80.0])


def check_returns_to_go(fn) -> CheckOutcome:
    """Chapter 6: ``fn(rewards)``, each step's return-to-go for one flight, against
    ``grpo.lander.returns_to_go``."""
    rng = np.random.default_rng(601)
    flights = [_FLIGHT, np.round(rng.normal(size=9), 2)]

    def run(fn):
        from grpo.lander import returns_to_go
        for r in flights:
            got = _numbers(_call(fn, r), r.shape, "one return per step")
            want = returns_to_go([r])[0]
            if _close(got, want):
                continue
            for wrong, hint in ((want - r, "each step's return-to-go includes its own reward: "
                                           "G_t = r_t + r_(t+1) + ..., yours starts one step "
                                           "later"),
                                (np.cumsum(r), "you summed the rewards up to each step: the "
                                               "return-to-go sums from the step to the end"),
                                (np.full(len(r), r.sum()), "you gave every step the flight's "
                                 "whole return, GRPO's one score: count only the rewards from "
                                 "the step on")):
                if _close(got, wrong):
                    raise _Mistake(hint)
            raise _Mistake(f"for rewards {_show(r)} your returns are {_show(got)} but "
                           f"returns_to_go gives {_show(want)}")
        return "it matches returns_to_go"
    return _outcome("check_returns_to_go", fn, run)


def check_gae(fn) -> CheckOutcome:
    """Chapter 6: ``fn(rewards, values, gamma, lam)``, GAE's advantages for one flight that ends
    in a crash (worth 0 after its last step), against ``grpo.lander.gae``."""
    rng = np.random.default_rng(602)
    flights = [(_FLIGHT, _FLIGHT_VALUES, 0.9, 0.8),
               (np.round(rng.normal(size=8), 2), np.round(rng.normal(size=8), 2), 0.99, 0.95)]

    def run(fn):
        from grpo.lander import gae
        for rewards, values, gamma, lam in flights:
            def library(lam=lam, done=1.0, last=0.0):
                dones = np.zeros((len(rewards), 1))
                dones[-1] = done
                return gae(rewards[:, None], values[:, None], dones, np.array([last]), gamma,
                           lam)[0][:, 0]
            got = _numbers(_call(fn, rewards, values, gamma, lam), rewards.shape,
                           "one advantage per step")
            want = library()
            if _close(got, want):
                continue
            for wrong, hint in ((want + values, "you returned the value targets A + V: return "
                                                "the advantages"),
                                (library(lam=1.0), "your credit does not fade with lambda: a TD "
                                                   "error k steps ahead counts (gamma lambda)^k"),
                                (library(done=0.0, last=values[0]), "after the crash the flight "
                                 "is worth 0, but you bootstrapped from V of its first step"),
                                (library(done=0.0, last=values[-1]), "after the crash the flight "
                                 "is worth 0: do not bootstrap past its last step")):
                if _close(got, wrong):
                    raise _Mistake(hint)
            k = int(np.flatnonzero(~np.isclose(got, want))[-1])
            raise _Mistake(f"at step {k} of a {len(rewards)}-step flight your advantage is "
                           f"{_show(got[k])} but gae gives {_show(want[k])}: delta_t = r_t + "
                           "gamma V(s_(t+1)) - V(s_t), with 0 after the crash, and A_t = delta_t + "
                           "gamma lambda A_(t+1)")
        return "it matches gae, step by step"
    return _outcome("check_gae", fn, run)


# ---------------------------------------------------------------------------- chapter 7: verifier

# (completion, reference answer, what the case tests): the verifier's reward is the truth
_REWARD_CASES = [
    ("#### 72", "72", "the plain case"),
    ("Natalia sold 48+24 = <<48+24=72>>72 clips.\n#### 72", "72", "a worked solution"),
    ("#### 1,200", "1200", "a comma between thousands"),
    ("#### $1,200 dollars.", "1200", "a dollar sign and words after the number"),
    ("#### 12.0", "12", "12.0 is the number 12"),
    ("#### -3.50", "-3.5", "a sign and a trailing zero"),
    ("The answer is 72.", "72", "no '####' line: it must not pay"),
    ("#### seventy-two", "72", "a number in words: it must not pay"),
    ("#### 720", "72", "720 is not 72: compare whole numbers"),
    ("#### 72 apples\nThen 30 more.", "72", "the number on the '####' line, not a later one"),
    ("My guess is #### 72.\nNo, wait:\n#### 27", "72", "only the last '####' counts"),
    ("72 ####", "72", "a number before '####': it must not pay"),
    ("#### the answer is 72", "72", "words between '####' and the number: it must not pay"),
    (None, "72", "a completion that is not a string: it scores 0, and never raises"),
]


def check_reward(fn) -> CheckOutcome:
    """Chapter 7: ``fn(completion, answer)``, 1.0 when the number after the last '####' is the
    answer, else 0.0, against ``grpo.lm.verifier.reward`` on cases that must pay and must not."""
    def run(fn):
        for completion, answer, what in _REWARD_CASES:
            out = _call(fn, completion, answer, raised=lambda exc, what=what: (
                f"your reward raised {type(exc).__name__} on {what.split(':')[0]}: the verifier "
                "never raises, anything it cannot read scores 0"))
            got = float(_numbers(out, (), "1.0 or 0.0"))
            want = reward(completion, answer)
            if got != want:
                raise _Mistake(f"your reward gives {got:g} for {completion!r} with answer "
                               f"{answer!r}, the verifier {want:g} ({what})")
        return f"all {len(_REWARD_CASES)} cases pay as the verifier does"
    return _outcome("check_reward", fn, run)


_ANNOTATION_CASES = [
    ("Natalia sold 48/2 = <<48/2=24>>24 clips in May.", "a right annotation"),
    ("She has 47+14=<<47+14=48>>48 cards.", "a wrong one"),
    ("<<(2+3)*4=20>>20 and <<20/8=2.5>>2.5", "parentheses and a decimal"),
    ("<<3*4=12.0>>12", "12.0 is 12"),
    ("<<1,200/2=600>>600", "a comma between thousands"),
    ("<<7/0=0>>0", "a division by zero: not right, and no exception"),
    ("She counts <<len('abc')=3>>3 letters.", "Python, not arithmetic: read it with safe_arith, "
                                              "never eval"),
    ("<<2+2=4>>4, <<4*4=15>>15, <<15-5=10>>10", "three in one answer"),
    ("She had 4 apples.", "no annotation at all"),
]


def check_annotation_reading(fn) -> CheckOutcome:
    """Chapter 7: ``fn(text)``, one True/False per ``<<expr=value>>``, against
    ``grpo.lm.verifier.check_annotations``."""
    def run(fn):
        for text, what in _ANNOTATION_CASES:
            out = _call(fn, text)
            try:
                got = [bool(x) for x in out]
            except TypeError:
                raise _Mistake("your function should return a list with one True/False per "
                               f"annotation, not {type(out).__name__}") from None
            want = [a["ok"] for a in check_annotations(text)]
            if got != want:
                raise _Mistake(f"for {text!r} you read {got}, the verifier {want} ({what})")
        return "every annotation read as the verifier reads it, none of them run"
    return _outcome("check_annotation_reading", fn, run)


# ---------------------------------------------------------------------------- chapter 8: the loss

def _loss_batch():
    """Two groups of four answers of unequal lengths, the padding filled with junk (a loss that
    forgets the mask counts it), and ratios that reach past the clip."""
    import torch
    gen = torch.Generator().manual_seed(801)
    lengths = torch.tensor([3, 7, 2, 5, 6, 1, 4, 7])
    mask = (torch.arange(7) < lengths[:, None]).double()
    logp_old = -torch.rand(8, 7, generator=gen, dtype=torch.float64) * 3 - 0.1
    logp = logp_old + torch.randn(8, 7, generator=gen, dtype=torch.float64) * 0.3
    logp_old = torch.where(mask > 0, logp_old, torch.full_like(logp_old, -7.0))
    logp = torch.where(mask > 0, logp, torch.full_like(logp, -0.5))
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]], dtype=torch.float64)
    return logp, logp_old, mask, rewards


def _by_hand(batch, aggregation: str, padded: bool = False, ddof: int = 0) -> float:
    """Chapter 8's loss (beta 0, clip 0.2) written out with one usual mistake: each answer (or the
    batch) divided by the padded width instead of its tokens, or the group's sample std."""
    import torch

    from grpo.surrogate import clipped_surrogate
    logp, logp_old, mask, rewards = batch
    centred = rewards - rewards.mean(1, keepdim=True)
    adv = (centred / (rewards.std(1, correction=ddof, keepdim=True) + 1e-8)).reshape(-1, 1)
    surrogate, _ = clipped_surrogate(logp, logp_old, adv)
    kept = surrogate * mask
    if aggregation == "sequence":
        per_answer = kept.sum(1) / (mask.shape[1] if padded else mask.sum(1))
        return float(-per_answer.mean())
    return float(-kept.sum() / (torch.tensor(float(mask.numel())) if padded else mask.sum()))


def _loss_check(name, fn, aggregation, other, other_hint):
    """The shared body of chapter 8's two checks: ``fn(logp, logp_old, mask, rewards)`` against
    ``grpo_loss`` (beta 0, clip 0.2, z-scored advantages) under ``aggregation``."""
    def run(fn):
        import torch

        from grpo.lm.grpo import LossOptions, grpo_loss
        batch = _loss_batch()
        logp, logp_old, mask, rewards = batch

        def library(**changes):
            options = LossOptions(**{"beta": 0.0, "aggregation": aggregation, **changes})
            return float(grpo_loss(logp, logp_old, None, mask, rewards, options)[0])
        got = float(_numbers(_call(fn, *batch), (), "one number, the loss"))
        want = library()
        if _close(got, want):
            return f"it matches grpo_loss ({aggregation!r} average), padding and clip included"
        unmasked = grpo_loss(logp, logp_old, None, torch.ones_like(mask), rewards,
                             LossOptions(beta=0.0, aggregation=aggregation))[0]
        swapped = grpo_loss(logp_old, logp, None, mask, rewards,
                            LossOptions(beta=0.0, aggregation=aggregation))[0]
        for wrong, hint in ((_by_hand(batch, aggregation, padded=True),
                             "you divided by the padded width: divide each answer by its own "
                             "number of tokens, mask.sum(1)" if aggregation == "sequence" else
                             "you averaged over every position, padding included: divide by the "
                             "number of completion tokens, mask.sum()"),
                            (_by_hand(batch, aggregation, ddof=1),
                             "your advantages divide by the sample std (torch's .std() default, "
                             "ddof=1): GRPO's group std is the population std, unbiased=False"),
                            (float(swapped), "logp and logp_old are swapped: the ratio is "
                                             "exp(logp - logp_old), the new policy over the old"),
                            (-want, "the sign is flipped: the loss is minus the objective"),
                            (float(unmasked), "your loss counts the padding: multiply by the mask "
                                              "before you sum"),
                            (library(aggregation=other), other_hint),
                            (library(clip=False), "your loss ignores the clip: use "
                                                  "clipped_surrogate, not rho * A"),
                            (library(advantage="center"), "your advantages are not divided by "
                                                          "the group's std"),
                            (library(advantage="raw"), "you used the rewards as advantages: "
                                                       "subtract the group's mean and divide by "
                                                       "its std")):
            if _close(got, wrong):
                raise _Mistake(hint)
        raise _Mistake(f"your loss is {got:.6f} but grpo_loss gives {want:.6f}")
    return _outcome(name, fn, run)


def check_grpo_loss(fn) -> CheckOutcome:
    """Chapter 8: ``fn(logp, logp_old, mask, rewards)``, DeepSeekMath's loss with beta = 0 (each
    answer's tokens averaged, then the answers), against ``grpo_loss``."""
    return _loss_check("check_grpo_loss", fn, "sequence", "token",
                       "you averaged over all tokens of the batch (DAPO's token-level loss): "
                       "DeepSeekMath averages each answer's own tokens first, 1/|o_i|")


def check_token_level_loss(fn) -> CheckOutcome:
    """Chapter 8: ``fn(logp, logp_old, mask, rewards)``, the token-level loss with beta = 0 (one
    mean over every completion token of the batch), against ``grpo_loss(aggregation="token")``."""
    return _loss_check("check_token_level_loss", fn, "token", "sequence",
                       "that is DeepSeekMath's average, each answer first: the token-level loss "
                       "divides the batch's token sum by its total number of tokens")


# ---------------------------------------------------------------------------- chapter 9: pass@k

def check_pass_at_k(fn) -> CheckOutcome:
    """Chapter 9: ``fn(n, c, k)``, the unbiased pass@k of a problem with c right answers among n
    samples, against ``grpo.lm.eval.pass_at_k``."""
    cases = [(8, 2, 1), (8, 2, 4), (10, 0, 3), (10, 10, 1), (16, 3, 8), (20, 5, 10), (5, 4, 3),
             (256, 7, 64)]

    def run(fn):
        from grpo.lm.eval import pass_at_k

        for n, c, k in cases:
            def fewer_wrong(exc, n=n, c=c, k=k):
                return (f"your function raised {type(exc).__name__} for n = {n}, c = {c}, k = {k}: "
                        "with fewer than k wrong answers, every draw of k holds a right one, so "
                        "pass@k = 1")
            got = float(_numbers(_call(fn, n, c, k, raised=fewer_wrong if n - c < k else None),
                                 (), "one number, a probability"))
            want = pass_at_k(np.array([[1] * c + [0] * (n - c)]), k)
            if _close(got, want):
                continue
            if _close(got, c / n) and k > 1:
                raise _Mistake(f"you return c/n whatever k (here {k}): that is pass@1; pass@k is "
                               "the chance that at least one of k answers is right")
            if _close(got, 1 - (1 - c / n) ** k):
                raise _Mistake("you drew the k answers with replacement, which is biased: draw k "
                               "of the n without replacement, 1 - C(n-c, k) / C(n, k)")
            if _close(got, 1 - want):
                raise _Mistake("you return the chance that all k are wrong: pass@k is one minus "
                               "that")
            raise _Mistake(f"for n = {n}, c = {c}, k = {k} your pass@k is {_show(got)} but "
                           f"pass_at_k gives {_show(want)}")
        return "unbiased, as Chen et al. estimate it"
    return _outcome("check_pass_at_k", fn, run)


def check_random_reward(fn) -> CheckOutcome:
    """Chapter 9: ``fn(verifier_rewards, uniforms)``, the control reward that ignores the answers
    and pays as often as the verifier did on the batch, against
    ``grpo.lm.verifier.random_rewards``."""
    rng = np.random.default_rng(901)
    batches = [(rng.random(16) < p).astype(float) for p in (0.25, 0.5, 0.8)]
    uniforms = [rng.random(16) for _ in batches]

    def run(fn):
        for paid, u in zip(batches, uniforms):
            got = _numbers(_call(fn, paid, u), paid.shape, "one reward per answer")
            want = np.array(random_rewards(u, paid.mean()))
            if np.array_equal(got, want):
                continue
            if np.array_equal(got, paid):
                raise _Mistake("your reward is the verifier's: the control must ignore the "
                               "answers and pay at random")
            if np.array_equal(got, (u >= paid.mean()).astype(float)):
                raise _Mistake("you pay where the uniform is above the rate, which pays 1 - rate "
                               "of the time: pay where it is below")
            raise _Mistake(f"your rewards are {_show(got)} but random_rewards gives "
                           f"{_show(want)}: pay 1 where the uniform falls below the batch's "
                           "verifier success rate")
        return "it pays as often as the verifier, never because an answer was right"
    return _outcome("check_random_reward", fn, run)


# ---------------------------------------------------------------------------- chapter 10: groups

def check_degenerate_share(fn) -> CheckOutcome:
    """Chapter 10: ``fn(rewards)``, the share of groups (rows) whose rewards are all equal, against
    the ``degenerate_fraction`` that ``grpo_loss`` logs."""
    rng = np.random.default_rng(1001)
    batches = [np.array([[0, 0, 0, 0], [1, 0, 1, 1], [1, 1, 1, 1], [0, 0, 1, 0], [0, 0, 0, 0]],
                        dtype=float),
               (rng.random((16, 8)) < 0.15).astype(float),
               np.round(rng.random((6, 4)), 1), np.ones((3, 8)),
               # ties away from 0 and 1; equal floats whose std is a hair above 0 ([0.1] * 3)
               np.array([[0.1, 0.1, 0.1], [0.7, 0.7, 0.7], [0.1, 0.2, 0.1], [0.3, 0.3, 0.3]])]

    def run(fn):
        import torch

        from grpo.lm.grpo import LossOptions, grpo_loss
        for r in batches:
            got = float(_numbers(_call(fn, r), (), "one number, a share"))
            t = torch.as_tensor(r)
            zeros = torch.zeros(r.size, 1, dtype=torch.float64)
            want = grpo_loss(zeros, zeros, None, torch.ones_like(zeros), t,
                             LossOptions(beta=0.0))[1]["degenerate_fraction"]
            if _close(got, want):
                continue
            binary_ties = np.mean((r == 0).all(1) | (r == 1).all(1))
            if _close(got, np.mean((r == 0).all(1))) and not _close(got, binary_ties):
                raise _Mistake("you counted only the all-wrong groups: an all-right group has "
                               "zero advantage too")
            if _close(got, want * len(r)):
                raise _Mistake("you return the number of groups: return their share of the "
                               "batch")
            if _close(got, binary_ties):
                raise _Mistake("you counted only groups of all 0s or all 1s: rewards need not be "
                               "0/1, and a group that ties at any value, (0.7, 0.7, 0.7), has zero "
                               "advantage too")
            if _close(got, np.mean(r.std(1) == 0)):
                raise _Mistake("testing std == 0 misses ties: equal floats can give a std a hair "
                               "above 0 (try [0.1, 0.1, 0.1]); compare each reward with its "
                               "row's first")
            raise _Mistake(f"for a batch of {len(r)} groups your share is {_show(got)} but "
                           f"grpo_loss logs {_show(want)}")
        return "it matches the degenerate_fraction the runs log"
    return _outcome("check_degenerate_share", fn, run)


def _answers_that_teach(p, G, teaches) -> float:
    """The expected number of answers in groups whose reward pattern ``teaches``, over every one
    of the 2^G patterns of G answers, each right with its problem's probability p."""
    patterns = np.array(list(itertools.product((0.0, 1.0), repeat=G)))         # (2^G, G)
    right = patterns.sum(1)
    chance = np.array([pb ** right * (1 - pb) ** (G - right) for pb in p])       # (B, 2^G)
    return float(G * (chance * teaches(patterns)).sum())


def check_effective_batch(fn) -> CheckOutcome:
    """Chapter 10: ``fn(p, G)``, the expected number of answers in a batch that carry a gradient,
    when problem b's answers are right with probability p[b]: summed over every reward pattern of a
    group, with ``group_advantages`` deciding which patterns teach (any advantage not 0)."""
    cases = [(np.array([0.05, 0.2, 0.5, 0.8, 0.95]), 8), (np.array([0.0, 0.3, 1.0]), 4),
             (np.array([0.5, 0.5]), 2)]

    def run(fn):
        for p, G in cases:
            got = float(_numbers(_call(fn, p, G), (), "one number, the expected answers"))
            want = _answers_that_teach(p, G, lambda r: (group_advantages(r) != 0).any(1))
            if _close(got, want):
                continue
            only_wrong = _answers_that_teach(p, G, lambda r: r.any(1))
            if _close(got, only_wrong):
                raise _Mistake("you removed only the all-wrong groups: an all-right group "
                               "teaches nothing too")
            if _close(got, want / G):
                raise _Mistake(f"you counted groups: the effective batch counts answers, G = {G} "
                               "for each group that teaches")
            raise _Mistake(f"for p = {_show(p)} and G = {G} you expect {_show(got)} answers, "
                           f"but {_show(want)} carry a gradient on average")
        return "the expected number of answers that carry a gradient"
    return _outcome("check_effective_batch", fn, run)


# ---------------------------------------------------------------------------- chapter 11: four ways

_READING_CASES = [
    ("Omar has 8 shells.", "1+7=8", "no equation at all"),
    ("Omar has 7 - 1 = 6 shells.", "1+7=8", "the wrong operation"),
    ("Omar has 7 + 1 = 9 shells.", "1+7=8", "the problem's calculation with a false result: the "
     "operands of + may come in either order, so 7 + 1 is the calculation 1+7"),
    ("Omar has 7 + 1 = 8 shells.", "1+7=8", "operands of + may come in either order"),
    ("Omar has 7 + 2 = 9 shells.", "1+7=8", "another operand"),
    ("Omar has 7 + 1 + 0 = 8 shells.", "1+7=8", "three operands are another calculation"),
    ("She has 4 - 10 = -6 left.", "10-4=6", "the operands of - keep their order"),
    ("She has 10 - 4 = 6 left.", "10-4=6", "the calculation, done right"),
    ("He packs 12 / 3 = 5 per box.", "12/3=4", "a slip in a division"),
    ("First 2 * 3 = 6, then 2 * 3 = 7.", "2*3=6", "only the first equation counts"),
    ("He buys 8 = 7 + 1 in all.", "1+7=8", "a result written first is not read as an equation"),
]


def check_read_calculation(fn) -> CheckOutcome:
    """Chapter 11: ``fn(text, calculation)``, one of the four readings of an answer's first
    equation, against ``grpo.lm.verifier.read_calculation``."""
    def run(fn):
        for text, calculation, what in _READING_CASES:
            got = _call(fn, text, calculation)
            want = read_calculation(text, calculation)
            if got not in CALCULATION_READINGS:
                raise _Mistake(f"your function returned {got!r}: it should return one of "
                               f"{', '.join(CALCULATION_READINGS)}")
            if got != want:
                raise _Mistake(f"{text!r} against {calculation!r}: you read {got!r}, the verifier "
                               f"{want!r} ({what})")
        return "every answer falls in the verifier's bin"
    return _outcome("check_read_calculation", fn, run)


_LAST_NUMBER_CASES = [
    ("Omar has 7 + 1 = 8 shells.", "the result of an equation"),
    ("So she has 1,200.", "a comma between thousands, then a full stop"),
    ("It costs $3.50.", "a dollar sign and a trailing zero"),
    ("She had 12.0 apples.", "12.0 is 12"),
    ("It was -4 degrees.", "a sign"),
    ("No number here.", "no number: None"),
    ("1 2 3 4 5 6 7 8", "a list of every number up to the answer: why this reward is gameable"),
    ("The answer is 8. I checked it twice, in 2 ways.", "the last number, even after the answer"),
    (None, "not a string: None, and no exception"),
]


def check_last_number(fn) -> CheckOutcome:
    """Chapter 11: ``fn(text)``, the last number of a text, normalised (or None), against
    ``grpo.lm.verifier.last_number``."""
    def run(fn):
        for text, what in _LAST_NUMBER_CASES:
            got = _call(fn, text)
            want = last_number(text)
            if got != want:
                raise _Mistake(f"for {text!r} you read {got!r}, the reward reads {want!r} "
                               f"({what})")
        return "it reads the number the reward reads"
    return _outcome("check_last_number", fn, run)


# ---------------------------------------------------------------------------- chapter 12: practice

DIAGNOSES = ("healthy", "groups_teach_nothing", "truncation", "learning_rate_too_high",
             "learning_rate_too_low", "format_only")
_ITERATIONS = 10


def _series(start, end, noise, rng, decimals=3, low=0.0):
    """A series that moves from ``start`` to ``end`` over the iterations, with a little noise."""
    values = np.linspace(start, end, _ITERATIONS) + noise * rng.normal(size=_ITERATIONS)
    return [float(v) for v in np.round(np.maximum(values, low), decimals)]


# the planted runs: each failure's (start, end) for every series the logs hold
_PLANTED = {
    "A": ("format_only", {"reward_mean": (0.20, 0.60), "degenerate_fraction": (0.40, 0.30),
                          "clipped_ratio": (0.00, 0.00), "completion_length_mean": (60, 22),
                          "entropy_mean": (1.20, 0.70), "kl_mean": (0.000, 0.060),
                          "held_out_greedy": (0.20, 0.55),
                          "held_out_right_calculation": (0.30, 0.30)}),
    "B": ("truncation", {"reward_mean": (0.10, 0.11), "degenerate_fraction": (0.70, 0.70),
                         "clipped_ratio": (0.60, 0.62), "completion_length_mean": (24, 24),
                         "entropy_mean": (0.90, 0.88), "kl_mean": (0.000, 0.004),
                         "held_out_greedy": (0.10, 0.10),
                         "held_out_right_calculation": (0.31, 0.32)}),
    "C": ("learning_rate_too_low", {"reward_mean": (0.35, 0.35),
                                    "degenerate_fraction": (0.35, 0.35),
                                    "clipped_ratio": (0.01, 0.01),
                                    "completion_length_mean": (40, 40),
                                    "entropy_mean": (0.90, 0.90), "kl_mean": (0.0, 0.00002),
                                    "held_out_greedy": (0.36, 0.36),
                                    "held_out_right_calculation": (0.35, 0.35)}),
    "D": ("healthy", {"reward_mean": (0.35, 0.60), "degenerate_fraction": (0.35, 0.30),
                      "clipped_ratio": (0.01, 0.01), "completion_length_mean": (40, 38),
                      "entropy_mean": (0.90, 0.80), "kl_mean": (0.000, 0.020),
                      "held_out_greedy": (0.36, 0.47),
                      "held_out_right_calculation": (0.35, 0.46)}),
    "E": ("learning_rate_too_high", {"reward_mean": (0.35, 0.00),
                                     "degenerate_fraction": (0.35, 0.95),
                                     "clipped_ratio": (0.01, 0.30),
                                     "completion_length_mean": (40, 90),
                                     "entropy_mean": (0.90, 3.50), "kl_mean": (0.0, 2.50),
                                     "held_out_greedy": (0.36, 0.00),
                                     "held_out_right_calculation": (0.35, 0.00)}),
    "F": ("groups_teach_nothing", {"reward_mean": (0.02, 0.02),
                                   "degenerate_fraction": (0.95, 0.95),
                                   "clipped_ratio": (0.02, 0.02),
                                   "completion_length_mean": (40, 41),
                                   "entropy_mean": (0.90, 0.90), "kl_mean": (0.0, 0.0005),
                                   "held_out_greedy": (0.03, 0.03),
                                   "held_out_right_calculation": (0.03, 0.03)}),
}
# how much each series wanders from iteration to iteration
_NOISE = {"reward_mean": 0.02, "degenerate_fraction": 0.02, "clipped_ratio": 0.005,
          "completion_length_mean": 1.0, "entropy_mean": 0.02, "kl_mean": 0.0,
          "held_out_greedy": 0.01, "held_out_right_calculation": 0.01}
_DECIMALS = {"completion_length_mean": 1, "kl_mean": 5}     # the rest: 3


def failure_logs() -> dict[str, dict[str, list[float]]]:
    """Chapter 12's six planted runs, by name ("A" to "F"): each a dict of series, one value per
    iteration, named as the book's runs log them (``clipped_ratio`` as TRL does). One is healthy;
    each other one shows one failure of ``DIAGNOSES``."""
    rng = np.random.default_rng(1201)
    return {name: {key: _series(*ends, _NOISE[key], rng, _DECIMALS.get(key, 3))
                   for key, ends in series.items()}
            for name, (_, series) in _PLANTED.items()}


def failure_table(runs: dict):
    """``failure_logs``' runs as a table a reader can scan: each series' first and last value,
    one column a run."""
    from grpo.book.display import markdown_table
    if not isinstance(runs, dict) or not runs:
        raise ValueError("runs must be failure_logs()' dict of runs")
    first = next(iter(runs.values()))
    return markdown_table(["series: first → last", *runs],
                          [[f"`{key}`", *(f"{runs[name][key][0]:g} → {runs[name][key][-1]:g}"
                                          for name in runs)] for key in first])


def _why_not(name, logs, label) -> str:
    """What in run ``name``'s logs speaks against the reader's ``label``."""
    def ends(key):
        return f"its {key} goes from {logs[key][0]:g} to {logs[key][-1]:g}"

    def mean(key):
        return f"its {key} averages {np.mean(logs[key]):.2f}"
    # the confusions a reader is likely to make, each answered with the series that settles it
    near_miss = {
        ("B", "groups_teach_nothing"): "many of its groups do teach nothing, but ask why: "
                                       + mean("clipped_ratio"),
        ("E", "truncation"): "its answers reach the budget only as " + ends("entropy_mean")[4:],
        ("E", "groups_teach_nothing"): "its groups stop teaching only as "
                                       + ends("entropy_mean")[4:],
        ("F", "learning_rate_too_low"): "nothing moves, but " + mean("degenerate_fraction")
                                        + ": no group has a signal to follow",
    }
    return near_miss.get((name, label)) or {
        "healthy": ends("held_out_right_calculation"),
        "groups_teach_nothing": mean("degenerate_fraction"),
        "truncation": mean("clipped_ratio"),
        "learning_rate_too_high": ends("entropy_mean") + ", and " + ends("kl_mean")[4:],
        "learning_rate_too_low": ends("kl_mean"),
        "format_only": ends("held_out_greedy") + ", and "
                       + ends("held_out_right_calculation")[4:]}[label]


def check_diagnosis(fn) -> CheckOutcome:
    """Chapter 12: ``fn(logs)`` names one run's failure, one of ``DIAGNOSES``; checked on the six
    planted runs of ``failure_logs`` against the label each was planted with."""
    def run(fn):
        runs = failure_logs()
        for name, logs in runs.items():
            got = _call(fn, logs)
            planted = _PLANTED[name][0]
            if got not in DIAGNOSES:
                raise _Mistake(f"for run {name} you answered {got!r}: answer one of "
                               f"{', '.join(DIAGNOSES)}")
            if got != planted:
                raise _Mistake(f"run {name} is not {got}: {_why_not(name, logs, got)}")
        return "all six runs named as they were planted"
    return _outcome("check_diagnosis", fn, run)


def check_loss_at_ratio_one(fn) -> CheckOutcome:
    """Chapter 12: ``fn(lengths, rewards)``, the loss TRL logs for one group under
    ``loss_type="dapo"`` at rho = 1 and beta = 0, with TRL's advantages, against ``grpo_loss``
    (``advantage="trl"``, ``aggregation="token"``)."""
    cases = [([10, 50], [1.0, 0.0]), ([12, 30, 8, 20], [1.0, 0.0, 1.0, 0.0]),
             ([5, 9, 14, 3, 7, 11], [0.0, 1.0, 1.0, 0.0, 0.0, 1.0]), ([6, 9], [1.0, 1.0])]

    def run(fn):
        import torch

        from grpo.lm.grpo import LossOptions, grpo_loss

        def library(lengths, rewards, **changes):
            L = torch.tensor(lengths)
            mask = (torch.arange(int(L.max())) < L[:, None]).double()
            logp = torch.zeros(mask.shape, dtype=torch.float64)
            options = LossOptions(**{"advantage": "trl", "beta": 0.0, "aggregation": "token",
                                     **changes})
            r = torch.tensor([rewards], dtype=torch.float64)
            return float(grpo_loss(logp, logp, None, mask, r, options)[0])
        for lengths, rewards in cases:
            got = float(_numbers(_call(fn, np.array(lengths), np.array(rewards)), (),
                                 "one number, the loss"))
            want = library(lengths, rewards)
            if _close(got, want):
                continue
            for wrong, hint in ((-want, "the sign is flipped: the loss is minus the "
                                        "length-weighted mean advantage"),
                                (library(lengths, rewards, aggregation="sequence"),
                                 "that is loss_type='grpo', each answer averaged first, which is "
                                 "exactly 0 at rho = 1: 'dapo' weights each answer by its length"),
                                (library(lengths, rewards, advantage="zscore"),
                                 "TRL divides by the sample std (ddof=1) plus 1e-4, not the "
                                 "population std")):
                if _close(got, wrong):
                    raise _Mistake(hint)
            raise _Mistake(f"for lengths {lengths} and rewards {rewards} your loss is {got:.4f} "
                           f"but grpo_loss gives {want:.4f}")
        return "the loss moves with who was longer, before anything is learned"
    return _outcome("check_loss_at_ratio_one", fn, run)
