"""Chapter 11's switch and live run: RETRAIN writes only to scratch (the four-way runs the chapter
reads, and the first two experiments', which the lab notes read), and the chapter keeps a live run and
its lab notes."""
import json
from pathlib import Path

import pytest

from grpo import runstore
from grpo.experiments.ch11_pretrained import format_runs as F
from grpo.experiments.ch11_pretrained import four_way_runs as W
from grpo.experiments.ch11_pretrained import smollm2_runs as P

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "11_pretrained.ipynb"


@pytest.fixture
def fake_runs(tmp_path, monkeypatch):
    """Both modules' ``run`` replaced by a stub (no model), scratch moved to a temporary folder."""
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    monkeypatch.setattr(runstore, "SCRATCH_DIR", tmp_path / "scratch")
    for module in (P, F, W):
        monkeypatch.setattr(module, "run", lambda name, directory=None: {"name": name,
                                                                         "retrained": True})
    return tmp_path / "scratch"


@pytest.mark.parametrize("module, names", [(P, ["grpo_seed0", "sft"]),
                                           (F, ["grpo_seed0", "start_prefix"]),
                                           (W, ["grpo_seed0", "start"])],
                         ids=["first_experiment", "decided", "four_way"])
def test_retrain_writes_to_scratch_and_never_to_data_runs(fake_runs, module, names):
    stored = {p: p.read_bytes() for p in module.RUN_FOLDER.glob("*.json")}
    folder = module.retrain(names, workers=1)
    assert folder.resolve().is_relative_to(fake_runs.resolve())
    assert sorted(p.name for p in folder.glob("*.json")) == sorted(f"{n}.json" for n in names)
    assert {p: p.read_bytes() for p in module.RUN_FOLDER.glob("*.json")} == stored
    # the re-trained runs are read from the returned folder, the stored ones from data/runs/
    assert module.load_run("grpo_seed0", folder) == {"name": "grpo_seed0", "retrained": True}
    assert "retrained" not in module.load_run("grpo_seed1")
    # a run already there is kept, unless asked again
    (folder / "grpo_seed0.json").write_text('{"kept": true}')
    module.retrain(["grpo_seed0"], workers=1)
    assert module.load_run("grpo_seed0", folder) == {"kept": True}
    module.retrain(["grpo_seed0"], workers=1, again=True)
    assert module.load_run("grpo_seed0", folder)["retrained"]


@pytest.mark.parametrize("module", [P, F, W], ids=["first_experiment", "decided", "four_way"])
def test_retrain_refuses_an_unknown_run(fake_runs, module):
    with pytest.raises(ValueError, match="runs: unknown"):
        module.retrain(["grpo_seed99"], workers=1)


def test_the_chapter_has_its_switch_live_run_and_lab_notes():
    cells = json.loads(CHAPTER.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert any("RETRAIN = False" in s and "W.retrain(" in s for s in code)
    live = [c for c in cells if "live-run" in c["metadata"].get("tags", [])]
    assert len(live) == 1 and "progress(" in "".join(live[0]["source"])
    assert "grpo_step(" in "".join(live[0]["source"])
    assert (ROOT / "book" / "lab_11_pretrained.ipynb").is_file()
    assert any("lab_11_pretrained" in "".join(c["source"]) for c in cells
               if c["cell_type"] == "markdown")
