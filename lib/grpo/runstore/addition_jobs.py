"""Chapter 9's two-digit-addition runs, which chapter 12 shares: the model, the recipes, the stored
SFT run the starts come from, jobs from those starts, and their stored outcomes. Both chapters read
these facts from here, so neither can silently read another run.

``run_jobs(jobs, starts, tok)`` runs GRPO (a ``RunConfig``), continued SFT (an ``SFTConfig``) or
nothing (``None``: the start itself) from SFT snapshots, in spawned workers, and returns each job's
per-problem test outcomes: what ``grpo.stats.paired_lift`` needs.

``stored_jobs(name, jobs, starts, tok)`` is ``run_jobs`` whose outcomes are kept in
``<folder>/<name>.json`` (chapter 9's folder unless ``folder`` says another): each job's ``repr``
(its start, config, seed and sample counts) keys the file, so a job a reader has changed runs again
and goes to the file's twin under ``scratch/runs/`` (``runstore.writable``), never over the stored
file; a maintainer re-stores with ``GRPO_STORE=1``. The outcomes round-trip exactly (0/1 arrays as
packed bits, floats as JSON's shortest repr), so a page prints the same from the file as from the
runs. ``stored_endpoints`` keeps SFT runs' lengths and last validation accuracy, ``stored_sft_run``
the SFT run itself (its curve and its weights at the starts). ``reader`` names the page or command
that writes a file, for the error when it is missing. Timings are not stored: they are not results,
and they would make every re-run a diff.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from grpo.lm.addition import (EVAL_SAMPLES, EVAL_SEED, EVAL_TEMPERATURE, MANY_PROBLEMS,
                              MAX_NEW_TOKENS, N_VAL, addition_tokenizer, make_addition_splits)
from grpo.lm.eval import EvalConfig, outcomes
from grpo.lm.model import GPT, GPTConfig
from grpo.lm.rl import RunConfig, train_lm_grpo
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.train import SFTConfig, sft
from grpo.pool import parallel_map
from grpo.runstore import (config_from_json, read_arrays, read_json, run_dir, without_timings,
                           writable, write_arrays, write_json)

# ----------------------------------------------------------------------------- chapter 9's runs

# The model: nanoGPT's decoder at 2 layers, d 64.
MODEL = dict(n_layer=2, n_head=4, d_model=64, max_len=128)

# SFT at a constant lr, so a run stopped at step s is the same run as a longer one up to s, and one
# run gives every start point (``sft(..., keep_states=True)``).
SFT_RECIPE = SFTConfig(steps=1500, batch_size=64, lr=1e-3, warmup=0, min_lr_frac=1.0,
                       weight_decay=0.0, eval_every=25, eval_problems=N_VAL)

# The published run's GRPO settings: 48 prompts x 8 completions at T 0.7, k3 KL with beta 0.08,
# eps 0.2, one clipped update per batch, 20 iterations. lr is ours (the run does not give it).
GRPO_RECIPE = RunConfig(iterations=20, prompts=48, G=8, lr=1e-4, warmup=0, temperature=0.7,
                        max_new_tokens=MAX_NEW_TOKENS, beta=0.08, eps_low=0.2, reuse=1,
                        evaluation=EvalConfig(every=5, problems=N_VAL, samples=1, at_start=False))

# The stored SFT run the starts come from, checked every 10 steps; the start levels are its first
# checks to reach each validation greedy accuracy.
SFT_RUN = replace(SFT_RECIPE, eval_every=10)
LEVELS = (0.03, 0.1, 0.2, 0.36, 0.5, 0.7, 0.85, 0.95)

# Chapter 9's folders: its grids, its SFT runs' endpoints, its stored SFT run.
ADDITION_FOLDER = run_dir("09_addition")
ENDPOINTS_FOLDER = ADDITION_FOLDER / "endpoints"
SFT_FOLDER = ADDITION_FOLDER / "sft"
READER = "chapter 9: jupyter execute chapters/09_grpo_addition.ipynb"


def addition_model(tok: Tokenizer, seed: int = 0) -> GPT:
    """A fresh 2-layer, d-64 GPT for ``tok``, initialised from ``seed``. GPT draws its initial
    weights from torch's global generator, as the stored runs did, so this seeds it."""
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


def run_job(job: Job, state: dict, tok: Tokenizer) -> dict:
    """One job in this process, from ``state`` (a start's weights): what ``run_jobs`` returns for
    it. ``bench/bench_addition_switches.py`` times it, one job of each kind."""
    if not isinstance(job, Job):
        raise ValueError(f"job must be a Job, got {type(job).__name__}")
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


def _run(args) -> dict:
    job, state, tok_json = args
    torch.set_num_threads(1)
    return run_job(job, state, Tokenizer.from_str(tok_json))


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



# ----------------------------------------------------------------------------- their storage

def _pack(a: np.ndarray) -> dict:
    if not np.isin(a, (0, 1)).all():
        raise ValueError(f"only 0/1 outcomes are stored as bits, got values {np.unique(a)[:5]}")
    bits = np.packbits(a.astype(bool).ravel()).tobytes().hex()
    return {"shape": list(a.shape), "dtype": str(a.dtype), "bits": bits}


