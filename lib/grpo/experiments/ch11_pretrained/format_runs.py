"""Chapter 11's decided runs: the design of ``design`` (split, prompts, arms, seeds), run and read.

Each run writes ``data/runs/11_pretrained/decided/NAME.json``:

    selection            the start's greedy answers to the selection problems (training problems)
                         under every prompt: what chose ``design.TRAIN_PROMPT``
    start_<prompt>       the start's greedy answers to the held-out problems under one prompt
                         (and, for the training prompt, ``design.DESIGN.pass_at_k_samples``
                         samples of each pass@k problem)
    <arm>_seed<s>        a GRPO run of one arm and seed: its config, log, first batch, and the
                         same evaluation from its trained weights

Every completion's text is stored, and every reading (``READINGS``) is computed from the texts.

    python -m grpo.experiments.ch11_pretrained.format_runs --list
    python -m grpo.experiments.ch11_pretrained.format_runs --all --workers 2
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from grpo.experiments.ch11_pretrained import design as D
from grpo.experiments.ch11_pretrained.smollm2_runs import (RECIPE, batch_reward, equation_scores,
                                                            one_equation_format)
from grpo.lm.eval import pass_at_k_per_problem
from grpo.experiments.ch11_pretrained.registry import (greedy_texts, read_run, registry_command,
                                                        replayed, retrain_runs, with_cpu_s,
                                                        store_runs, train_from_problems)
from grpo.lm.hf import encode_prompts, load_model, sample_completions
from grpo.lm.model import Sampling
from grpo.lm.verifier import last_number_reward
from grpo.runstore import bits, run_dir, unbits, writable
from grpo.stats import Lift, paired_lift

MODULE = "grpo.experiments.ch11_pretrained.format_runs"
RUN_FOLDER = run_dir("11_pretrained") / "decided"
MODEL = "smollm2"
EVAL_BATCH = 48
READINGS = ("last_number", "first_equation", "equations_true", "one_equation_format")


def renderer(prompt: str):
    """``grpo.lm.hf``'s ``render(tokenizer, question)`` for one of ``design.PROMPTS``."""
    return functools.partial(D.render_prompt, prompt=prompt)


def readings(texts, ended, problems) -> dict:
    """Per answer, the four readings as 0/1 arrays, in ``READINGS``' order: the last number right
    (what the verifier pays), the first equation's result right, every equation written true, the
    one-equation format (``smollm2_runs.equation_scores`` and ``one_equation_format``)."""
    eq = [equation_scores(t, p["answer"]) for t, p in zip(texts, problems, strict=True)]
    return {"last_number": np.array([last_number_reward(t, p["answer"])
                                     for t, p in zip(texts, problems, strict=True)]),
            "first_equation": np.array([s["first_equation"] for s in eq], dtype=float),
            "equations_true": np.array([s["equations_true"] for s in eq], dtype=float),
            "one_equation_format": np.array([one_equation_format(t, bool(e))
                                             for t, e in zip(texts, ended, strict=True)])}


def greedy_under_prompt(model, tok, problems, prompt: str,
                        max_new_tokens: int = RECIPE.max_new_tokens) -> dict:
    """Greedy answers under ``prompt``: each answer's text (the prompt's answer prefix included),
    whether it ended within the budget (0/1 string), and its length in tokens."""
    texts, ended, lengths = greedy_texts(model, tok, problems, max_new_tokens, EVAL_BATCH,
                                         render=renderer(prompt))
    return {"texts": [D.answer_prefix(prompt, p["question"]) + t
                      for p, t in zip(problems, texts, strict=True)],
            "ended": bits(ended), "lengths": lengths}


