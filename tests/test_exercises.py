"""The chapters' exercises (issue 71): every solution passes its check, every stub reads ``not
attempted yet``, and a planted wrong answer per exercise draws the hint that names its mistake;
the same for the solutions and stubs as the notebooks carry them, once inserted; and the
insertion (``grpo.book.exercise_texts.with_exercises``, which ``.ci/insert_exercises.py`` runs)
puts one section at a notebook's end, replaces only its own cells, and keeps each chapter within
the course's limits on prose."""
from __future__ import annotations

import ast
import copy
import json
import re
import time

import numpy as np
import pytest
import torch

import chapter_size
from test_markdown_lines import accidental_list_lines
from test_lessons import FIRST_HALF, LESSON, over
from toc import ROOT, toc_chapters
from grpo.book import exercises as checks
from grpo.book.exercise_texts import (EXERCISES, MARKER, Exercise, chapter_exercises,
                                      exercise_cells, exercise_minutes, with_exercises)
from grpo.book.prose import lesson_counts, measure

BY_KEY = {(e.chapter, e.letter): e for e in EXERCISES}


def namespace() -> dict:
    """What a chapter's exercise cells find defined above them: what the first stub imports."""
    return {"failure_table": checks.failure_table, "failure_logs": checks.failure_logs,
            "DIAGNOSES": checks.DIAGNOSES}


def run_check(exercise: Exercise, source: str, capsys) -> checks.CheckOutcome:
    """Define the function ``source`` writes, run the exercise's check on it; the printed line."""
    ns = namespace()
    exec(compile(source, f"<exercise {exercise.chapter}{exercise.letter}>", "exec"), ns)
    capsys.readouterr()
    outcome = getattr(checks, exercise.checker)(ns[exercise.function])
    printed = capsys.readouterr().out
    assert printed == outcome.line + "\n", "a check prints exactly its one line"
    return outcome


# ----------------------------------------------------------------------------- the exercises

def test_every_chapter_has_two_or_three_exercises_of_5_to_20_minutes():
    assert sorted({e.chapter for e in EXERCISES}) == sorted(toc_chapters())
    for chapter in toc_chapters():
        found = chapter_exercises(chapter)
        assert 2 <= len(found) <= 3, chapter
        assert [e.letter for e in found] == ["A", "B", "C"][:len(found)]
    assert all(5 <= e.minutes <= 20 for e in EXERCISES)
    assert exercise_minutes() == {n: sum(e.minutes for e in chapter_exercises(n))
                                  for n in toc_chapters()}


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: f"{e.chapter}{e.letter}")
def test_the_stub_is_the_solutions_function_raising_not_implemented(exercise):
    stub = next(n for n in ast.parse(exercise.stub).body if isinstance(n, ast.FunctionDef))
    solved = next(n for n in ast.parse(exercise.solution).body if isinstance(n, ast.FunctionDef)
                  and n.name == stub.name)
    assert ast.get_docstring(stub), "the stub's docstring says what to return"
    assert isinstance(stub.body[-1], ast.Raise) and "NotImplementedError" in ast.unparse(stub.body[-1])
    assert [a.arg for a in stub.args.args] == [a.arg for a in solved.args.args]
    assert exercise.check == f"{exercise.checker}({exercise.function})"
    assert exercise.checker.startswith("check_") and hasattr(checks, exercise.checker)


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: f"{e.chapter}{e.letter}")
def test_the_solution_is_correct_and_the_stub_not_attempted(exercise, capsys):
    solved = run_check(exercise, exercise.solution, capsys)
    assert solved.status == "correct" and solved.line.startswith("correct"), solved.line
    stub = run_check(exercise, exercise.stub, capsys)
    assert (stub.status, stub.line) == ("not attempted", "not attempted yet")