def _unpack(d: dict) -> np.ndarray:
    n = int(np.prod(d["shape"]))
    bits = np.unpackbits(np.frombuffer(bytes.fromhex(d["bits"]), dtype=np.uint8))[:n]
    return bits.astype(d["dtype"]).reshape(d["shape"])


def to_json(out: dict) -> dict:
    """One job's output as JSON: arrays packed, GRPO logs without their timings."""
    plain = {}
    for key, value in out.items():
        if isinstance(value, np.ndarray):
            plain[key] = _pack(value)
        elif key == "log":
            plain[key] = without_timings(value)
        else:
            plain[key] = value
    return plain


def from_json(plain: dict) -> dict:
    """``to_json``'s inverse: the arrays back as numpy, bit for bit."""
    return {k: _unpack(v) if isinstance(v, dict) and "bits" in v else v for k, v in plain.items()}


def job_spec(job: Job) -> dict:
    """A job as JSON, enough to rebuild it (``job_from_spec``) and re-run it."""
    cfg = None if job.cfg is None else {"type": type(job.cfg).__name__, **asdict(job.cfg)}
    return {"start": job.start, "cfg": cfg, "samples": job.samples,
            "many_samples": job.many_samples}


def job_from_spec(spec: dict) -> Job:
    """``job_spec``'s inverse (JSON lists back to tuples)."""
    cfg = spec["cfg"]
    if cfg is not None:
        kinds = {"RunConfig": RunConfig, "SFTConfig": SFTConfig}
        if cfg.get("type") not in kinds:
            raise ValueError(f"spec cfg type must be one of {list(kinds)}, got {cfg.get('type')!r}")
        cfg = config_from_json(kinds[cfg["type"]], {k: v for k, v in cfg.items() if k != "type"})
    return Job(spec["start"], cfg, spec["samples"], spec["many_samples"])


def _stored_then_scratch(path: Path, retrain: bool = False) -> list[Path]:
    """The files that may hold a grid: the stored one, then its scratch twin; those that exist.
    ``retrain``: none (the switch beside a chapter cell that re-trains a stored grid)."""
    if not isinstance(retrain, bool):
        raise ValueError(f"retrain must be True or False, got {retrain!r}")
    if retrain:
        return []
    return [p for p in dict.fromkeys([Path(path), writable(path)]) if p.is_file()]


def stored_jobs(name: str, jobs, starts: dict, tok: Tokenizer, workers: int = 2, *,
                folder=ADDITION_FOLDER, reader: str = READER, retrain: bool = False) -> list[dict]:
    """``run_jobs(jobs, starts, tok, workers)``, read from ``<folder>/<name>.json`` when that holds
    these jobs, else from its scratch twin when that does,
    else run and written to ``runstore.writable(<folder>/<name>.json)``: the scratch twin, never a
    stored run, unless ``GRPO_STORE=1``. ``retrain=True`` runs them again whatever is stored, and
    writes the same place (the scratch twin)."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ValueError(f"name must be letters, digits and '_', got {name!r}")
    jobs = list(jobs)
    if not all(isinstance(j, Job) for j in jobs):
        raise ValueError("jobs must be Job instances (grpo.runstore.addition_jobs.Job)")
    path = Path(folder) / f"{name}.json"
    keys = [repr(j) for j in jobs]
    for candidate in _stored_then_scratch(path, retrain):
        stored = read_json(candidate, reader)
        if stored["jobs"] == keys:
            return [from_json(o) for o in stored["outputs"]]
    outs = run_jobs(jobs, starts, tok, workers)
    stored = {"jobs": keys, "specs": [job_spec(j) for j in jobs],
              "outputs": [to_json(o) for o in outs]}
    write_json(writable(path), stored, indent=0, sort_keys=True)
    return [from_json(to_json(o)) for o in outs]        # what a later read returns, exactly


def stored_endpoints(name: str, configs, tok: Tokenizer, seed: int = 0, workers: int = 2, *,
                     folder=ENDPOINTS_FOLDER, reader: str = READER,
                     retrain: bool = False) -> list[dict]:
    """``sft_endpoints(configs, tok, seed, workers)`` without the weights: per config, ``steps`` and
    ``val_greedy`` (its last validation greedy accuracy), read from ``<folder>/<name>.json`` when
    that holds these configs and seed, else from its scratch twin,
    else run and written to ``runstore.writable`` of that path (never a stored run); with
    ``retrain=True``, run and written there whatever is stored.
    A chapter that needs one endpoint's weights trains that config again (``sft_endpoints``)."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ValueError(f"name must be letters, digits and '_', got {name!r}")
    configs = list(configs)
    if not configs or not all(isinstance(c, SFTConfig) for c in configs):
        raise ValueError("configs must be a non-empty list of SFTConfig")
    path = Path(folder) / f"{name}.json"
    keys = {"configs": [repr(c) for c in configs], "seed": seed}
    for candidate in _stored_then_scratch(path, retrain):
        stored = read_json(candidate, reader)
        if stored["keys"] == keys:
            return stored["endpoints"]
    ends = [{"steps": e["steps"], "val_greedy": e["val_greedy"]}
            for e in sft_endpoints(configs, tok, seed, workers)]
    # config_from_spec rebuilds each config
    specs = [job_spec(Job(0, c))["cfg"] for c in configs]
    write_json(writable(path), {"keys": keys, "specs": specs, "endpoints": ends}, indent=0,
               sort_keys=True)
    return json.loads(json.dumps(ends))


