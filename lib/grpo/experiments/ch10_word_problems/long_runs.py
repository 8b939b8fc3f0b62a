"""Chapter 10's long GSM8K-style runs (chapter 8 reads some too), stored:
``python -m grpo.experiments.ch10_word_problems.long_runs --all`` (``make full``).

A GRPO iteration on chapter 7's model costs CPU-seconds, so the decisive runs (a learning
rate sweep of 120 iterations, GRPO from a plateaued SFT model, expert iteration at equal CPU, the
practice probe with its SFT control, the strict reward) take CPU-hours, more than nbval can repeat.
This module runs them in spawned workers and writes each to
``data/runs/10_word_problems/NAME.json``: its spec and config, its full-precision log, its
validation curve (the 500 validation problems of ``PROTOCOL.splits()``, which also choose the
learning rate) and its per-problem outcomes on ``PROTOCOL.held_out()``, the 2,000 held-out
problems, which choose nothing. Chapter 8 reads these files; ``tests/test_stored_runs.py``
re-runs each run's first iterations and checks that the stored log is what this code produces, to
the last bit.

    python -m grpo.experiments.ch10_word_problems.long_runs --list               # the registry
    python -m grpo.experiments.ch10_word_problems.long_runs grpo_lr5e-05 start   # some runs
    python -m grpo.experiments.ch10_word_problems.long_runs --all --workers 2
                                # every run (plateau_sft before those it starts)

A chapter re-trains them with ``retrain()`` (its ``RETRAIN`` switch): every run is written to
``runstore.writable(RUN_FOLDER)``, ``scratch/runs/10_word_problems/``, and the weights a run saves
go to a ``models/`` folder beside them, so a reader's re-run never overwrites ``data/runs/`` or
``data/models/``. Only the command line above (or ``GRPO_STORE=1``) stores.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from grpo.lm.data import HELD_OUT, PROTOCOL, step_count
from grpo.lm.eval import EvalConfig, outcomes
from grpo.lm.model import save
from grpo.lm.rl import EIConfig, RunConfig, expert_iteration, train_lm_grpo
from grpo.lm.model import load
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.train import SFTConfig, sft
from grpo.runstore.models import MODELS_DIR, SFT_CHECKPOINT, SFT_TOKENIZER, load_sft
from grpo.pool import parallel_map
from grpo.runstore import (bits, command_line, config_from_json, cpu_timed, read_json, run_dir,
                           runs_to_write, unbits, without_timings, writable, write_json)

RUN_FOLDER = run_dir("10_word_problems")
MODULE = "grpo.experiments.ch10_word_problems.long_runs"
PLATEAU_CHECKPOINT = "08_plateau_sft.safetensors"
HELD_OUT_SAMPLES = 4                    # sampled completions per held-out problem, at T 0.7


@dataclass(frozen=True)
class LongRun:
    """One stored run: what it does (``kind``), from which checkpoint, with which config."""
    kind: str                           # "evaluate" | "grpo" | "expert_iteration" | "sft"
    config: object = None               # RunConfig | EIConfig | SFTConfig (None: "evaluate")
    # "worked": chapter 7's checkpoint | "plateau": PLATEAU_CHECKPOINT
    start: str = "worked"
    # "sft": train on the first N training problems only; also score them
    train_pool: int = 0
    save_as: str = ""                   # write the final weights to data/models/<save_as>
    note: str = field(default="", compare=False)


SWEEP = RunConfig(iterations=120, prompts=32, G=8, temperature=0.7, beta=0.04,
                  evaluation=EvalConfig(every=30, at_start=False))
SWEEP_LRS = (5e-5, 1.5e-4, 3e-4)
SEEDS = (0, 1)
# Fixed before any run, so the variants run beside the sweep: its middle lr. Each variant changes
# one thing against outcome GRPO at this lr, on the same two seeds.
VARIANT_LR = 1.5e-4
VARIANT = replace(SWEEP, lr=VARIANT_LR)
# SFT continued from chapter 7's checkpoint to the end of a 3,000-step cosine schedule.
LONG_SFT = SFTConfig(steps=3000, batch_size=32, lr=3e-4, warmup=20, eval_every=500,
                     eval_problems=200, seed=1)
# GRPO from the long-SFT model: three lrs (one seed each), beside a random-reward arm at 5e-5.
FROM_LONG_SFT_LRS: tuple = (1.5e-5, 5e-5, 1.5e-4)
FROM_LONG_SFT = replace(SWEEP, iterations=40, evaluation=EvalConfig(every=20))
PRACTICE = replace(SWEEP, iterations=60, lr=3e-4, beta=0.0, train_pool=64,
                   evaluation=EvalConfig(every=20))
# Practice's SFT controls on the same 64 problems: at GRPO's CPU (the SFT steps a GRPO run's CPU
# bought when the probe was designed, fixed since so the stored run stays the same), and at GRPO's
# 30 passes over them (60 steps of 32).
PRACTICE_SFT = SFTConfig(steps=2200, batch_size=32, lr=3e-4, warmup=20, eval_every=2200,
                         eval_problems=200, seed=1)
PRACTICE_SFT_EPOCHS = replace(PRACTICE_SFT, steps=60, warmup=5, eval_every=60)
EXPERT_ITERATION = EIConfig(iterations=200, warmup=10)
EI_LRS = (3e-5, 1e-4)

RUNS: dict[str, LongRun] = {
    "start": LongRun("evaluate", train_pool=64, note="chapter 7's worked-solution model, scored"),
    **{f"grpo_lr{lr:g}" + (f"_seed{seed}" if seed else ""):
       LongRun("grpo", replace(SWEEP, lr=lr, seed=seed), note="the lr x length sweep",
               save_as=f"10_grpo_lr{lr:g}_seed{seed}.safetensors" if lr == VARIANT_LR else "")
       for lr in SWEEP_LRS for seed in SEEDS},
    **{"strict_reward" + (f"_seed{seed}" if seed else ""):
       LongRun("grpo", replace(VARIANT, reward="strict", seed=seed),
               note="reward: the verifier AND every annotation right")
       for seed in SEEDS},
    **{"length_constant" + (f"_seed{seed}" if seed else ""):
       LongRun("grpo", replace(VARIANT, aggregation="constant", seed=seed),
               note="Dr. GRPO's length normalisation: the token sum over a constant, not 1/|o_i|")
       for seed in SEEDS},
    "raw_advantage": LongRun("grpo", replace(VARIANT, advantage="raw"),
                             note="GRPO with 0/1 advantages (no baseline): between expert "
                                  "iteration and GRPO"),
    "random_reward": LongRun("grpo", replace(VARIANT, reward="random"),
                             note="a reward that ignores the answer: Bernoulli at the batch's "
                                  "success rate"),
    **{f"expert_iteration_lr{lr:g}":
       LongRun("expert_iteration", replace(EXPERT_ITERATION, lr=lr),
               note="sample 32 x 8, keep the right ones, one SFT pass")
       for lr in EI_LRS},
    "practice_grpo": LongRun("grpo", PRACTICE, note="GRPO on 64 training problems, over and over"),
    "practice_sft": LongRun("sft", PRACTICE_SFT, train_pool=64,
                            note="SFT on the same 64 problems, GRPO's CPU"),
    "practice_sft_epochs": LongRun("sft", PRACTICE_SFT_EPOCHS, train_pool=64,
                                   note="SFT on the same 64 problems, GRPO's 30 passes over them"),
    "plateau_sft": LongRun("sft", LONG_SFT, save_as=PLATEAU_CHECKPOINT,
                           note="SFT continued to the end of a 3,000-step cosine schedule"),
    **{f"from_long_sft_lr{lr:g}": LongRun("grpo", replace(FROM_LONG_SFT, lr=lr), start="plateau",
                                          note="GRPO from the long-SFT model")
       for lr in FROM_LONG_SFT_LRS},
    **({"from_long_sft_random": LongRun("grpo", replace(FROM_LONG_SFT, lr=5e-5, reward="random"),
                                        start="plateau",
                                        note="from the long-SFT model, a reward that ignores the "
                                             "answer")}
       if FROM_LONG_SFT_LRS else {}),
}


def held_out_outcomes(model, tok, problems, samples: int = HELD_OUT_SAMPLES) -> dict:
    """Per-problem outcomes (``grpo.lm.eval.outcomes``) as 0/1 strings: ``greedy`` (one char a
    problem), ``sampled`` and ``annotations_ok`` (``samples`` chars a problem: the verifier's
    reward, and whether every ``<<a=b>>`` in that sample is right), and each problem's step
    count."""
    o = outcomes(model, tok, problems, samples, 0.7, PROTOCOL.eval_seed, annotations=True)
    return {"greedy": bits(o["greedy"]), "sampled": bits(o["sampled"]),
            "annotations_ok": bits(o["annotations_ok"]), "samples": samples,
            "steps": "".join(str(step_count(p)) for p in problems)}


def outcomes_of(name: str, key: str = "greedy", part: str = "held_out",
                directory: Path | None = None) -> np.ndarray:
    """A stored run's per-problem outcomes on the held-out problems (or its practised ``pool``):
    ``greedy`` 0/1, ``sampled`` the mean of its samples, ``annotations_ok`` likewise. ``directory``:
    where the run was written (default ``RUN_FOLDER``; ``retrain()``'s folder for a re-run)."""
    h = load_run(name, directory)[part]
    if key == "greedy":
        return unbits(h["greedy"])
    if key not in ("sampled", "annotations_ok"):
        raise ValueError(f"key must be 'greedy', 'sampled' or 'annotations_ok', got {key!r}")
    return unbits(h[key], h["samples"]).mean(1)


def lift(names, against="start", key: str = "greedy", part: str = "held_out",
         directory: Path | None = None):
    """The paired lift (``grpo.stats.paired_lift``) of stored runs over another: ``names`` one run
    or a list of seeds; ``against`` one run (shared) or a list paired row by row; all read from
    ``directory`` (as ``outcomes_of``)."""
    from grpo.stats import paired_lift
    names = [names] if isinstance(names, str) else list(names)
    base = [against] if isinstance(against, str) else list(against)
    before = np.stack([outcomes_of(n, key, part, directory) for n in base])
    after = np.stack([outcomes_of(n, key, part, directory) for n in names])
    return paired_lift(before if len(base) > 1 else before[0], after)


def models_dir(directory: Path | None = None) -> Path:
    """Where runs written to ``directory`` save their weights (``LongRun.save_as``) and find the
    plateau start: ``data/models/`` for the stored runs (``directory`` None or ``RUN_FOLDER``), a
    ``models/`` folder inside any other ``directory`` (a re-run in scratch)."""
    if directory is None or Path(directory).resolve() == RUN_FOLDER.resolve():
        return MODELS_DIR
    return Path(directory) / "models"


def start_model(spec: LongRun, directory: Path | None = None):
    """The spec's starting ``(model, tok)``: chapter 7's checkpoint, or the plateau model saved
    beside the runs in ``directory`` (``models_dir``)."""
    if spec.start != "plateau" or models_dir(directory) == MODELS_DIR:
        plateau = spec.start == "plateau"
        return load_sft(checkpoint=PLATEAU_CHECKPOINT if plateau else SFT_CHECKPOINT)
    tok = Tokenizer.load(MODELS_DIR / SFT_TOKENIZER)
    return load(models_dir(directory) / PLATEAU_CHECKPOINT), tok


def run(name: str, directory: Path | None = None) -> dict:
    """Run one registry entry in this process and return what ``data/runs/NAME.json`` stores;
    ``directory``: where the runs are written, which says where saved weights go
    (``models_dir``)."""
    torch.set_num_threads(1)
    result, cpu_s = cpu_timed(_run, RUNS[name], directory)
    return {"name": name, **result, "cpu_s": round(cpu_s, 1)}


def _run(spec: LongRun, directory: Path | None = None) -> dict:
    model, tok = start_model(spec, directory)
    train, val = PROTOCOL.splits()
    out = {"kind": spec.kind, "start": spec.start, "note": spec.note,
           "config": None if spec.config is None else asdict(spec.config)}
    if spec.kind == "grpo":
        result = train_lm_grpo(model, tok, train, val, spec.config)
        out.update(log=result["log"], evals=result["evals"])
        model.load_state_dict(result["state"])
    elif spec.kind == "expert_iteration":
        result = expert_iteration(model, tok, train, val, spec.config)
        out.update(log=result["log"], evals=result["evals"])
    elif spec.kind == "sft":
        pool = train[:spec.train_pool] if spec.train_pool else train
        history = sft(model, tok, pool, val, spec.config)
        out.update(log={"step": history["step"], "loss": history["loss"]},
                   evals={"step": history["eval_step"], "greedy": history["eval_greedy"]})
    if spec.save_as:            # scored as stored: the float32 weights rescore() reads back
        models_dir(directory).mkdir(parents=True, exist_ok=True)
        save(model, models_dir(directory) / spec.save_as)
        model = load(models_dir(directory) / spec.save_as)
    pool = spec.train_pool or getattr(spec.config, "train_pool", 0)
    # the practised problems' own outcomes
    if pool:
        out["pool"] = held_out_outcomes(model, tok, train[:pool])
    out["held_out"] = held_out_outcomes(model, tok, PROTOCOL.held_out(HELD_OUT))
    return out


def write(name: str, result: dict, directory: Path | None = None) -> Path:
    """Store a run as ``directory/NAME.json`` (default ``RUN_FOLDER``, read at the call; replaced
    atomically)."""
    directory = RUN_FOLDER if directory is None else directory
    return write_json(directory / f"{name}.json", result)


def _run_and_write(name: str, directory: str | None = None) -> str:
    directory = None if directory is None else Path(directory)
    return str(write(name, run(name, directory), directory))


def _retrain_one(job: tuple) -> str:
    return _run_and_write(*job)


def load_run(name: str, directory: Path | None = None) -> dict:
    """A stored run, as ``run`` returned it (from ``directory``, default ``RUN_FOLDER`` read at the
    call); a clear error, naming the command, if it was never run."""
    directory = RUN_FOLDER if directory is None else directory
    return read_json(directory / f"{name}.json", f"{MODULE} {name}")


_CONFIGS = {"grpo": RunConfig, "expert_iteration": EIConfig, "sft": SFTConfig}


def stored_config(run: dict):
    """A stored run's config, rebuilt as its dataclass (``runstore.config_from_json``)."""
    return config_from_json(_CONFIGS[run["kind"]], run["config"])


def rerun(name: str, n: int = 2) -> dict:
    """The first ``n`` iterations (SFT: steps, n <= its warm-up) of a registry entry's log, computed
    now from its start with its registry config; timings left out."""
    spec = RUNS[name]
    cfg = spec.config
    torch.set_num_threads(1)
    model, tok = start_model(spec)
    train, val = PROTOCOL.splits()
    if spec.kind == "grpo":
        short = replace(cfg, iterations=n, evaluation=replace(
            cfg.evaluation, problems=1, at_start=False, final_samples=0, held_out=0))
        log = train_lm_grpo(model, tok, train, val, short)["log"]
    elif spec.kind == "expert_iteration":
        log = expert_iteration(model, tok, train, val,
                               replace(cfg, iterations=n,
                                       evaluation=replace(cfg.evaluation, problems=1)))["log"]
    elif spec.kind == "sft":
        if n > cfg.warmup:
            raise ValueError(f"replay SFT within its warm-up ({cfg.warmup} steps): after it, the "
                             "lr depends on the total steps")
        pool = train[:spec.train_pool] if spec.train_pool else train
        history = sft(model, tok, pool, val, replace(cfg, steps=n, eval_problems=1, eval_every=n))
        log = {"step": history["step"], "loss": history["loss"]}
    else:
        raise ValueError(f"{name!r} is an evaluation, with no log to replay")
    return {k: v[:n] for k, v in without_timings(log).items()}


def replay(name: str, n: int = 2) -> tuple[dict, dict]:
    """``(stored, now)``: the first ``n`` rows of a stored run's log and the same rows computed now
    (``rerun``). The same result (``grpo.book.results.mismatches`` finds nothing) when this code,
    on any CPU, produced the stored file."""
    stored = load_run(name)
    if stored_config(stored) != RUNS[name].config:
        raise ValueError(f"{name}: the stored config is not the registry's: re-run it "
                         f"(`python -m {MODULE} {name}`)")
    now = rerun(name, n)
    return {k: stored["log"][k][:n] for k in now}, now


def rescore(name: str, n: int = 256) -> tuple[dict, dict]:
    """``(stored, now)``: the first ``n`` held-out outcomes of a stored run whose model is on disk
    (the evaluated start, or a run that saved its weights), and the same problems scored now.
    With ``n`` a multiple of 256 every generation batch is as it was, so the two are equal to the
    bit."""
    spec = RUNS.get(name)
    if spec is None or not (spec.kind == "evaluate" or spec.save_as):
        raise ValueError(f"{name!r} has no model on disk to re-score: choose the start or a run "
                         "that saves its weights (save_as)")
    if n < 256 or n % 256 or n > HELD_OUT:
        raise ValueError(f"n must be a multiple of 256 in [256, {HELD_OUT}], got {n}")
    torch.set_num_threads(1)
    model, tok = start_model(spec) if spec.kind == "evaluate" else load_sft(checkpoint=spec.save_as)
    now = held_out_outcomes(model, tok, PROTOCOL.held_out(HELD_OUT)[:n])
    h = load_run(name)["held_out"]
    per = {"greedy": 1, "sampled": h["samples"], "annotations_ok": h["samples"], "steps": 1}
    return {k: h[k][:n * m] for k, m in per.items()}, {k: now[k] for k in per}


def run_and_store(runs=None, workers: int = 2, directory: Path | None = None) -> list:
    """Run registry entries (``runs``: names, default all) in ``workers`` processes and store each
    in ``directory`` (default ``RUN_FOLDER``); ``plateau_sft`` (which the runs from the plateau
    start from) goes before those runs."""
    names = list(RUNS) if runs is None else list(runs)
    where = None if directory is None else str(directory)
    first = [n for n in names if RUNS[n].start != "plateau"]
    written = []
    for wave in (first, [n for n in names if n not in first]):
        if wave:
            written += parallel_map(_retrain_one, [(n, where) for n in wave], workers,
                                    desc="stored runs")
    return written


def retrain_dir() -> Path:
    """Where ``retrain`` writes: ``runstore.writable(RUN_FOLDER)``, i.e.
    ``scratch/runs/10_word_problems/`` (``RUN_FOLDER`` itself only under ``GRPO_STORE=1``)."""
    return writable(RUN_FOLDER)


def retrain(names=None, workers: int = 2, again: bool = False) -> Path:
    """A chapter's ``RETRAIN`` switch: run registry entries (default all) in ``workers`` processes
    into ``retrain_dir()``, never ``data/runs/`` or ``data/models/`` (saved weights go to its
    ``models/``), and return that folder for ``load_run(name, folder)``. A run already there is
    kept unless ``again`` (the chapter's switch then serves its lab page too)."""
    directory = retrain_dir()
    todo = runs_to_write(names, RUNS, directory, again)
    if todo:
        run_and_store(todo, workers, directory)
    return directory


def main(argv=None) -> None:
    command_line(MODULE, __doc__, lambda names, workers: run_and_store(names, workers), argv,
                 registry=RUNS, workers=2)


if __name__ == "__main__":
    main()