# A planted wrong answer for each exercise, and words of the hint that must name its mistake.
WRONG = {
    (1, "A"): [
        ("lava worth 0", """
def my_exact_score(floor, q):
    V = np.ones(42)
    for t in range(38, -1, -1):
        V[t] = 0.0 if floor[t] else (1 - q[t]) * V[t + 1] + q[t] * (V[t + 2] + V[t + 3]) / 2
    return V[0]
""", "worth t/39, not 0"),
        ("no room past the dock", """
def my_exact_score(floor, q):
    V = np.ones(40)
    for t in range(38, -1, -1):
        V[t] = t / 39 if floor[t] else (1 - q[t]) * V[t + 1] + q[t] * (V[t + 2] + V[t + 3]) / 2
    return V[0]
""", "give the tiles past 39 the dock's value"),
        ("a leap of 1 or 2 tiles", """
def my_exact_score(floor, q):
    V = np.ones(42)
    for t in range(38, -1, -1):
        V[t] = t / 39 if floor[t] else (1 - q[t]) * V[t + 1] + q[t] * (V[t + 1] + V[t + 2]) / 2
    return V[0]
""", "lands on tile 2 or 3")],
    (1, "B"): [("a coin on every tile", """
def my_omniscient_score(floor):
    V = np.ones(42)
    for t in range(38, -1, -1):
        V[t] = t / 39 if floor[t] else (V[t + 1] + (V[t + 2] + V[t + 3]) / 2) / 2
    return V[0]
""", "always clears a one-tile channel")],
    (2, "A"): [
        ("sign", """
def my_grad_log_pi(W, s, a):
    z = s @ W
    pi = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    return np.outer(s, pi - np.eye(2)[a])
""", "the sign is flipped"),
        ("no - pi", "def my_grad_log_pi(W, s, a):\n    return np.outer(s, np.eye(2)[a])\n",
         "you left out - pi(.|s)"),
        ("transposed", """
def my_grad_log_pi(W, s, a):
    z = s @ W
    pi = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    return np.outer(np.eye(2)[a] - pi, s)
""", "returned shape (2, 4)")],
    (2, "B"): [
        ("sum", "from grpo.toy.algos import grad_log_pi\n"
                "def my_reinforce_gradient(W, S, moves, score):\n"
                "    return score * sum(grad_log_pi(W, s, a) for s, a in zip(S, moves))\n",
         "you summed over the run's"),
        ("no score", "from grpo.toy.algos import grad_log_pi\n"
                     "def my_reinforce_gradient(W, S, moves, score):\n"
                     "    return np.mean([grad_log_pi(W, s, a) for s, a in zip(S, moves)], 0)\n",
         "you left out the run's score"),
        ("descent", "from grpo.toy.algos import grad_log_pi\n"
                    "def my_reinforce_gradient(W, S, moves, score):\n"
                    "    return -score * np.mean([grad_log_pi(W, s, a) for s, a in zip(S, moves)], 0)\n",
         "the sign is flipped")],
    (3, "A"): [
        ("max", "def my_clipped_objective(rho, adv, eps):\n"
                "    return np.maximum(rho * adv, np.clip(rho, 1 - eps, 1 + eps) * adv)\n",
         "you took the max"),
        ("no clip", "def my_clipped_objective(rho, adv, eps):\n    return rho * adv\n",
         "you left out the clip"),
        ("clip alone", "def my_clipped_objective(rho, adv, eps):\n"
                       "    return np.clip(rho, 1 - eps, 1 + eps) * adv\n",
         "the clipped term alone")],
    (3, "B"): [
        ("outside the band", "def my_clipped_steps(rho, adv, eps):\n"
                             "    return np.abs(rho - 1) > eps\n",
         "you flagged every step outside the band"),
        ("one side", "def my_clipped_steps(rho, adv, eps):\n"
                     "    return (adv > 0) & (rho > 1 + eps)\n",
         "at rho = 0.7, A = -1 you said False, but the clip takes this step's gradient away")],
    (4, "A"): [
        ("sample std", """
def my_group_advantages(scores):
    r = np.asarray(scores, dtype=float)
    if np.all(r == r[0]):
        return np.zeros_like(r)
    return (r - r.mean()) / (r.std(ddof=1) + 1e-8)
""", "you divided by the sample std (ddof=1)"),
        ("no guard, no eps", """
def my_group_advantages(scores):
    r = np.asarray(scores, dtype=float)
    return (r - r.mean()) / r.std()
""", "must give exactly 0"),
        ("NaN", """
def my_group_advantages(scores):
    r = np.asarray(scores, dtype=float)
    if np.all(r == 0):
        return r / r
    return (r - r.mean()) / (r.std() + 1e-8)
""", "NaN or inf for a group whose scores are all 0"),
        ("eps, no guard", """
def my_group_advantages(scores):
    r = np.asarray(scores, dtype=float)
    return (r - r.mean()) / (r.std() + 1e-8)
""", "are all 0.7 your advantages are [1.11e-08")],
    (4, "B"): [
        ("per answer without G", """
def my_step_divisors(run, G, averaging):
    run = np.asarray(run)
    if averaging == "batch_steps":
        return np.full(len(run), len(run))
    if averaging == "per_answer":
        return np.bincount(run, minlength=G)[run]
    return np.full(len(run), G * 39)
""", "under 'per_answer'"),
        ("constant without G", """
def my_step_divisors(run, G, averaging):
    run = np.asarray(run)
    if averaging == "batch_steps":
        return np.full(len(run), len(run))
    if averaging == "per_answer":
        return G * np.bincount(run, minlength=G)[run]
    return np.full(len(run), 39)
""", "under 'constant'")],
    (5, "A"): [
        ("swapped", "def my_kl_estimates(logp, logp_ref):\n    u = logp - logp_ref\n"
                    "    return -u, u**2 / 2, np.expm1(u) - u\n",
         "your k1 swaps the two log-probabilities"),
        ("k2 without a half", "def my_kl_estimates(logp, logp_ref):\n    u = logp_ref - logp\n"
                              "    return -u, u**2, np.expm1(u) - u\n",
         "your k2 is missing its 1/2"),
        ("naive k3", "def my_kl_estimates(logp, logp_ref):\n    u = logp_ref - logp\n"
                     "    return -u, u**2 / 2, np.exp(u) - u - 1\n",
         "np.expm1(u) - u"),
        ("two of three", "def my_kl_estimates(logp, logp_ref):\n    u = logp_ref - logp\n"
                         "    return -u, u**2 / 2\n",
         "as a tuple (k1, k2, k3)")],
    (5, "B"): [
        ("weighted by pi_ref", "def my_expected_k3(p_theta, p_ref):\n"
                               "    u = np.log(p_ref) - np.log(p_theta)\n"
                               "    return np.sum(p_ref * (np.expm1(u) - u))\n",
         "you weighted each token by pi_ref"),
        ("plain mean", "def my_expected_k3(p_theta, p_ref):\n"
                       "    u = np.log(p_ref) - np.log(p_theta)\n"
                       "    return np.mean(np.expm1(u) - u)\n",
         "a plain mean over the vocabulary")],
    (6, "A"): [
        ("one step late", "def my_returns_to_go(rewards):\n"
                          "    return np.cumsum(rewards[::-1])[::-1] - rewards\n",
         "includes its own reward"),
        ("so far", "def my_returns_to_go(rewards):\n    return np.cumsum(rewards)\n",
         "you summed the rewards up to each step"),
        ("the whole return", "def my_returns_to_go(rewards):\n"
                             "    return np.full(len(rewards), rewards.sum())\n",
         "the flight's whole return")],
    (6, "B"): [
        ("value targets", """
def my_gae(rewards, values, gamma, lam):
    out, adv, next_v = np.zeros(len(rewards)), 0.0, 0.0
    for t in reversed(range(len(rewards))):
        adv = rewards[t] + gamma * next_v - values[t] + gamma * lam * adv
        out[t], next_v = adv + values[t], values[t]
    return out
""", "you returned the value targets"),
        ("no lambda", """
def my_gae(rewards, values, gamma, lam):
    out, adv, next_v = np.zeros(len(rewards)), 0.0, 0.0
    for t in reversed(range(len(rewards))):
        adv = rewards[t] + gamma * next_v - values[t] + gamma * adv
        out[t], next_v = adv, values[t]
    return out
""", "does not fade with lambda"),
        ("wraps around", """
def my_gae(rewards, values, gamma, lam):
    T = len(rewards)
    out, adv = np.zeros(T), 0.0
    for t in reversed(range(T)):
        adv = rewards[t] + gamma * values[(t + 1) % T] - values[t] + gamma * lam * adv
        out[t] = adv
    return out
""", "bootstrapped from V of its first step")],
    (7, "A"): [
        ("strings, not numbers", """
def my_reward(completion, answer):
    if not isinstance(completion, str) or "####" not in completion:
        return 0.0
    return 1.0 if completion.rsplit("####", 1)[1].strip() == answer else 0.0
""", "(a comma between thousands)"),
        ("anywhere on the line", """
import re
def my_reward(completion, answer):
    if not isinstance(completion, str) or "####" not in completion:
        return 0.0
    line = completion.rsplit("####", 1)[1].split("\\n", 1)[0]
    found = re.search(r"-?[0-9][0-9,]*(?:\\.[0-9]+)?", line.replace("$", ""))
    return 1.0 if found and float(found.group().replace(",", "")) == float(answer) else 0.0
""", "words between '####' and the number"),
        ("the first ####", """
import re
def my_reward(completion, answer):
    if not isinstance(completion, str) or "####" not in completion:
        return 0.0
    line = completion.split("####")[1].split("\\n", 1)[0]
    found = re.match(r"[\\s:=]*\\$?(-?[0-9][0-9,]*(?:\\.[0-9]+)?)", line)
    return 1.0 if found and float(found.group(1).replace(",", "")) == float(answer) else 0.0
""", "only the last '####' counts"),
        ("raises on None", """
import re
def my_reward(completion, answer):
    if "####" not in completion:
        return 0.0
    line = completion.rsplit("####", 1)[1].split("\\n", 1)[0]
    found = re.match(r"[\\s:=]*\\$?(-?[0-9][0-9,]*(?:\\.[0-9]+)?)", line)
    return 1.0 if found and float(found.group(1).replace(",", "")) == float(answer) else 0.0
""", "raised TypeError on a completion that is not a string")],
    (7, "B"): [
        ("eval", """
import re
def my_annotations_ok(text):
    ok = []
    for expr, claimed in re.findall(r"<<([^<>=]*)=([^<>]*)>>", text):
        try:
            ok.append(eval(expr.replace(",", "")) == eval(claimed))
        except Exception:
            ok.append(False)
    return ok
""", "never eval"),
        ("every annotation right", "import re\ndef my_annotations_ok(text):\n"
                                   "    return [True for _ in re.findall(r'<<[^<>]*>>', text)]\n",
         "(a wrong one)")],
    (8, "A"): [
        ("no mask", """
from grpo.objectives import group_advantages
from grpo.surrogate import clipped_surrogate
def my_grpo_loss(logp, logp_old, mask, rewards):
    surrogate, _ = clipped_surrogate(logp, logp_old, group_advantages(rewards).reshape(-1, 1))
    return -surrogate.mean(1).mean()
""", "your loss counts the padding"),
        ("token average", """
from grpo.objectives import group_advantages
from grpo.surrogate import clipped_surrogate
def my_grpo_loss(logp, logp_old, mask, rewards):
    surrogate, _ = clipped_surrogate(logp, logp_old, group_advantages(rewards).reshape(-1, 1))
    return -(surrogate * mask).sum() / mask.sum()
""", "DAPO's token-level loss"),
        ("no clip", """
import torch
from grpo.objectives import group_advantages
def my_grpo_loss(logp, logp_old, mask, rewards):
    per_token = torch.exp(logp - logp_old) * group_advantages(rewards).reshape(-1, 1)
    return -((per_token * mask).sum(1) / mask.sum(1)).mean()
""", "ignores the clip"),
        ("the objective", """
from grpo.objectives import group_advantages
from grpo.surrogate import clipped_surrogate
def my_grpo_loss(logp, logp_old, mask, rewards):
    surrogate, _ = clipped_surrogate(logp, logp_old, group_advantages(rewards).reshape(-1, 1))
    return ((surrogate * mask).sum(1) / mask.sum(1)).mean()
""", "the sign is flipped"),
        ("padded width", """
from grpo.objectives import group_advantages
from grpo.surrogate import clipped_surrogate
def my_grpo_loss(logp, logp_old, mask, rewards):
    surrogate, _ = clipped_surrogate(logp, logp_old, group_advantages(rewards).reshape(-1, 1))
    return -((surrogate * mask).sum(1) / mask.shape[1]).mean()
""", "you divided by the padded width"),
        ("torch's std", """
from grpo.surrogate import clipped_surrogate
def my_grpo_loss(logp, logp_old, mask, rewards):
    adv = (rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-8)
    surrogate, _ = clipped_surrogate(logp, logp_old, adv.reshape(-1, 1))
    return -((surrogate * mask).sum(1) / mask.sum(1)).mean()
""", "sample std (torch's .std() default"),
        ("ratio upside down", """
from grpo.objectives import group_advantages
from grpo.surrogate import clipped_surrogate
def my_grpo_loss(logp, logp_old, mask, rewards):
    surrogate, _ = clipped_surrogate(logp_old, logp, group_advantages(rewards).reshape(-1, 1))
    return -((surrogate * mask).sum(1) / mask.sum(1)).mean()
""", "logp and logp_old are swapped")],
    (8, "B"): [("per answer", """
from grpo.objectives import group_advantages
from grpo.surrogate import clipped_surrogate
def my_token_level_loss(logp, logp_old, mask, rewards):
    surrogate, _ = clipped_surrogate(logp, logp_old, group_advantages(rewards).reshape(-1, 1))
    return -((surrogate * mask).sum(1) / mask.sum(1)).mean()
""", "that is DeepSeekMath's average"),
        ("a mean over the padding too", """
from grpo.objectives import group_advantages
from grpo.surrogate import clipped_surrogate
def my_token_level_loss(logp, logp_old, mask, rewards):
    surrogate, _ = clipped_surrogate(logp, logp_old, group_advantages(rewards).reshape(-1, 1))
    return -(surrogate * mask).mean()
""", "padding included")],
    (9, "A"): [
        ("pass@1", "def my_pass_at_k(n, c, k):\n    return c / n\n", "that is pass@1"),
        ("with replacement", "def my_pass_at_k(n, c, k):\n    return 1 - (1 - c / n) ** k\n",
         "with replacement"),
        ("all wrong", "from math import comb\ndef my_pass_at_k(n, c, k):\n"
                      "    return comb(n - c, k) / comb(n, k)\n", "is one minus that"),
        ("factorials", "from math import factorial as f\ndef my_pass_at_k(n, c, k):\n"
                       "    return 1 - f(n - c) * f(n - k) / (f(n - c - k) * f(n))\n",
         "with fewer than k wrong answers")],
    (9, "B"): [
        ("the verifier's", "def my_random_reward(verifier_rewards, uniforms):\n"
                           "    return verifier_rewards\n", "your reward is the verifier's"),
        ("above the rate", "def my_random_reward(verifier_rewards, uniforms):\n"
                           "    return (uniforms >= verifier_rewards.mean()).astype(float)\n",
         "above the rate")],
    (10, "A"): [
        ("all wrong only", "def my_degenerate_share(rewards):\n"
                           "    return np.mean((rewards == 0).all(1))\n",
         "only the all-wrong groups"),
        ("a count", "def my_degenerate_share(rewards):\n"
                    "    return np.sum((rewards == rewards[:, :1]).all(1))\n",
         "return their share"),
        ("0/1 ties only", "def my_degenerate_share(rewards):\n"
                          "    r = np.asarray(rewards)\n"
                          "    return np.mean((r == 0).all(1) | (r == 1).all(1))\n",
         "all 0s or all 1s"),
        ("std == 0", "def my_degenerate_share(rewards):\n"
                     "    return np.mean(np.asarray(rewards).std(1) == 0)\n",
         "std == 0 misses ties")],
    (10, "B"): [
        ("all wrong only", "def my_effective_batch(p, G):\n"
                           "    return G * np.sum(1 - (1 - np.asarray(p)) ** G)\n",
         "removed only the all-wrong groups"),
        ("groups", "def my_effective_batch(p, G):\n    p = np.asarray(p)\n"
                   "    return np.sum(1 - p**G - (1 - p) ** G)\n", "you counted groups")],
    (11, "A"): [
        ("either order always", """
from fractions import Fraction
from grpo.lm.verifier import equations_in
def my_read_calculation(text, calculation):
    found = equations_in(text)
    if not found:
        return "no_equation"
    first, left = found[0], calculation.split("=")[0]
    op = next(c for c in "+-*/" if c in left)
    a, b = (Fraction(x) for x in left.split(op))
    if first.operators != (op,) or first.operands not in ((a, b), (b, a)):
        return "other_calculation"
    return "right" if first.true else "slip"
""", "(the operands of - keep their order)"),
        ("the result alone", """
from grpo.lm.verifier import equations_in
def my_read_calculation(text, calculation):
    found = equations_in(text)
    if not found:
        return "no_equation"
    return "right" if found[0].true else "slip"
""", "(the wrong operation)")],
    (11, "B"): [
        ("the first number", "import re\ndef my_last_number(text):\n"
                             "    numbers = re.findall(r'[0-9]+', text)\n"
                             "    return numbers[0] if numbers else None\n",
         "(the result of an equation)"),
        ("not normalised", "import re\ndef my_last_number(text):\n"
                           "    numbers = re.findall(r'-?[0-9][0-9,]*(?:\\.[0-9]+)?', text)\n"
                           "    return numbers[-1].rstrip(',') if numbers else None\n",
         "(a comma between thousands, then a full stop)")],
    (12, "A"): [
        ("always healthy", "def diagnose(logs):\n    return 'healthy'\n", "run A is not healthy"),
        ("degenerate before clipped", """
def diagnose(logs):
    if np.mean(logs["degenerate_fraction"]) > 0.6:
        return "groups_teach_nothing"
    return "format_only"
""", "many of its groups do teach nothing, but ask why"),
        ("a word of its own", "def diagnose(logs):\n    return 'collapse'\n", "answer one of")],
    (12, "B"): [
        ("grpo's average", """
def my_dapo_loss_at_ratio_one(lengths, rewards):
    r = np.asarray(rewards, dtype=float)
    if np.all(r == r[0]):
        return 0.0
    return -np.mean((r - r.mean()) / (r.std(ddof=1) + 1e-4))
""", "that is loss_type='grpo'"),
        ("population std", """
def my_dapo_loss_at_ratio_one(lengths, rewards):
    r, L = np.asarray(rewards, dtype=float), np.asarray(lengths, dtype=float)
    if np.all(r == r[0]):
        return 0.0
    return -(L * (r - r.mean()) / (r.std() + 1e-8)).sum() / L.sum()
""", "sample std (ddof=1) plus 1e-4")],
}


