"""Chapter 9's grids of jobs, stored: ``grpo.runstore.grids`` bound to chapter 9's folders.
``stored_jobs(name, jobs, starts, tok)`` is ``run_jobs`` whose outcomes are kept in
``data/runs/09_addition/<name>.json``, and ``stored_endpoints(name, configs, tok)`` is
``sft_endpoints`` without the weights (each SFT run's length and last validation greedy), kept in
``data/runs/09_addition/endpoints/<name>.json``; ``folder=`` still chooses another folder.

The ablation grid, its replication on fresh seeds, the map of start points, the 2 x 2 of starts and
updates and the annealed SFT lengths are some 250 short runs, most of chapter 9's CPU. The chapter
reads them back as long as the file holds exactly its jobs (each job's ``repr``: its start, config,
seed and sample counts). A job a reader has changed runs again and goes to the file's twin under
``scratch/runs/`` (``runstore.writable``), never over the stored file; a maintainer who changes
the chapter's jobs re-stores them by executing it with ``GRPO_STORE=1``. The outcomes
round-trip exactly (0/1 arrays as packed bits, floats as JSON's shortest repr), so a chapter prints
the same from the file as from the runs. ``tests/test_stored_jobs.py`` re-runs one job of each file
and one SFT length of each endpoints file, and compares.

``stored_sft_run(name, cfg, levels, tok)`` keeps the SFT run the starts come from, in
``data/runs/09_addition/sft/``: its curve and the weights at the starts, since re-training a long
run on another CPU's kernels would not give the same weights (see its docstring).

Wall-clock timings are not stored: they are not results, and they would make every re-run a diff.
"""
from __future__ import annotations

from functools import partial

from grpo.runstore import grids, run_dir
from grpo.runstore.grids import (config_from_spec, from_json, job_from_spec,  # noqa: F401
                                 job_spec, to_json)

RUNS_DIR = run_dir("09_addition")
READER = "the chapter: jupyter execute chapters/09_grpo_addition.ipynb"
ENDPOINTS_DIR = RUNS_DIR / "endpoints"
SFT_DIR = RUNS_DIR / "sft"

stored_jobs = partial(grids.stored_jobs, folder=RUNS_DIR, reader=READER)
stored_endpoints = partial(grids.stored_endpoints, folder=ENDPOINTS_DIR, reader=READER)
stored_sft_run = partial(grids.stored_sft_run, folder=SFT_DIR, reader=READER)
load_sft_run = partial(grids.load_sft_run, folder=SFT_DIR, reader=READER)

__all__ = ["stored_jobs", "stored_endpoints", "stored_sft_run", "load_sft_run", "config_from_spec",
           "to_json", "from_json", "job_spec", "job_from_spec", "RUNS_DIR", "ENDPOINTS_DIR",
           "SFT_DIR"]
