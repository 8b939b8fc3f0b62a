"""Chapter 9's stored job grids (grpo.runstore.addition_jobs): the storage is exact and keyed
by the jobs, and one job of each stored file, re-run now from the same SFT start, reproduces it."""
import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from grpo.lm import addition as A
from grpo.runstore import addition_jobs as J
from grpo.lm.rl import RunConfig
from grpo.lm.train import SFTConfig
from grpo.book.results import mismatches

STORED = sorted(J.ADDITION_FOLDER.glob("*.json"))
ENDPOINTS = sorted(J.ENDPOINTS_FOLDER.glob("*.json"))


# ----------------------------------------------------------------------------- storage


def test_outputs_round_trip_bit_for_bit_without_timings():
    rng = np.random.default_rng(0)
    out = {"start": 550, "greedy": rng.integers(0, 2, 13).astype(float),
           "sampled": rng.integers(0, 2, (13, 3)).astype(float),
           "log": {"entropy_mean": [0.1 + 0.2, 1 / 3], "sample_s": [0.5], "update_s": [0.1], "ref_s": [0.2]},
           "evals": {"greedy": [0.25]}}
    back = J.from_json(json.loads(json.dumps(J.to_json(out))))
    assert back["greedy"].dtype == out["greedy"].dtype and np.array_equal(back["greedy"], out["greedy"])
    assert back["sampled"].shape == (13, 3) and np.array_equal(back["sampled"], out["sampled"])
    assert back["log"] == {"entropy_mean": [0.1 + 0.2, 1 / 3]}           # exact floats, no timings
    with pytest.raises(ValueError, match="0/1"):
        J.to_json({"greedy": np.array([0.5])})


def test_a_job_spec_rebuilds_the_same_job():
    for job in (J.Job(550, replace(J.GRPO_RECIPE, lr=3e-4, seed=2), samples=4),
                J.Job(10, replace(J.SFT_RECIPE, steps=105)), J.Job("annealed", None, 1, 256)):
        spec = json.loads(json.dumps(J.job_spec(job)))
        assert J.job_from_spec(spec) == job and repr(J.job_from_spec(spec)) == repr(job)
    with pytest.raises(ValueError, match="cfg type"):
        J.job_from_spec({"start": 1, "cfg": {"type": "Nope"}, "samples": 1, "many_samples": 0})


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    tok = A.addition_tokenizer()
    starts = {0: J.addition_model(tok).state_dict()}
    recipe = replace(J.GRPO_RECIPE, iterations=1, prompts=4, G=2,
                     evaluation=replace(J.GRPO_RECIPE.evaluation, every=1))
    jobs = [J.Job(0, recipe, samples=1),
            J.Job(0, None, samples=1)]
    return tok, starts, jobs


def test_the_first_call_runs_and_stores_a_later_one_reads(tmp_path, tiny, monkeypatch):
    tok, starts, jobs = tiny
    first = J.stored_jobs("grid", jobs, starts, tok, workers=1, folder=tmp_path)
    assert (tmp_path / "grid.json").is_file()

    def no_runs(*args, **kwargs):
        raise AssertionError("ran the jobs instead of reading them")

    monkeypatch.setattr(J, "run_jobs", no_runs)
    again = J.stored_jobs("grid", jobs, starts, tok, workers=1, folder=tmp_path)
    assert not mismatches(first, again, rtol=0, atol=0)
    changed = [jobs[0], replace(jobs[1], samples=2)]                   # another job: it must run
    with pytest.raises(AssertionError, match="ran the jobs"):
        J.stored_jobs("grid", changed, starts, tok, workers=1, folder=tmp_path)


@pytest.mark.parametrize("name, jobs, match", [("a/b", [], "name"), ("grid", ["not a job"], "jobs")])
def test_bad_input_is_a_clear_error(tmp_path, tiny, name, jobs, match):
    tok, starts, _ = tiny
    with pytest.raises(ValueError, match=match):
        J.stored_jobs(name, jobs, starts, tok, folder=tmp_path)