def test_every_exercise_has_a_planted_mistake():
    assert set(WRONG) == set(BY_KEY)


@pytest.mark.parametrize("key,name,source,hint",
                         [(k, *w) for k, planted in WRONG.items() for w in planted],
                         ids=[f"{k[0]}{k[1]}-{w[0]}" for k, planted in WRONG.items() for w in planted])
def test_a_planted_mistake_draws_the_hint_that_names_it(key, name, source, hint, capsys):
    outcome = run_check(BY_KEY[key], "import numpy as np\n" + source, capsys)
    assert outcome.status == "mistake" and hint in outcome.line, (name, outcome.line)
    assert "\n" not in outcome.line and "Traceback" not in outcome.line


def test_a_reader_exception_is_one_sentence_and_bad_input_a_value_error(capsys):
    def broken(*args):
        raise KeyError("no such series")
    outcome = checks.check_group_advantages(broken)
    assert outcome == checks.CheckOutcome("mistake", "your function raised KeyError: 'no such series'")
    assert capsys.readouterr().out == outcome.line + "\n"
    with pytest.raises(ValueError, match=r"check_pass_at_k\(fn\): fn must be the function"):
        checks.check_pass_at_k(3)
    assert outcome._ipython_display_() is None      # printed once: a notebook shows nothing more