@torch.inference_mode()
def samples_under_prompt(model, tok, problems, prompt: str, samples: int, seed: int) -> dict:
    """``samples`` completions of each problem at the recipe's temperature and budget, from a
    generator seeded with ``seed``: their texts (problem by problem, prefix included) and whether
    each ended (0/1 string)."""
    model.eval()
    sampling = Sampling(samples, RECIPE.max_new_tokens, RECIPE.temperature)
    gen = torch.Generator().manual_seed(seed)
    texts, ended = [], []
    for i in range(0, len(problems), 4):
        batch = problems[i:i + 4]
        ids, mask = encode_prompts(tok, [p["question"] for p in batch], model.device,
                                   render=renderer(prompt))
        tokens, _, _ = sample_completions(model, ids, mask, sampling, tok.eos_token_id,
                                          tok.pad_token_id, gen)
        ended += (tokens == tok.eos_token_id).any(1).tolist()
        prefixes = [D.answer_prefix(prompt, p["question"]) for p in batch for _ in range(samples)]
        texts += [a + t for a, t in zip(prefixes, tok.batch_decode(tokens,
                                                                  skip_special_tokens=True),
                                        strict=True)]
    return {"texts": texts, "ended": bits(ended), "samples": samples, "seed": seed}


# ----------------------------------------------------------------------------- the runs

@dataclass(frozen=True)
class DecidedRun:
    """One run of the decided experiment: the ``selection`` of the training prompt, a ``start``
    scored under a prompt, or a ``grpo`` run of an arm (``design.DESIGN.arms``) and seed."""
    kind: str                           # "selection" | "start" | "grpo"
    prompt: str = ""
    arm: str = ""
    seed: int = 0
    pass_k: bool = False                # also pass@k samples of each pass@k problem
    note: str = ""


def _registry() -> dict:
    design = D.DESIGN
    runs = {"selection": DecidedRun("selection", note="every prompt on the selection problems "
                                                      "(training problems): the training prompt's "
                                                      "choice")}
    for prompt in D.FIRST_PROMPTS:
        runs[f"start_{prompt}"] = DecidedRun(
            "start", prompt, pass_k=prompt == design.train_prompt,
            note=f"the start, greedy on the held-out problems: {D.PROMPTS[prompt].note}")
    for seed in range(design.seeds):    # seed by seed, so that a cut budget drops whole seeds last
        for arm, spec in design.arms.items():
            runs[f"{arm}_seed{seed}"] = DecidedRun("grpo", spec.prompt, arm, seed,
                                                   pass_k=arm == design.pass_at_k_arm,
                                                   note=spec.note)
    return runs


RUNS = _registry()


def pass_k_problems() -> list:
    """The problems pass@k samples: each held-out calculation's first wording."""
    return list(D.held_out_problems()[::D.WORDINGS])


def score_held_out(model, tok, spec: DecidedRun) -> dict:
    out = {"greedy": greedy_under_prompt(model, tok, list(D.held_out_problems()), spec.prompt)}
    if spec.pass_k:
        out["sampled"] = samples_under_prompt(model, tok, pass_k_problems(), spec.prompt,
                                 D.DESIGN.pass_at_k_samples, D.PASS_K_SEED)
    return out


def train_from_prompt(prompt: str, reward: str, seed: int, iterations: int, checkpoint=None):
    """A GRPO run from the start with ``design.recipe()``, its questions put by ``prompt`` and its
    answers paid ``reward`` (``smollm2_runs.REWARDS``), for ``iterations`` iterations: its prompts
    are ``design.training_draw(seed)``, the same for every reward at a seed. ``checkpoint(step,
    policy, tokenizer)`` as ``grpo.lm.hf.train_hf_grpo``'s. Returns (policy, tokenizer, log, first
    batch, its texts with the prompt's answer prefix); each step's log adds the verifier's
    ``correct_mean`` and ``ended_mean`` (``registry.train_from_problems``)."""
    cfg = replace(D.recipe(), seed=seed)
    seen = {}
    paid = batch_reward(reward, torch.Generator().manual_seed(1000 + seed), seen)
    return train_from_problems(cfg, D.training_draw(seed, iterations * cfg.prompts), iterations,
                               paid, seen, render=renderer(prompt),
                               prefix=functools.partial(D.answer_prefix, prompt),
                               checkpoint=checkpoint)


def train_decided(spec: DecidedRun, iterations: int | None = None):
    """A GRPO run of ``spec``'s arm and seed (``train_from_prompt`` with its arm's prompt and
    reward), ``design.DESIGN.iterations`` long unless ``iterations`` says otherwise."""
    return train_from_prompt(spec.prompt, D.DESIGN.arms[spec.arm].reward, spec.seed,
                             D.DESIGN.iterations if iterations is None else iterations)