# ----------------------------------------------------------------------------- the stored files


SFT_SEEDS = (1, 2, 3)  # chapter 9's further SFT runs, each giving a snapshot and an annealed start


def test_chapter_9_stores_its_nine_grids_and_its_annealed_lengths():
    assert [p.stem for p in STORED] == ["ablations", "lr_sweep", "lr_sweep_more_seeds", "pass_at_k",
                                        "replication", "sft_control", "start_map", "starts_2x2",
                                        "starts_by_sft_seed"]
    assert [p.stem for p in ENDPOINTS] == ["annealed_lengths"]
    runs = ["annealed_pick", "sft_run"] + [f"{r}_seed{s}" for r in ("annealed_pick", "sft_run")
                                           for s in SFT_SEEDS]
    assert sorted(p.name for p in J.SFT_FOLDER.iterdir()) == sorted(
        f"{r}.{ext}" for r in runs for ext in ("json", "npz"))


@pytest.mark.parametrize("path", STORED, ids=[p.stem for p in STORED])
def test_every_stored_job_is_complete_and_rebuilds_from_its_spec(path):
    stored = json.loads(path.read_text())
    assert len(stored["jobs"]) == len(stored["specs"]) == len(stored["outputs"]) > 0
    for key, spec, out in zip(stored["jobs"], stored["specs"], stored["outputs"]):
        job = J.job_from_spec(spec)
        assert repr(job) == key
        out = J.from_json(out)
        assert out["greedy"].shape == (A.N_TEST,) and out["sampled"].shape == (A.N_TEST, job.samples)


# Files whose trained runs are another file's runs scored another way: they replay only the start's
# scoring, and test_the_pass_at_k_runs_are_the_main_runs ties their runs to the main runs.
START_ONLY = {"pass_at_k"}


def _replayed_jobs():
    """Per stored file, its first GRPO job and its first SFT job (if any) from the earliest start;
    for a file in ``START_ONLY``, its first job (the start, scored)."""
    picks = []
    for path in STORED:
        stored = json.loads(path.read_text())
        jobs = [J.job_from_spec(s) for s in stored["specs"]]
        if path.stem in START_ONLY:
            assert jobs[0].cfg is None, path.stem
            picks.append((path.stem, 0, jobs[0], stored["outputs"][0]))
            continue
        steps = [j.start for j in jobs if isinstance(j.start, int)]          # a step of train_sft's run
        first = min(steps) if steps else jobs[0].start                     # or a named start
        for kind in (RunConfig, SFTConfig):
            i = next((i for i, j in enumerate(jobs) if j.start == first and isinstance(j.cfg, kind)), None)
            if i is not None:
                picks.append((path.stem, i, jobs[i], stored["outputs"][i]))
    return picks


@pytest.fixture(scope="module")
def replays():
    """From the stored SFT run's starts (re-training them would not be portable: see
    ``stored_sft_run``; the next tests check the stored run against the code)."""
    picks = _replayed_jobs()
    _, _, starts = J.load_sft_run("sft_run")
    for s in SFT_SEEDS:                       # the named starts of the further SFT runs
        _, _, snapshot = J.load_sft_run(f"sft_run_seed{s}")
        starts[f"snapshot, SFT seed {s}"] = snapshot[min(snapshot)]
        _, _, annealed = J.load_sft_run(f"annealed_pick_seed{s}")
        starts[f"annealed, SFT seed {s}"] = annealed[max(annealed)]
    tok = A.addition_tokenizer()
    now = J.run_jobs([job for _, _, job, _ in picks], starts, tok)
    return [(f"{name}[{i}]", J.from_json(stored), J.from_json(J.to_json(out)))
            for (name, i, _, stored), out in zip(picks, now)]