def test_a_wrong_type_or_shape_is_named(capsys):
    assert "returned None" in checks.check_returns_to_go(lambda r: None).line
    assert "returned shape (3,)" in checks.check_grad_log_pi(lambda W, s, a: np.zeros(3)).line
    assert "answer one of" in checks.check_diagnosis(lambda logs: 3).line


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: f"{e.chapter}{e.letter}")
def test_a_check_is_deterministic_fast_and_leaves_the_global_generators_alone(exercise, capsys):
    ns = namespace()
    exec(exercise.solution, ns)
    check = getattr(checks, exercise.checker)
    first = check(ns[exercise.function])             # the first call may import torch or the lander
    np_state, torch_state = np.random.get_state(), torch.random.get_rng_state()
    start = time.process_time()
    again = check(ns[exercise.function])
    assert time.process_time() - start < 1.0
    assert again == first
    assert np.array_equal(np.random.get_state()[1], np_state[1])
    assert torch.equal(torch.random.get_rng_state(), torch_state)


def test_the_planted_runs_are_the_same_on_every_call_and_every_label_is_planted_once():
    assert checks.failure_logs() == checks.failure_logs()
    runs = checks.failure_logs()
    assert sorted(checks._PLANTED[name][0] for name in runs) == sorted(checks.DIAGNOSES)
    assert {len(v) for logs in runs.values() for v in logs.values()} == {10}


