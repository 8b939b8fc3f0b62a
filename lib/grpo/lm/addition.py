"""Two-digit addition: the small task on which GRPO lifts held-out accuracy (chapter 9).

The published small-task run (``grpo_small_task_cpu`` in the bibliography) trained GRPO on prompts
like ``24+48=`` with a 4-token answer. Here a problem is in GSM8K's schema, so chapter 7's verifier,
SFT and chapter 8's GRPO loop serve unchanged:

    {"question": "24+48=", "answer": "#### 72"}        # the model writes "#### 72<eos>"

With ``addition_tokenizer`` the answer ``#### 72`` is 4 tokens (``####``, ``▁``, ``7``, ``2``; a
3-digit sum is 5), then ``<eos>``. Every pair a, b in 10..99 is a problem (8,100 in all), shuffled
once by ``SPLIT_SEED`` and cut into a fixed held-out test set (2,000), a validation set (500, for
choosing where SFT stops and for training curves) and the training set (the other 5,600).

``run_jobs(jobs, starts, tok)`` runs GRPO (a ``RunConfig``), continued SFT (an ``SFTConfig``) or
nothing (``None``: the start itself) from SFT snapshots, in spawned workers, and returns each job's
per-problem test outcomes: what ``grpo.stats.paired_lift`` needs.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from grpo.pool import parallel_map

from .model import GPT, GPTConfig
from .rl import RunConfig, outcomes, train_lm_grpo
from .tokenizer import Tokenizer
from .train import SFTConfig, sft

LOW, HIGH = 10, 99                # both addends are two-digit numbers
SPLIT_SEED = 0
N_TEST, N_VAL = 2000, 500
EVAL_SEED = 1234                  # the sampled test outcomes' generator
EVAL_SAMPLES = 16                 # samples per test problem at T 0.7 (sampled accuracy, pass@k)
EVAL_TEMPERATURE = 0.7
MANY_PROBLEMS = 500              # pass@k to large k is drawn on the first 500 test problems
MAX_NEW_TOKENS = 8                # '####', '▁', up to 3 digits, '<eos>', with room to spare

# The model: nanoGPT's decoder at 2 layers, d 64 (108k parameters with this tokenizer).
MODEL = dict(n_layer=2, n_head=4, d_model=64, max_len=128)

# SFT at a constant lr, so a run stopped at step s is the same run as a longer one up to s, and one
# run gives every start point (``sft(..., keep_states=True)``).
SFT_RECIPE = SFTConfig(steps=1500, batch_size=64, lr=1e-3, warmup=0, min_lr_frac=1.0,
                       weight_decay=0.0, eval_every=25, eval_problems=N_VAL)

# The published run's GRPO settings: 48 prompts x 8 completions at T 0.7, k3 KL with beta 0.08,
# eps 0.2, one clipped update per batch, 20 iterations. lr is ours (the run does not give it).
GRPO_RECIPE = RunConfig(iterations=20, prompts=48, G=8, lr=1e-4, warmup=0, temperature=0.7,
                        max_new_tokens=MAX_NEW_TOKENS, beta=0.08, eps_low=0.2, reuse=1,
                        eval_every=5, eval_problems=N_VAL, eval_samples=1, eval_at_start=False)


def problem(a: int, b: int) -> dict:
    """``a+b=`` and its answer, in GSM8K's schema."""
    return {"question": f"{a}+{b}=", "answer": f"#### {a + b}"}


def make_addition_splits() -> tuple[list[dict], list[dict], list[dict]]:
    """``(train, val, test)``: every pair of two-digit
    addends, shuffled once, cut 5,600 / 500 / 2,000."""
    pairs = [(a, b) for a in range(LOW, HIGH + 1) for b in range(LOW, HIGH + 1)]
    random.Random(SPLIT_SEED).shuffle(pairs)
    problems = [problem(a, b) for a, b in pairs]
    return problems[N_TEST + N_VAL:], problems[N_TEST:N_TEST + N_VAL], problems[:N_TEST]


def addends(problem: dict) -> tuple[int, int]:
    """(a, b) of a problem ``a+b=``."""
    a, b = problem["question"].rstrip("=").split("+")
    return int(a), int(b)


def carries(problem: dict) -> bool:
    """Whether the units digits carry: 24+48 (4 + 8 = 12) does, 24+35 does not."""
    a, b = addends(problem)
    return a % 10 + b % 10 >= 10


def commuted_twin_in_train(problems, train) -> list[bool]:
    """For each problem a+b, whether b+a (a different problem when a != b) is in ``train``."""
    seen = {addends(p) for p in train}
    return [(b, a) in seen and a != b for a, b in map(addends, problems)]


