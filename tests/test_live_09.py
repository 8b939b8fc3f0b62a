"""Chapter 9's live run and switches: the stored grids the chapter and its lab notes build from
``grpo.experiments.ch09_addition.grids`` are exactly the jobs the stored files hold (so neither page
re-trains them by accident), and a ``RETRAIN`` switch (``retrain=True``) trains again into
scratch/runs/, never over a stored run."""
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from grpo import runstore
from grpo.experiments.ch09_addition import grids as Gd
from grpo.runstore import addition_jobs as J
from grpo.lm import addition as A

START, LR = 550, 1e-4                 # chapter 9's start and reference rate (data/results/09_*)


def _keys(name):
    return json.loads((J.ADDITION_FOLDER / f"{name}.json").read_text())["jobs"]


def test_the_grid_builders_are_the_stored_files_jobs():
    R, ups = J.GRPO_RECIPE, Gd.updates(J.GRPO_RECIPE, LR)
    assert _keys("starts_2x2") == [repr(j) for j in Gd.grid_jobs(START, "annealed, 920 steps", ups)]
    seeds = [f"{kind}, SFT seed {s}" for s in Gd.SFT_SEEDS for kind in ("snapshot", "annealed")]
    assert _keys("starts_by_sft_seed") == [repr(j) for j in Gd.across_jobs(seeds, ups)]
    assert _keys("ablations") == [repr(j) for j in Gd.ablation_jobs(START, R, LR)]
    called = [("reuse 4, same steps", Gd.STRESS)]
    assert _keys("replication") == [repr(j) for j in Gd.replication_jobs(START, R, LR, called)]
    starts = [190, 500, 530, 550, 560, 590, 760, 980]
    control = Gd.control_config(R)          # at Gd.SFT_BASIS, whatever make bench now measures
    assert _keys("start_map") == [repr(j) for j in Gd.map_jobs(starts, START, R, LR, control)]


def test_main_runs_from_results_give_the_chapters_lift():
    before, runs = Gd.main_runs_from_results()
    results = json.loads((runstore.DATA_DIR / "results" / "09_grpo_addition.json").read_text())
    from grpo.stats import paired_lift
    lift = paired_lift(before["greedy"], np.stack([r["greedy"] for r in runs]))
    assert round(lift.points, 2) == results["addition"]["greedy_lift_points"]
    assert before["sampled"].shape == (A.N_TEST, A.EVAL_SAMPLES)
    assert round(float(before["sampled"].mean()), 4) == results["addition"]["sft_sampled"]


def test_a_retrained_sft_run_goes_to_scratch(tmp_path, monkeypatch):
    runs, scratch = tmp_path / "data" / "runs", tmp_path / "scratch"
    monkeypatch.setattr(runstore, "RUNS_DIR", runs)
    monkeypatch.setattr(runstore, "SCRATCH_DIR", scratch)
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    cfg = replace(J.SFT_RECIPE, steps=2, eval_every=1, eval_problems=4)
    folder = runs / "09_addition" / "sft"
    tok = A.addition_tokenizer()
    history, states = J.stored_sft_run("tiny", cfg, (), tok, folder=folder, retrain=True)
    assert not folder.exists()
    # what scratch holds is this run: its config, its history, its last step's weights
    keys, stored_history, stored_states = J.load_sft_run("tiny", scratch / "runs" / "09_addition"
                                                         / "sft")
    assert keys == {"config": repr(cfg), "seed": 0, "levels": []}
    assert stored_history == history and len(history["step"]) == cfg.steps
    assert list(stored_states) == list(states) == [history["eval_step"][-1]]
    assert all(torch.equal(stored_states[s][k], v.to(stored_states[s][k].dtype))
               for s in states for k, v in states[s].items())
    # asked again without retrain=True, it is read back from scratch, not trained again
    monkeypatch.setattr(J, "train_sft", lambda *a, **k: pytest.fail("trained again"))
    assert J.stored_sft_run("tiny", cfg, (), tok, folder=folder)[0] == history
    cfgs = [replace(J.SFT_RECIPE, steps=2, eval_every=2, eval_problems=4)]
    ends = J.stored_endpoints("ends", cfgs, tok, workers=1,
                              folder=runs / "09_addition" / "endpoints", retrain=True)
    written = json.loads((scratch / "runs" / "09_addition" / "endpoints" / "ends.json").read_text())
    assert written["keys"] == {"configs": [repr(c) for c in cfgs], "seed": 0}
    assert written["endpoints"] == ends and ends[0]["steps"] == 2
    assert not (runs / "09_addition" / "endpoints").exists()