def run(name: str, directory: Path | None = None) -> dict:
    """Run one registry entry in this process and return what its ``NAME.json`` stores (a run
    saves no weights, so ``directory``, where it will be written, changes nothing here)."""
    spec = RUNS[name]
    torch.set_num_threads(1)

    def work():
        out = {"name": name, "spec": asdict(spec), "design": D.DESIGN.as_record()}
        if spec.kind == "grpo":
            model, tok, out["log"], out["first_batch"] = train_decided(spec)
        else:
            model, tok = load_model(MODEL, "cpu")
        if spec.kind == "selection":
            out["selection"] = {p: greedy_under_prompt(model, tok, D.selection_problems(), p)
                                for p in D.FIRST_PROMPTS}
        else:
            out["held_out"] = score_held_out(model, tok, spec)
        return out
    return with_cpu_s(work)


def run_and_store(runs=None, workers: int = 2, directory: Path | None = None) -> list:
    """Run the first design's runs (``runs``: names, default all, in the registry's order: a cut
    budget drops whole seeds last) in ``workers`` processes, or in this one when 1, and store each
    in ``directory`` (default ``RUN_FOLDER``)."""
    return store_runs(run, RUNS, RUN_FOLDER if directory is None else directory, runs, workers)


def retrain_dir() -> Path:
    """Where ``retrain`` writes: ``runstore.writable(RUN_FOLDER)``, i.e.
    ``scratch/runs/11_pretrained/decided/`` (``RUN_FOLDER`` itself only under ``GRPO_STORE=1``)."""
    return writable(RUN_FOLDER)


def retrain(names=None, workers: int = 2, again: bool = False) -> Path:
    """The chapter's RETRAIN switch: run registry entries (default all) into ``retrain_dir()``,
    never ``data/runs/``, and return that folder for ``load_run(name, folder)`` and
    ``endpoints(folder)``. A run already there is kept unless ``again``."""
    return retrain_runs(run, RUNS, RUN_FOLDER, names, workers, again)


def load_run(name: str, directory: Path | None = None) -> dict:
    """A stored decided run, from ``directory`` (default ``RUN_FOLDER``; ``retrain()``'s folder
    for a re-run); a clear error, naming the command, if it was never run."""
    return read_run(MODULE, RUNS, RUN_FOLDER, name, directory)


# ----------------------------------------------------------------------------- reading the runs

def arm_runs(arm: str) -> list:
    """An arm's GRPO runs, seeds in order."""
    if arm not in D.DESIGN.arms:
        raise ValueError(f"arm must be one of {list(D.DESIGN.arms)}, got {arm!r}")
    return [n for n, s in RUNS.items() if s.arm == arm]


def start_of(arm: str) -> str:
    """The start an arm is paired with: the start under the prompt it trains from."""
    return f"start_{D.DESIGN.arms[arm].prompt}"


def _readings_of(name: str, part: str, directory: Path | None = None) -> dict:
    path = (RUN_FOLDER if directory is None else Path(directory)) / f"{name}.json"
    stamp = path.stat().st_mtime_ns if path.is_file() else 0   # a re-run file is read afresh
    return _readings_cached(name, part, None if directory is None else str(directory), stamp)


@functools.lru_cache(maxsize=None)
def _readings_cached(name: str, part: str, directory: str | None, stamp: int) -> dict:
    run_ = load_run(name, directory)
    if part == "selection":
        return {p: readings(g["texts"], unbits(g["ended"]), D.selection_problems())
                for p, g in run_["selection"].items()}
    scored = run_["held_out"]["greedy"]
    return readings(scored["texts"], unbits(scored["ended"]), D.held_out_problems())


def reading(name: str, which: str, directory: Path | None = None) -> np.ndarray:
    """One reading of a stored run's greedy held-out answers, per problem (0/1), read from
    ``directory`` (as ``load_run``)."""
    if which not in READINGS:
        raise ValueError(f"which must be one of {READINGS}, got {which!r}")
    return _readings_of(name, "held_out", directory)[which]


def selection_scores(directory: Path | None = None) -> dict:
    """Each prompt's share of each reading on the selection problems (the stored selection run,
    read from ``directory`` as ``load_run``)."""
    return {p: {k: float(v.mean()) for k, v in r.items()}
            for p, r in _readings_of("selection", "selection", directory).items()}


