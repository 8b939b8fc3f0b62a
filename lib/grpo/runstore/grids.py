"""Stored grids of short two-digit-addition jobs (chapter 9's, and chapter 12's): a grid's
outcomes, an SFT run's endpoints and the SFT run the starts come from, kept in a chapter's run
folder and read back as long as the file holds exactly the jobs asked for.

``stored_jobs(name, jobs, starts, tok, folder=..., reader=...)`` is ``addition.run_jobs`` whose
outcomes are kept in ``<folder>/<name>.json``: each job's ``repr`` (its start, config, seed and
sample counts) keys the file, so a job a reader has changed runs again and goes to the file's twin
under ``scratch/runs/`` (``runstore.writable``), never over the stored file; a maintainer re-stores
with ``GRPO_STORE=1``. The outcomes round-trip exactly (0/1 arrays as packed bits, floats as
JSON's shortest repr), so a page prints the same from the file as from the runs.
``stored_endpoints`` keeps SFT runs' lengths and last validation accuracy, ``stored_sft_run`` the
SFT run itself (its curve and its weights at the starts). ``reader`` names the page or command
that writes a file, for the error when it is missing. Wall-clock timings are not stored: they are
not results, and they would make every re-run a diff.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from grpo.lm.addition import Job, run_jobs, sft_endpoints
from grpo.lm.rl import RunConfig
from grpo.lm.tokenizer import Tokenizer
from grpo.lm.train import SFTConfig
from grpo.runstore import read_arrays, read_json, writable, write_arrays, write_json

TIMINGS = ("sample_s", "ref_s", "update_s")          # per-iteration seconds in a GRPO log


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
            plain[key] = {k: v for k, v in value.items() if k not in TIMINGS}
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
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items() if k != "type"}
        cfg = kinds[spec["cfg"]["type"]](**fields)
    return Job(spec["start"], cfg, spec["samples"], spec["many_samples"])


def _stored_then_scratch(path: Path, retrain: bool = False) -> list[Path]:
    """The files that may hold a grid: the stored one, then its scratch twin; those that exist.
    ``retrain``: none (the switch beside a chapter cell that re-trains a stored grid)."""
    if not isinstance(retrain, bool):
        raise ValueError(f"retrain must be True or False, got {retrain!r}")
    if retrain:
        return []
    return [p for p in dict.fromkeys([Path(path), writable(path)]) if p.is_file()]


def stored_jobs(name: str, jobs, starts: dict, tok: Tokenizer, workers: int = 2, *, folder,
                reader: str, retrain: bool = False) -> list[dict]:
    """``run_jobs(jobs, starts, tok, workers)``, read from ``<folder>/<name>.json`` when that holds
    these jobs, else from its scratch twin when that does,
    else run and written to ``runstore.writable(<folder>/<name>.json)``: the scratch twin, never a
    stored run, unless ``GRPO_STORE=1``. ``retrain=True`` runs them again whatever is stored, and
    writes the same place (the scratch twin)."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ValueError(f"name must be letters, digits and '_', got {name!r}")
    jobs = list(jobs)
    if not all(isinstance(j, Job) for j in jobs):
        raise ValueError("jobs must be grpo.lm.addition.Job instances")
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
                     folder, reader: str, retrain: bool = False) -> list[dict]:
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


def stored_sft_run(name: str, cfg: SFTConfig, levels, tok: Tokenizer, seed: int = 0, *, folder,
                   reader: str, retrain: bool = False) -> tuple[dict, dict]:
    """The SFT run the starts come from (``addition.train_sft(seed, cfg)``), stored: ``(history,
    states)``, the run's losses and validation curve, and the weights (float64, exact) at the
    first evaluation step to reach each validation greedy accuracy in ``levels`` and at its last
    step, ``{step: state dict}``. Read from ``<folder>/<name>.json`` and ``.npz``, or their scratch
    twins, when they hold this config, seed and levels, else trained
    and written to ``runstore.writable(folder)`` (never over a stored run); ``retrain=True`` trains
    it again and writes it there whatever is stored.

    Stored, not re-trained, because a long SFT run at a constant lr is chaotic: on another CPU's
    kernels (measured here with ATen's default kernels and MKL's COMPATIBLE mode) the float64
    weights agree to 1e-14 up to step 250 and the difference then grows about tenfold every 35
    steps (3e-6 by step 550), enough to flip answers of the GRPO runs started there."""
    from grpo.lm.addition import train_sft
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


def load_sft_run(name: str, folder, reader: str = "the chapter that stores it") -> tuple[dict, dict,
                                                                                      dict]:
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


__all__ = ["stored_jobs", "stored_endpoints", "stored_sft_run", "load_sft_run", "config_from_spec",
           "to_json", "from_json", "job_spec", "job_from_spec"]