def stored_sft_run(name: str, cfg: SFTConfig, levels, tok: Tokenizer, seed: int = 0, *,
                   folder=SFT_FOLDER, reader: str = READER,
                   retrain: bool = False) -> tuple[dict, dict]:
    """The SFT run the starts come from (``train_sft(seed, cfg)``), stored: ``(history,
    states)``, the run's losses and validation curve, and the weights (float64, exact) at the
    first evaluation step to reach each validation greedy accuracy in ``levels`` and at its last
    step, ``{step: state dict}``. Read from ``<folder>/<name>.json`` and ``.npz``, or their scratch
    twins, when they hold this config, seed and levels, else trained
    and written to ``runstore.writable(folder)`` (never over a stored run); ``retrain=True`` trains
    it again and writes it there whatever is stored.

    Stored, not re-trained, because a long SFT run at a constant lr is chaotic: on another CPU's
    kernels the float64 weights agree at first, then drift apart, enough to flip answers of the
    GRPO runs started late in the run."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ValueError(f"name must be letters, digits and '_', got {name!r}")
    if not isinstance(cfg, SFTConfig):
        raise ValueError(f"cfg must be an SFTConfig, got {type(cfg).__name__}")
    levels = [float(x) for x in levels]
    folder = Path(folder)
    keys = {"config": repr(cfg), "seed": seed, "levels": levels}
    if not isinstance(retrain, bool):
        raise ValueError(f"retrain must be True or False, got {retrain!r}")
    for place in () if retrain else dict.fromkeys([folder, writable(folder)]):
        if (place / f"{name}.json").is_file() and (place / f"{name}.npz").is_file():
            stored_keys, history, states = load_sft_run(name, place, reader)
            if stored_keys == keys:
                return history, states
    _, _, history = train_sft(seed, cfg)
    at = dict(zip(history["eval_step"], history["states"]))
    kept = sorted({next(s for s, g in zip(history["eval_step"], history["eval_greedy"]) if g >= lv)
                   for lv in levels} | {history["eval_step"][-1]})
    plain = {k: history[k] for k in ("step", "loss", "eval_step", "eval_greedy")}
    arrays = {f"{step}/{k}": v.detach().cpu().numpy() for step in kept for k, v in at[step].items()}
    out = writable(folder)                 # never over a stored run, unless GRPO_STORE=1
    write_arrays(out / f"{name}.npz", arrays)
    write_json(out / f"{name}.json", {"keys": keys, "kept": kept, "history": plain}, indent=0,
               sort_keys=True)
    return json.loads(json.dumps(plain)), {step: at[step] for step in kept}


def load_sft_run(name: str, folder=SFT_FOLDER, reader: str = READER) -> tuple[dict, dict, dict]:
    """A stored SFT run as it is on disk, whatever it was stored for: ``(keys, history, states)``
    (``keys``: the config's repr, the seed and the levels it was stored with)."""
    folder = Path(folder)
    path, weights = folder / f"{name}.json", folder / f"{name}.npz"
    if not (path.is_file() and weights.is_file()):
        raise FileNotFoundError(f"no stored SFT run {name!r} in {folder}: {reader} writes it")
    stored = read_json(path, reader)
    arrays = read_arrays(weights)
    states = {step: {k.split("/", 1)[1]: torch.from_numpy(v) for k, v in arrays.items()
                     if k.split("/", 1)[0] == str(step)} for step in stored["kept"]}
    return stored["keys"], stored["history"], states


def config_from_spec(spec: dict) -> SFTConfig:
    """An endpoints file's config back from its spec (``job_spec``'s ``cfg``)."""
    cfg = job_from_spec({"start": 0, "cfg": spec, "samples": 1, "many_samples": 0}).cfg
    if not isinstance(cfg, SFTConfig):
        raise ValueError(f"spec must describe an SFTConfig, got type {spec.get('type')!r}")
    return cfg


__all__ = ["MODEL", "SFT_RECIPE", "GRPO_RECIPE", "SFT_RUN", "LEVELS", "ADDITION_FOLDER",
           "ENDPOINTS_FOLDER", "SFT_FOLDER", "addition_model", "train_sft", "Job", "run_job",
           "run_jobs", "sft_endpoints", "stored_jobs", "stored_endpoints", "stored_sft_run",
           "load_sft_run", "config_from_spec", "to_json", "from_json", "job_spec", "job_from_spec"]