def chosen_prompt(scores: dict) -> str:
    """``design.SELECTION_RULE``: the format-given prompt whose greedy last number is right most
    often on the selection problems (the first in ``design.FORMAT_PROMPTS`` on a tie)."""
    return max(D.FORMAT_PROMPTS, key=lambda p: (scores[p]["last_number"],
                                                -D.FORMAT_PROMPTS.index(p)))


def _paired(before, after) -> Lift:
    return paired_lift(before, after, clusters=D.chains_of(D.held_out_problems()))


def arm_lift(arm: str, which: str = "first_equation", against: str | None = None,
             directory: Path | None = None) -> Lift:
    """An arm's paired lift in one reading over a start (its own, by default), on the held-out
    problems, their calculations resampled, with its seeds' spread (``grpo.stats.paired_lift``);
    every run read from ``directory`` (as ``load_run``)."""
    against = against or start_of(arm)
    return _paired(reading(against, which, directory),
                   np.stack([reading(n, which, directory) for n in arm_runs(arm)]))


def best_format_start(which: str = "last_number", directory: Path | None = None) -> str:
    """The format-given start with the highest share of ``which`` on the held-out problems: the
    baseline a lift must beat to be more than format (chosen on the held-out problems themselves,
    which favours the baseline)."""
    return max((f"start_{p}" for p in D.FORMAT_PROMPTS),
               key=lambda n: reading(n, which, directory).mean())


def gap_lift(arm: str, directory: Path | None = None) -> Lift:
    """How much more an arm lifts the last number than the first equation: per problem,
    (last - first) after minus (last - first) before, paired and resampled as ``lift``."""
    def shifted(name):                  # (1 + last - first) / 2 lies in [0, 1]
        return (1 + reading(name, "last_number", directory)
                - reading(name, "first_equation", directory)) / 2
    x = _paired(shifted(start_of(arm)), np.stack([shifted(n) for n in arm_runs(arm)]))
    return replace(x, points=2 * x.points, ci95=tuple(2 * v for v in x.ci95),
                   per_seed=tuple(2 * v for v in x.per_seed),
                   per_seed_ci95=tuple(tuple(2 * v for v in c) for c in x.per_seed_ci95),
                   problem_half=2 * x.problem_half, seed_half=2 * x.seed_half)


def minus(arm: str, control: str, which: str = "first_equation",
          directory: Path | None = None) -> Lift:
    """``arm``'s seed s against ``control``'s seed s, in one reading: what the arm's reward adds
    over the control's, on the same prompts."""
    return _paired(np.stack([reading(n, which, directory) for n in arm_runs(control)]),
                   np.stack([reading(n, which, directory) for n in arm_runs(arm)]))


def sampled_correct(name: str, directory: Path | None = None) -> np.ndarray:
    """(pass@k problems, samples) 0/1: whether each stored sample's last number is right."""
    s = load_run(name, directory)["held_out"]["sampled"]
    probs = [p for p in pass_k_problems() for _ in range(s["samples"])]
    right = [last_number_reward(t, p["answer"]) for t, p in zip(s["texts"], probs, strict=True)]
    return np.array(right).reshape(-1, s["samples"])


def pass_at_k_curve(names, directory: Path | None = None) -> dict:
    """k -> mean unbiased pass@k (``grpo.lm.eval.pass_at_k_per_problem``) over ``names``' runs."""
    ks = D.DESIGN.pass_at_k
    return {k: float(np.mean([pass_at_k_per_problem(sampled_correct(n, directory), k).mean()
                              for n in names])) for k in ks}


def pass_at_k_lift(arm: str, k: int, directory: Path | None = None) -> Lift:
    """The arm's paired lift in pass@k over its start, on the pass@k problems (each a distinct
    calculation), with its seeds' spread."""
    base = pass_at_k_per_problem(sampled_correct(start_of(arm), directory), k)
    return paired_lift(base, np.stack([pass_at_k_per_problem(sampled_correct(n, directory), k)
                                       for n in arm_runs(arm)]))


