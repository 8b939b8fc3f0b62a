"""What chapter 11's three experiments share, written once: ``smollm2_runs`` (the first runs),
``format_runs`` (the first design) and ``four_way_runs`` (the second design) each keep a registry of
named runs (``RUNS``: name -> spec) in a folder of ``data/runs/11_pretrained/``, and each GRPO run
is SmolLM2-135M trained on a list of prompts with a reward.

    train_from_problems   GRPO from the start model (``grpo.lm.hf.train_hf_grpo``) on problems
                          in order, paid a batch reward, its first batch kept as the reader sees it
    store_runs            a registry's runs in worker processes, each written to NAME.json
    retrain_runs          the chapter's RETRAIN switch: into scratch/, never data/runs/
    read_run              a stored run back, an error naming the command when it was never run
    replayed              a stored run's first iterations beside the same iterations re-run now
    greedy_texts          greedy answers to problems, in batches, under a prompt
    with_cpu_s            a run's record with the CPU-seconds it took
    registry_command      the command line: ``python -m MODULE NAMES | --all | --list``

Each experiment module offers the producer protocol (``run_and_store``, ``retrain``,
``retrain_dir``, ``load_run``, ``replay``, ``main``: tests/test_layout.py) through these.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from grpo.lm.hf import encode_prompts, train_hf_grpo
from grpo.pool import parallel_map
from grpo.runstore import (command_line, cpu_timed, read_json, runs_to_write, without_timings,
                           writable, write_json)


def train_from_problems(cfg, problems: list, iterations: int, paid: Callable, seen: dict,
                        render=None, prefix: Callable | None = None, checkpoint=None):
    """GRPO from the start model with ``cfg`` (an ``HFConfig``) for ``iterations`` iterations, each
    on the next ``cfg.prompts`` of ``problems``, paid ``paid(texts, answers, finished)``, a batch
    reward that records what the verifier says of each completion in ``seen`` (``smollm2_runs``'
    ``batch_reward``). ``render`` puts each question to the model; ``prefix(question)``, the start
    of the answer a prompt writes for the model, is put back before each stored text.
    ``checkpoint`` as ``train_hf_grpo``'s. Returns (policy, tokenizer, log, first batch): each
    step's log adds the verifier's ``correct_mean`` and ``ended_mean``."""
    batches = [problems[i * cfg.prompts:(i + 1) * cfg.prompts] for i in range(iterations)]
    first = {}

    def record(step, stats):
        stats.update(correct_mean=float(np.mean(seen["correct"])),
                     ended_mean=float(np.mean(seen["finished"])))
        if step == 0:
            asked = {"questions": [p["question"] for p in batches[0]],
                     "answers": [p["answer"] for p in batches[0]]}
            if prefix is None:          # each experiment's stored key order
                first.update(asked, **seen)
            else:                       # the texts as the reader sees them: prefix included
                prefixes = [prefix(p["question"]) for p in batches[0] for _ in range(cfg.G)]
                first.update(seen, **asked, texts=[a + t for a, t in zip(prefixes, seen["texts"],
                                                                         strict=True)])

    policy, tok, log = train_hf_grpo(
        cfg, ([[p["question"] for p in b], [p["answer"] for p in b]] for b in batches),
        reward=paid, on_step=record, render=render, checkpoint=checkpoint)
    return policy, tok, log, first


@torch.inference_mode()
def greedy_texts(model, tok, problems, max_new_tokens: int, batch_size: int, render=None):
    """Greedy answers to ``problems``, ``batch_size`` at a time, each question put alone in the
    chat template or by ``render`` (``grpo.lm.hf.encode_prompts``): ``(texts, ended, lengths)``,
    whether each ended within ``max_new_tokens`` and its length in tokens."""
    model.eval()
    texts, ended, lengths = [], [], []
    for i in range(0, len(problems), batch_size):
        batch = problems[i:i + batch_size]
        ids, mask = encode_prompts(tok, [p["question"] for p in batch], model.device,
                                   instruction="", render=render)
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                             do_sample=False, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id)
        new = out[:, ids.shape[1]:]
        is_eos = new == tok.eos_token_id
        ended += is_eos.any(1).tolist()
        lengths += torch.where(is_eos.any(1), is_eos.int().argmax(1) + 1, new.shape[1]).tolist()
        texts += tok.batch_decode(new, skip_special_tokens=True)
    return texts, ended, lengths


def run_and_write(job: tuple) -> str:
    """One picklable job ``(run, name, folder)``: ``run(name, folder)``, written to
    ``folder/NAME.json``; the path."""
    run, name, folder = job
    return str(write_json(Path(folder) / f"{name}.json", run(name, Path(folder))))


def store_runs(run: Callable, registry: dict, folder, names=None, workers: int = 2,
               last: tuple = ()) -> list:
    """Run ``registry`` entries (``names``, default all) with ``run(name, folder)`` in ``workers``
    processes (in this one when 1) and write each to ``folder``; the names in ``last`` after all
    the others (they read them: chapter 11's SFT reads grpo_seed0's CPU)."""
    names = list(registry) if names is None else list(names)
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(f"runs: unknown {unknown}; the runs are {list(registry)}")
    written = []
    for wave in ([n for n in names if n not in last], [n for n in names if n in last]):
        jobs = [(run, n, str(folder)) for n in wave]
        if workers == 1 or len(jobs) == 1:
            written += [run_and_write(job) for job in jobs]
        elif jobs:
            written += parallel_map(run_and_write, jobs, workers=workers, desc="runs")
    return written


def retrain_runs(run: Callable, registry: dict, folder, names=None, workers: int = 2,
                 again: bool = False, last: tuple = ()) -> Path:
    """A RETRAIN switch: re-run entries (default all) into ``runstore.writable(folder)``, under
    scratch/ (``folder`` itself only under ``GRPO_STORE=1``), and return that folder. A run already
    there is kept unless ``again``."""
    directory = writable(folder)
    todo = runs_to_write(names, registry, directory, again)
    if todo:
        store_runs(run, registry, directory, todo, workers, last)
    return directory


def read_run(module: str, registry: dict, folder, name: str, directory=None) -> dict:
    """A stored run of ``registry`` from ``directory`` (default ``folder``); a clear error naming
    ``python -m module NAME`` when it was never run."""
    if name not in registry:
        raise ValueError(f"name: unknown run {name!r}; the runs are {list(registry)}")
    directory = Path(folder) if directory is None else Path(directory)
    return read_json(directory / f"{name}.json", f"{module} {name}")


def replayed(stored: dict, log: list, first: dict, n: int) -> tuple[dict, dict]:
    """(stored, fresh): a stored run's first ``n`` iterations (logs without timings, and the first
    batch) and the same iterations re-run now, as JSON would store them, for
    ``grpo.book.results.mismatches``."""
    def plain(log, first):
        return {"log": [without_timings(s) for s in log[:n]], "first_batch": first}
    return plain(stored["log"], stored["first_batch"]), json.loads(json.dumps(plain(log, first)))


def with_cpu_s(work: Callable) -> dict:
    """``work()``'s record with ``cpu_s``, the CPU-seconds it took (``runstore.cpu_timed``)."""
    out, cpu = cpu_timed(work)
    out["cpu_s"] = round(cpu, 1)
    return out


def registry_command(module: str, doc: str, run_and_store: Callable, registry: dict,
                     argv=None) -> None:
    """``python -m module [NAMES | --all | --list] [--workers N]``: ``run_and_store(names,
    workers)`` on the named runs of ``registry`` (``runstore.command_line``)."""
    command_line(module, doc, lambda names, workers: run_and_store(names, workers), argv,
                 registry=registry, workers=2)