# ----------------------------------------------------------------------------- the notebooks

def _notebook(chapter: int) -> dict:
    return json.loads(toc_chapters()[chapter].read_text())


def _text(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def inserted() -> list[tuple[int, str]]:
    """(chapter, letter) for every exercise a notebook carries already (none until the lead runs
    .ci/insert_exercises.py)."""
    found = []
    for chapter in sorted(toc_chapters()):
        for cell in _notebook(chapter)["cells"]:
            mark = cell.get("metadata", {}).get(MARKER, {})
            if mark.get("part") == "solution":
                found.append((chapter, mark["exercise"]))
    return found


@pytest.mark.parametrize("chapter,letter", inserted())
def test_the_notebooks_solution_passes_and_its_stub_is_not_attempted(chapter, letter):
    cells = {cell["metadata"][MARKER]["part"]: _text(cell)
             for cell in _notebook(chapter)["cells"]
             if cell.get("metadata", {}).get(MARKER, {}).get("exercise") == letter}
    solution = re.search(r"```python\n(.*?)\n```", cells["solution"], re.S).group(1)
    exercise = BY_KEY[(chapter, letter)]
    check = ast.parse(cells["check"]).body[0].value.func.id
    ns = namespace()
    for source, status in ((solution, "correct"), (cells["stub"], "not attempted")):
        exec(compile(source, f"<chapter {chapter} exercise {letter}>", "exec"), ns)
        assert getattr(checks, check)(ns[exercise.function]).status == status


@pytest.mark.parametrize("chapter", sorted({chapter for chapter, _ in inserted()}))
def test_a_notebooks_exercises_are_the_current_texts(chapter):
    found = [_text(c) for c in _notebook(chapter)["cells"] if MARKER in c.get("metadata", {})]
    assert found == [c["source"] for c in exercise_cells(chapter)], \
        "the notebook's exercises are not the current texts: run .ci/insert_exercises.py"


def _synthetic(n_cells=3) -> dict:
    return {"cells": [{"cell_type": "markdown", "id": f"cell-{i:03d}", "metadata": {},
                       "source": f"## Section {i}\n\nProse."} for i in range(n_cells)],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_the_section_goes_at_the_end_once_and_a_second_run_changes_nothing():
    nb = with_exercises(_synthetic(), 4)
    cells = exercise_cells(4)
    assert nb["cells"][:3] == _synthetic()["cells"] and nb["cells"][3:] == cells
    assert [c["cell_type"] for c in cells] == ["markdown"] + ["markdown", "code", "code",
                                                              "markdown"] * 2
    assert _text(cells[0]).startswith("## Exercises\n")
    assert _text(cells[2]).startswith("from grpo.book.exercises import check_group_advantages, "
                                      "check_step_divisors\n")
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in cells
               if c["cell_type"] == "code")
    assert with_exercises(copy.deepcopy(nb), 4) == nb
    assert len({c["id"] for c in nb["cells"]}) == len(nb["cells"])


def test_a_run_keeps_an_executed_cell_replaces_a_changed_one_and_moves_the_section_last():
    nb = with_exercises(_synthetic(), 4)
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{i:03d}"                            # as make execute leaves them
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout",
                                "text": "not attempted yet\n"}]
    stub = next(c for c in nb["cells"] if c.get("metadata", {}).get(MARKER, {}).get("part")
                == "stub")
    stub["source"] = "def my_group_advantages(scores):\n    return scores\n"   # an old text
    nb["cells"].append({"cell_type": "markdown", "id": "cell-099", "metadata": {},
                        "source": "## Added after"})
    again = with_exercises(copy.deepcopy(nb), 4)
    assert _text(again["cells"][3]) == "## Added after"
    fresh = [c for c in again["cells"] if MARKER in c["metadata"]]
    assert [c["source"] for c in fresh] == [c["source"] for c in exercise_cells(4)]
    replaced = next(c for c in fresh if c["metadata"][MARKER]["part"] == "stub")
    assert replaced["outputs"] == [] and replaced["id"].startswith("exercise-")
    kept = [c for c in fresh if c["cell_type"] == "code" and c is not replaced]
    assert all(c["outputs"] and c["id"].startswith("cell-") for c in kept)