def test_one_job_of_each_stored_file_reproduces(replays):
    assert {label.split("[")[0] for label, _, _ in replays} == {p.stem for p in STORED}
    for label, stored, now in replays:
        assert not mismatches(stored, now), f"{label}: " + "; ".join(mismatches(stored, now))


def _outputs(name):
    stored = json.loads((J.ADDITION_FOLDER / f"{name}.json").read_text())
    return [J.job_from_spec(s) for s in stored["specs"]], [J.from_json(o) for o in stored["outputs"]]


def test_the_pass_at_k_runs_are_the_main_runs():
    """pass@k re-trains the main run's five seeds and samples each test sum 256 times: the same
    training, so the same greedy outcomes as the main runs stored in the sweep and its extra seeds."""
    jobs, outs = _outputs("pass_at_k")
    main = [pair for name in ("lr_sweep", "lr_sweep_more_seeds") for pair in zip(*_outputs(name))]
    assert len(jobs) == 6 and jobs[0].cfg is None
    for job, out in zip(jobs[1:], outs[1:]):
        twin = next(o for j, o in main if j.start == job.start and j.cfg == job.cfg)
        assert np.array_equal(out["greedy"], twin["greedy"]), job
        assert out["many_sampled"].shape == (A.MANY_PROBLEMS, 256)


# ----------------------------------------------------------------------------- the stored SFT run


def test_the_stored_sft_run_is_what_the_code_trains():
    """Its first steps re-run now give the stored losses, and its earliest kept start (before the
    run turns chaotic, near step 250) is the stored weights to 1e-12."""
    keys, history, states = J.load_sft_run("sft_run")
    cfg = replace(J.SFT_RECIPE, eval_every=10)
    assert keys == {"config": repr(cfg), "seed": 0, "levels": [0.03, 0.1, 0.2, 0.36, 0.5, 0.7,
                                                                0.85, 0.95]}
    first = min(states)
    assert first <= 200 and history["eval_step"][-1] == cfg.steps == history["step"][-1]
    _, _, now = J.train_sft(cfg=replace(cfg, steps=first, eval_every=first))
    assert not mismatches(history["loss"][:first], now["loss"])
    for k, v in now["states"][-1].items():
        np.testing.assert_allclose(v.numpy(), states[first][k].numpy(), rtol=0, atol=1e-12)


def test_a_stored_sft_run_is_read_and_a_changed_one_trains(tmp_path, tiny, monkeypatch):
    tok, _, _ = tiny
    cfg = replace(J.SFT_RECIPE, steps=4, eval_every=2, eval_problems=8)
    history, states = J.stored_sft_run("tiny", cfg, (0.0,), tok, folder=tmp_path)
    assert sorted(states) == [2, 4] and len(history["loss"]) == 4

    def no_runs(*args, **kwargs):
        raise AssertionError("trained instead of reading")

    monkeypatch.setattr(J, "train_sft", no_runs)
    again, states_again = J.stored_sft_run("tiny", cfg, (0.0,), tok, folder=tmp_path)
    assert again == history and all(torch.equal(states[2][k], states_again[2][k]) for k in states[2])
    with pytest.raises(AssertionError, match="trained instead"):
        J.stored_sft_run("tiny", replace(cfg, lr=2e-3), (0.0,), tok, folder=tmp_path)
    with pytest.raises(ValueError, match="SFTConfig"):
        J.stored_sft_run("tiny", None, (), tok, folder=tmp_path)


# ----------------------------------------------------------------------------- SFT endpoints