def design_record() -> dict:
    """The design as committed before the runs, with the split's counts and the selection run's
    scores that chose the training prompt: the results file's ``decided.design`` block."""
    held = D.held_out_problems()
    return {"design": json.loads(json.dumps(D.DESIGN.as_record())),
            "split": {"one_step_calculations": len(D.one_step_chains()),
                      "held_out_calculations": len(D.held_out_chains()),
                      "held_out_problems": len(held), "wordings": D.WORDINGS,
                      "training_pool_problems": len(D.training_pool()),
                      "pass_at_k_problems": len(pass_k_problems())},
            "selection": {p: {k: round(v, 4) for k, v in r.items()}
                          for p, r in selection_scores().items()}}


def beyond_best_format(arm: str, which: str = "last_number",
                       directory: Path | None = None) -> Lift:
    """An arm's paired lift in one reading over the best format-given start
    (``best_format_start``): what the arm gives beyond what a prompt gives for free."""
    return arm_lift(arm, which, best_format_start(which, directory), directory)


@dataclass(frozen=True)
class Endpoints:
    """The design's endpoints, computed from the stored runs (``endpoints``): the primary, the
    secondary family with its Holm-adjusted p-values, and the detectable effect it was powered
    for."""
    primary: Lift
    secondary: dict                     # the design's eight, in its order: name -> Lift
    holm_p: dict                        # name -> Holm-adjusted p-value
    detectable: float

    @property
    def verdict(self) -> str:
        return verdict(self.primary, self.detectable)


SECONDARY = ("last_number", "beyond_best_format", "gap", "minus_format_reward",
             "minus_random_reward", "pass_at_1", "pass_at_16", "chapter_prompt_beyond_format")


def endpoints(directory: Path | None = None) -> Endpoints:
    """The primary endpoint (the 'grpo' arm's first-equation lift over its start) and the eight
    secondary ones of ``design.DESIGN``, in its order, Holm-corrected as one family; every run
    read from ``directory`` (as ``load_run``: the stored runs, or ``retrain()``'s folder)."""
    d = directory
    from grpo.stats import holm
    secondary = dict(zip(SECONDARY, (
        arm_lift("grpo", "last_number", None, d), beyond_best_format("grpo", "last_number", d),
        gap_lift("grpo", d), minus("grpo", "format_reward", "first_equation", d),
        minus("grpo", "random_reward", "first_equation", d),
        pass_at_k_lift("grpo", 1, d), pass_at_k_lift("grpo", 16, d),
        beyond_best_format("grpo_chapter_prompt", "last_number", d)), strict=True))
    adjusted = holm([x.p_value for x in secondary.values()])
    return Endpoints(primary=arm_lift("grpo", "first_equation", None, d), secondary=secondary,
                     holm_p={k: float(p) for k, p in zip(secondary, adjusted, strict=True)},
                     detectable=D.DESIGN.power["detectable_points"])


def verdict(primary: Lift, detectable: float) -> str:
    """The take-away the primary endpoint allows, in the chapter's words."""
    if primary.ci95[0] > 0:
        return (f"GRPO added {primary.points:+.1f} points [{primary.ci95[0]:+.1f}, "
                f"{primary.ci95[1]:+.1f}] on the arithmetic (the first equation) beyond the "
                "format")
    if primary.ci95[1] < 0:
        return (f"GRPO lowered the arithmetic (the first equation) by {-primary.points:.1f} points "
                f"[{primary.ci95[0]:+.1f}, {primary.ci95[1]:+.1f}] once the format was given")
    return (f"no arithmetic lift beyond the format that this design could detect (it detects "
            f"{detectable:.0f} points or more; it measured {primary})")




def replay(name: str = "grpo_seed0", n: int = 2) -> tuple[dict, dict]:
    """(stored, fresh): a stored GRPO run's first ``n`` iterations (logs without timings, and the
    first batch) and the same iterations re-run by this code, for ``results.mismatches``."""
    stored = load_run(name)
    if stored["design"] != json.loads(json.dumps(D.DESIGN.as_record())):
        raise ValueError(f"{name} was run under another design than design.DESIGN")
    _, _, log, first = train_decided(RUNS[name], iterations=n)
    return replayed(stored, log, first, n)


def main(argv=None) -> None:
    registry_command(MODULE, __doc__, run_and_store, RUNS, argv)


if __name__ == "__main__":
    main()