def test_a_chapter_without_exercises_loses_stale_ones():
    nb = with_exercises(_synthetic(), 4)
    assert with_exercises(nb, 99)["cells"] == _synthetic()["cells"]


@pytest.mark.parametrize("chapter", sorted(toc_chapters()))
def test_a_chapter_with_its_exercises_keeps_to_the_prose_rules(chapter, tmp_path):
    """The section inserted into the chapter as it stands: no line of prose opens a list by
    accident, chapters 6-12 keep to the course's limits of numbers and words and read as lessons,
    and chapters 1-5 read no worse than they did."""
    nb = with_exercises(_notebook(chapter), chapter)
    for cell in exercise_cells(chapter):
        if cell["cell_type"] == "markdown":
            assert accidental_list_lines(_text(cell)) == [], _text(cell)
    path = tmp_path / toc_chapters()[chapter].name
    path.write_text(json.dumps(nb))
    if any(str(toc_chapters()[chapter].relative_to(ROOT)).startswith(m)
           for m in chapter_size.MAIN_PATH):
        numbers, words = measure(path)
        assert numbers <= chapter_size.MAX_NUMBERS and words <= chapter_size.MAX_WORDS
    limits = LESSON if chapter >= 6 else dict(zip(LESSON, FIRST_HALF[chapter], strict=True))
    assert over(lesson_counts(nb), limits) == []


def test_the_code_a_notebook_and_its_solutions_show_is_ruff_clean(tmp_path):
    """Each chapter's exercise cells as the notebook runs them (make lint checks the notebooks at
    100 columns), and each solution as the book shows it, checked before they are inserted."""
    import subprocess
    import sys
    for chapter in toc_chapters():
        cells = [c["source"] for c in exercise_cells(chapter) if c["cell_type"] == "code"]
        (tmp_path / f"chapter_{chapter:02d}.py").write_text("\n\n".join(cells) + "\n")
    for e in EXERCISES:
        (tmp_path / f"solution_{e.chapter:02d}{e.letter}.py").write_text(e.solution + "\n")
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--config",
                           str(ROOT / "pyproject.toml"), "--line-length", "100", str(tmp_path)],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
