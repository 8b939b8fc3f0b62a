"""Chapter 10's live run and switch: the chapter has one ``live-run`` cell that trains in a plain
loop under ``progress`` through the library's ``grpo_iteration`` and writes nothing to ``data/``;
its ``RETRAIN`` switch (``long_runs.retrain``) runs the stored runs again into
scratch/runs/10_word_problems/, with any weights they save beside them, never over ``data/runs/``
or ``data/models/``."""
import json
from pathlib import Path

from grpo import runstore
from grpo.experiments.ch10_word_problems import long_runs as L
from grpo.lm.model import save
from grpo.runstore.models import MODELS_DIR, load_sft

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "10_word_problems.ipynb"
LAB = ROOT / "book" / "lab_10_word_problems.ipynb"


def _code(path):
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def test_the_chapter_has_one_live_run_that_trains_and_writes_nothing():
    live = [c for c in _code(CHAPTER) if "live-run" in c["metadata"].get("tags", [])]
    assert len(live) == 1
    src = "".join(live[0]["source"])
    assert "progress(range(" in src and "rl.grpo_iteration(" in src and "rl.GroupDraws(" in src
    assert "grpo_update(" not in src and "optim.Adam(" not in src      # the library's loop
    for writer in ("write_", "save(", "open(", "data/"):
        assert writer not in src


def test_both_pages_read_the_runs_through_the_switch():
    for path in (CHAPTER, LAB):
        src = "\n".join("".join(c["source"]) for c in _code(path))
        assert "RETRAIN = False" in src
        assert "RUNS_FROM = stored.retrain(workers=2) if RETRAIN else stored.RUN_FOLDER" in src
        assert "stored.load_run(name, RUNS_FROM)" in src
        assert "stored.load_run(name)" not in src


def _sandbox(tmp_path, monkeypatch):
    runs, scratch = tmp_path / "data" / "runs", tmp_path / "scratch"
    monkeypatch.setattr(runstore, "RUNS_DIR", runs)
    monkeypatch.setattr(runstore, "SCRATCH_DIR", scratch)
    monkeypatch.setattr(L, "RUN_FOLDER", runs / "10_word_problems")
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    return runs / "10_word_problems", scratch / "runs" / "10_word_problems"


def test_retrain_writes_to_scratch_and_keeps_what_is_there(tmp_path, monkeypatch):
    stored, scratch = _sandbox(tmp_path, monkeypatch)
    assert L.retrain_dir() == scratch
    assert L.models_dir(scratch) == scratch / "models" and L.models_dir(stored) == MODELS_DIR
    ran = []

    def fake_run(name, directory=None):
        ran.append((name, Path(directory)))
        return {"name": name, "cpu_s": 0.0}

    monkeypatch.setattr(L, "run", fake_run)
    monkeypatch.setattr(L, "parallel_map", lambda fn, items, workers, desc="": [fn(x)
                                                                               for x in items])
    names = ["from_long_sft_lr5e-05", "plateau_sft"]
    assert L.retrain(names) == scratch
    assert ran == [("plateau_sft", scratch), ("from_long_sft_lr5e-05", scratch)]  # plateau first
    assert sorted(p.name for p in scratch.iterdir()) == sorted(f"{n}.json" for n in names)
    assert not stored.exists()
    L.retrain(names)                                   # already there: kept
    assert len(ran) == 2
    L.retrain(["plateau_sft"], again=True)
    assert len(ran) == 3
    assert L.load_run("plateau_sft", scratch) == {"name": "plateau_sft", "cpu_s": 0.0}


def test_a_run_from_the_plateau_starts_from_the_plateau_retrained_beside_it(tmp_path,
                                                                           monkeypatch):
    _, scratch = _sandbox(tmp_path, monkeypatch)
    model, _ = load_sft()
    (scratch / "models").mkdir(parents=True)
    save(model, scratch / "models" / L.PLATEAU_CHECKPOINT)
    start, tok = L.start_model(L.RUNS["from_long_sft_lr5e-05"], scratch)
    assert all((a == b).all() for a, b in zip(start.state_dict().values(),
                                              load_sft()[0].state_dict().values()))
    assert tok.eos_id == load_sft()[1].eos_id


def test_the_readings_give_the_chapters_results_file():
    """``readings``, which chapter 10 writes its results file from and its lab notes show as
    tables, reads the stored runs back into that file byte for byte."""
    from grpo.files import json_ready
    from grpo.experiments.ch10_word_problems import readings as R
    runs = {name: L.load_run(name, L.RUN_FOLDER) for name in L.RUNS}
    r = R.read_long_runs(runs, L.RUN_FOLDER)
    assert r.best == "grpo_lr5e-05" and r.long_random == "from_long_sft_random"
    text = json.dumps(json_ready(R.long_run_registry(r)), indent=2, sort_keys=True,
                      allow_nan=False) + "\n"
    assert text == (runstore.DATA_DIR / "results" / "10_word_problems.json").read_text()