def test_endpoints_are_stored_then_read_and_a_changed_config_runs(tmp_path, tiny, monkeypatch):
    tok, _, _ = tiny
    cfgs = [replace(J.SFT_RECIPE, steps=n, eval_every=n, eval_problems=8) for n in (2, 3)]
    first = J.stored_endpoints("lengths", cfgs, tok, workers=1, folder=tmp_path)
    assert [e["steps"] for e in first] == [2, 3] and all(0 <= e["val_greedy"] <= 1 for e in first)

    def no_runs(*args, **kwargs):
        raise AssertionError("ran the SFT runs instead of reading them")

    monkeypatch.setattr(J, "sft_endpoints", no_runs)
    assert J.stored_endpoints("lengths", cfgs, tok, workers=1, folder=tmp_path) == first
    with pytest.raises(AssertionError, match="ran the SFT"):
        J.stored_endpoints("lengths", cfgs[:1], tok, workers=1, folder=tmp_path)
    with pytest.raises(ValueError, match="SFTConfig"):
        J.stored_endpoints("lengths", [], tok, folder=tmp_path)
    with pytest.raises(ValueError, match="SFTConfig"):
        J.config_from_spec(J.job_spec(J.Job(0, J.GRPO_RECIPE))["cfg"])


@pytest.mark.parametrize("path", ENDPOINTS, ids=[p.stem for p in ENDPOINTS])
def test_the_shortest_stored_sft_length_reproduces(path):
    """The shortest length of each endpoints file, trained again now, ends at its stored accuracy
    (chapter 9 itself re-trains the length it picks)."""
    stored = json.loads(path.read_text())
    shortest = min(range(len(stored["endpoints"])), key=lambda i: stored["endpoints"][i]["steps"])
    cfg = J.config_from_spec(stored["specs"][shortest])
    assert repr(cfg) == stored["keys"]["configs"][shortest]
    (now,) = J.sft_endpoints([cfg], A.addition_tokenizer(), seed=stored["keys"]["seed"], workers=1)
    assert now["val_greedy"] == stored["endpoints"][shortest]["val_greedy"]


def test_a_changed_grid_goes_to_scratch_never_over_a_stored_run(tmp_path, tiny, monkeypatch):
    """A reader who edits chapter 9's jobs, or turns a RETRAIN switch on, gets their runs in
    scratch/runs/: the stored file under data/runs/ keeps its bytes, and the next call with the same
    edit reads the scratch twin."""
    from grpo import runstore
    tok, starts, jobs = tiny
    runs, scratch = tmp_path / "data" / "runs", tmp_path / "scratch"
    monkeypatch.setattr(runstore, "RUNS_DIR", runs)
    monkeypatch.setattr(runstore, "SCRATCH_DIR", scratch)
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    folder = runs / "09_addition"
    monkeypatch.setenv(runstore.STORE_ENV, "1")              # a maintainer stores the grid
    J.stored_jobs("grid", jobs, starts, tok, workers=1, folder=folder)
    monkeypatch.delenv(runstore.STORE_ENV)
    stored = (folder / "grid.json").read_bytes()
    calls = []
    real = J.run_jobs
    monkeypatch.setattr(J, "run_jobs", lambda *a, **k: calls.append(1) or real(*a, **k))
    edited = [jobs[0], replace(jobs[1], samples=2)]          # the reader's edit
    J.stored_jobs("grid", edited, starts, tok, workers=1, folder=folder)
    assert calls == [1] and (folder / "grid.json").read_bytes() == stored
    assert (scratch / "runs" / "09_addition" / "grid.json").is_file()
    J.stored_jobs("grid", edited, starts, tok, workers=1, folder=folder)  # read from scratch
    assert calls == [1]
    J.stored_jobs("grid", jobs, starts, tok, workers=1, folder=folder)    # the stored one again
    assert calls == [1] and (folder / "grid.json").read_bytes() == stored
    J.stored_jobs("grid", jobs, starts, tok, workers=1, folder=folder, retrain=True)  # the switch
    assert calls == [1, 1] and (folder / "grid.json").read_bytes() == stored
    with pytest.raises(ValueError, match="retrain"):
        J.stored_jobs("grid", jobs, starts, tok, workers=1, folder=folder, retrain="yes")