def test_a_switch_cost_sums_the_bench_estimates_of_its_files(tmp_path):
    costs = tmp_path / "09_switches.json"
    costs.write_text(json.dumps({"files": {
        "lr_sweep": {"jobs": 13, "jobs_measured": 2, "estimate_cpu_s": 150.0},
        "sft/sft_run": {"jobs": 1, "jobs_measured": 0, "estimate_cpu_s": 90.0}}}))
    assert Gd.retrain_cost("lr_sweep", costs=costs) == \
        "RETRAIN = True would train again 13 runs, about 2 CPU-minutes (make bench's estimate)"
    assert Gd.retrain_cost("lr_sweep", "sft/sft_run", costs=costs).startswith(
        "RETRAIN = True would train again 14 runs, about 4 CPU-minutes")
    assert Gd.retrain_cost("sft/sft_run", costs=costs).startswith(
        "RETRAIN = True would train again 1 run, about 2 CPU-minutes")
    costs.write_text(json.dumps({"files": {"one": {"jobs": 1, "estimate_cpu_s": 60.0},
                                           "tiny": {"jobs": 2, "estimate_cpu_s": 20.0}}}))
    assert "1 run, about 1 CPU-minute (" in Gd.retrain_cost("one", costs=costs)
    assert "2 runs, under 1 CPU-minute" in Gd.retrain_cost("tiny", costs=costs)
    with pytest.raises(ValueError, match="files"):
        Gd.retrain_cost("ablation", costs=costs)          # a name the bench did not measure
    with pytest.raises(ValueError, match="files"):
        Gd.retrain_cost(costs=costs)
    with pytest.raises(FileNotFoundError, match="bench_addition_switches"):
        Gd.retrain_cost("lr_sweep", costs=tmp_path / "missing.json")


def test_the_bench_measured_every_stored_file_of_chapter_9():
    known = json.loads(Gd.SWITCH_COSTS.read_text())["files"]
    stored = {str(p.relative_to(J.ADDITION_FOLDER).with_suffix(""))
              for p in J.ADDITION_FOLDER.rglob("*.json")}
    assert set(known) == stored
    assert all(f["estimate_cpu_s"] > 0 and f["jobs"] >= 1 for f in known.values())


def test_run_job_refuses_what_is_not_a_job():
    with pytest.raises(ValueError, match="job must be a Job"):
        J.run_job({"start": 550, "cfg": None}, {}, A.addition_tokenizer())


def test_the_readings_give_the_chapters_results_file_and_cover_every_stored_file():
    """``readings``, which chapter 9 writes its results file from and its lab notes show as tables,
    reads the stored runs back into that file byte for byte; its one switch's cost covers every
    stored file the bench measured."""
    from grpo.files import json_ready
    from grpo.experiments.ch09_addition import readings as Rd
    assert set(Rd.STORED_FILES) == set(json.loads(Gd.SWITCH_COSTS.read_text())["files"])
    r = Rd.read_grids(A.addition_tokenizer())
    assert r.sft.start == START and r.sweep.lr == LR and r.grid.key == "annealed, 920 steps"
    text = json.dumps(json_ready(Rd.grid_registry(r)), indent=2, sort_keys=True,
                      allow_nan=False) + "\n"
    assert text == (runstore.DATA_DIR / "results" / "09_grpo_addition.json").read_text()