def addition_tokenizer() -> Tokenizer:
    """Chapter 7's BPE (single digits) trained on the
    task's text: 20 tokens, ``####`` one of them."""
    train, val, test = make_addition_splits()
    return Tokenizer.train([p["question"] + "\n" + p["answer"] for p in train + val + test],
                           vocab_size=20)


def addition_model(tok: Tokenizer, seed: int = 0) -> GPT:
    """A fresh 2-layer, d-64 GPT for ``tok``, initialised from ``seed``."""
    torch.manual_seed(seed)
    return GPT(GPTConfig(vocab_size=tok.vocab_size, **MODEL))


def train_sft(seed: int = 0, cfg: SFTConfig = SFT_RECIPE):
    """The SFT run every start comes from: ``(model, tok, history)``, ``history["states"]`` holding
    the weights at every evaluation step (validation greedy accuracy in
    ``history["eval_greedy"]``)."""
    tok = addition_tokenizer()
    train, val, _ = make_addition_splits()
    model = addition_model(tok, seed)
    return model, tok, sft(model, tok, train, val, cfg, keep_states=True)


@dataclass(frozen=True)
class Job:
    # the start snapshot: a key of ``starts`` (an SFT step, or a name)
    start: int | str
    cfg: RunConfig | SFTConfig | None   # GRPO, continued SFT, or None: evaluate the start itself
    samples: int = EVAL_SAMPLES         # sampled test outcomes per problem (4 is enough for a mean)
    many_samples: int = 0               # > 0: also this many samples on the first MANY_PROBLEMS
                                        # test problems (pass@k to large k)


def _run(args) -> dict:
    job, state, tok_json = args
    torch.set_num_threads(1)
    tok = Tokenizer.from_str(tok_json)
    train, val, test = make_addition_splits()
    model = addition_model(tok)
    model.load_state_dict(state)
    out = {"start": job.start}
    if isinstance(job.cfg, RunConfig):
        run = train_lm_grpo(model, tok, train, val, job.cfg)
        out.update(log=run["log"], evals=run["evals"])
    elif isinstance(job.cfg, SFTConfig):
        out["history"] = sft(model, tok, train, val, job.cfg)
    out.update(outcomes(model, tok, test, job.samples, EVAL_TEMPERATURE, EVAL_SEED, MAX_NEW_TOKENS))
    if job.many_samples:
        out["many_sampled"] = outcomes(model, tok, test[:MANY_PROBLEMS], job.many_samples,
                                       EVAL_TEMPERATURE, EVAL_SEED + 1, MAX_NEW_TOKENS)["sampled"]
    return out


def _sft_endpoint(args) -> dict:
    cfg, tok_json, seed = args
    torch.set_num_threads(1)
    tok = Tokenizer.from_str(tok_json)
    train, val, _ = make_addition_splits()
    model = addition_model(tok, seed)
    history = sft(model, tok, train, val, cfg)
    return {"steps": cfg.steps, "val_greedy": history["eval_greedy"][-1], "history": history,
            "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}


def sft_endpoints(configs, tok: Tokenizer, seed: int = 0, workers: int = 2) -> list[dict]:
    """SFT runs from the same initialisation (``seed``), one per config, in spawned workers: each
    run's final weights (``state``, a start for ``run_jobs``) and its last validation greedy."""
    return parallel_map(_sft_endpoint, [(c, tok.to_str(), seed) for c in configs], workers,
                        desc="SFT runs")


def run_jobs(jobs, starts: dict, tok: Tokenizer, workers: int = 2) -> list[dict]:
    """Each job from its start snapshot (``starts[job.start]``, a state dict), in ``workers``
    spawned processes; per job, the test set's ``greedy`` (2000,) and ``sampled`` (2000,
    job.samples) 0/1 outcomes, plus the GRPO ``log`` and validation ``evals`` (or the SFT
    ``history``). Results in job order."""
    jobs = list(jobs)
    for job in jobs:
        if (job.start not in starts or job.samples < 1 or job.many_samples < 0
                or not isinstance(job.cfg, (RunConfig, SFTConfig, type(None)))):
            raise ValueError("a job needs a start in starts and a RunConfig, SFTConfig or None: "
                             f"{job}")
    return parallel_map(_run, [(j, starts[j.start], tok.to_str()) for j in jobs], workers,
                        desc="addition runs")


__all__ = ["problem", "make_addition_splits", "addition_tokenizer", "addition_model", "train_sft",
           "Job", "run_jobs", "sft_endpoints", "carries", "commuted_twin_in_train", "SFT_RECIPE",
           "GRPO_RECIPE", "MODEL", "EVAL_SEED", "EVAL_SAMPLES", "EVAL_TEMPERATURE",
           "MAX_NEW_TOKENS", "MANY_PROBLEMS", "N_TEST", "N_VAL"]
