"""Chapter 8's live run and switches: the page trains GRPO live (one cell tagged ``live-run``, in a
progress bar, writing nothing), and its stored-run switches (``RETRAIN`` for the main runs in the
chapter, ``RETRAIN_CONTROL`` for the random-reward control in its lab notes) re-train into scratch/,
never over data/runs/, with a Try-this edit of ``MAIN`` reaching the re-trained jobs."""
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from grpo import runstore
from grpo.experiments.ch08_grpo_math import main_runs

CHAPTER = Path(__file__).resolve().parents[1] / "chapters" / "08_grpo_math.ipynb"
LAB = Path(__file__).resolve().parents[1] / "book" / "lab_08_grpo_math.ipynb"


def _cells(page=CHAPTER):
    return json.loads(page.read_text())["cells"]


def _cell_with(text, page=CHAPTER):
    found = ["".join(c["source"]) for c in _cells(page)
             if c["cell_type"] == "code" and text in "".join(c["source"])]
    assert len(found) == 1, f"{len(found)} code cells hold {text!r}"
    return found[0]


def test_one_live_cell_trains_in_a_progress_bar_and_writes_nothing():
    live = [c for c in _cells() if "live-run" in c["metadata"].get("tags", [])]
    assert len(live) == 1 and live[0]["cell_type"] == "code"
    source = "\n".join(line.split("#")[0] for line in live[0]["source"])  # code, not comments
    # the library's own iteration (the one train_lm_grpo calls), not a copy of it
    assert "progress(" in source and "rl.grpo_iteration(" in source and "sample_groups(" in source
    assert "grpo_update(" not in source and "optim.Adam(" not in source
    for writer in ("write", "save", "open(", "store"):
        assert writer not in source, f"the live run must not write ({writer!r})"
    assert live[0]["outputs"], "the live run is executed and its log printed"


def _run_main_switch(retrain: bool, main):
    calls = []
    stub = SimpleNamespace(
        CONTINUED_SFT=main_runs.CONTINUED_SFT, BASELINE=main_runs.BASELINE, jobs=main_runs.jobs,
        stored_dir=main_runs.stored_dir,
        run_and_store=lambda jobs, directory: calls.append(("store", jobs, directory)),
        load_stored=lambda jobs, directory: calls.append(("load", jobs, directory)) or [None] * 4)
    source = _cell_with("RETRAIN = False")
    if retrain:
        source = source.replace("RETRAIN = False", "RETRAIN = True")
    exec(source, {"main_runs": stub, "writable": runstore.writable, "MAIN": main,
                  "print": lambda *a, **k: None})
    return calls


def test_the_main_runs_switch_reads_the_stored_runs_when_off():
    calls = _run_main_switch(False, main_runs.MAIN)
    assert [c[0] for c in calls] == ["load"] and calls[0][2] == main_runs.stored_dir()


@pytest.mark.parametrize("edit", [{}, {"lr": 1.5e-4}, {"reward": "strict"}, {"G": 16, "prompts": 16}])
def test_the_main_runs_switch_and_try_this_edits_retrain_into_scratch(monkeypatch, edit):
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    main = replace(main_runs.MAIN, **edit)
    calls = _run_main_switch(True, main)
    assert [c[0] for c in calls] == ["store", "load"]
    (_, jobs, folder), (_, _, read) = calls
    assert folder == read == runstore.SCRATCH_DIR / "runs" / "08_grpo_math" / "main"
    assert runstore.RUNS_DIR.resolve() not in folder.resolve().parents
    assert jobs == main_runs.jobs(main) and jobs[0] == replace(main, seed=main_runs.SEEDS[0])


def test_the_random_reward_switch_retrains_into_scratch():
    source = _cell_with("RETRAIN_CONTROL = False", LAB)
    head = source[:source.index("\n", source.index("control_dir ="))]
    asked = []
    scratch = runstore.SCRATCH_DIR / "runs" / "10_word_problems"
    stored = SimpleNamespace(RUN_FOLDER=runstore.RUNS_DIR / "10_word_problems",
                             retrain=lambda names: asked.append(list(names)) or scratch)
    off, on = {"stored": stored}, {"stored": stored}
    exec(head, off)
    exec(head.replace("RETRAIN_CONTROL = False", "RETRAIN_CONTROL = True"), on)
    assert off["control_dir"] == stored.RUN_FOLDER
    assert asked == [[on["RANDOM"], on["OUTCOME"]]] and on["control_dir"] == scratch


def test_long_runs_retrain_writes_under_scratch(monkeypatch):
    from grpo.experiments.ch10_word_problems import long_runs
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    assert long_runs.retrain_dir() == runstore.SCRATCH_DIR / "runs" / "10_word_problems"
