"""Chapter 11's switch and live run: RETRAIN writes only to scratch (the decided runs the chapter
reads, and the first experiment's, which the lab notes read), and the chapter keeps a live run and
its lab notes."""
import json
from pathlib import Path

import pytest

from grpo import runstore
from grpo.experiments.ch11_pretrained import format_runs as F
from grpo.experiments.ch11_pretrained import smollm2_runs as P

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "11_pretrained.ipynb"


@pytest.fixture
def fake_runs(tmp_path, monkeypatch):
    """``P.run`` replaced by a stub (no model), scratch moved to a temporary folder."""
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    monkeypatch.setattr(runstore, "SCRATCH_DIR", tmp_path / "scratch")
    monkeypatch.setattr(P, "run", lambda name: {"name": name, "retrained": True})
    monkeypatch.setattr(P, "RETRAINED", {})
    return tmp_path / "scratch"


def test_retrain_writes_to_scratch_and_never_to_data_runs(fake_runs):
    stored = {p: p.read_bytes() for p in P.RUNS_DIR.glob("*.json")}
    written = P.retrain(["grpo_seed0", "sft"])
    assert [Path(w).name for w in written] == ["grpo_seed0.json", "sft.json"]
    for w in written:
        assert Path(w).resolve().is_relative_to(fake_runs.resolve())
    assert {p: p.read_bytes() for p in P.RUNS_DIR.glob("*.json")} == stored
    # the chapter reads the re-trained runs from scratch, the others from data/runs/
    assert P.load_run("grpo_seed0") == {"name": "grpo_seed0", "retrained": True}
    assert "retrained" not in P.load_run("grpo_seed1")


def test_retrain_refuses_an_unknown_run(fake_runs):
    with pytest.raises(ValueError, match="unknown runs"):
        P.retrain(["grpo_seed9"])


@pytest.fixture
def fake_decided(tmp_path, monkeypatch):
    """``F.run`` replaced by a stub (no model), scratch moved to a temporary folder."""
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    monkeypatch.setattr(runstore, "SCRATCH_DIR", tmp_path / "scratch")
    monkeypatch.setattr(F, "run", lambda name: {"name": name, "retrained": True})
    monkeypatch.setattr(F, "RETRAINED", {})
    return tmp_path / "scratch"


def test_the_decided_switch_writes_to_scratch_and_never_to_data_runs(fake_decided):
    stored = {p: p.read_bytes() for p in F.DECIDED_DIR.glob("*.json")}
    written = F.retrain(["grpo_seed0", "start_prefix"])
    assert [Path(w).name for w in written] == ["grpo_seed0.json", "start_prefix.json"]
    for w in written:
        assert Path(w).resolve().is_relative_to(fake_decided.resolve())
    assert {p: p.read_bytes() for p in F.DECIDED_DIR.glob("*.json")} == stored
    assert F.load_run("grpo_seed0") == {"name": "grpo_seed0", "retrained": True}
    assert "retrained" not in F.load_run("grpo_seed1")
    with pytest.raises(ValueError, match="unknown runs"):
        F.retrain(["grpo_seed99"])


def test_the_chapter_has_its_switch_live_run_and_lab_notes():
    cells = json.loads(CHAPTER.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert any("RETRAIN = False" in s and "F.retrain(" in s for s in code)
    live = [c for c in cells if "live-run" in c["metadata"].get("tags", [])]
    assert len(live) == 1 and "progress(" in "".join(live[0]["source"])
    assert "grpo_step(" in "".join(live[0]["source"])
    assert (ROOT / "book" / "lab_11_pretrained.ipynb").is_file()
    assert any("lab_11_pretrained" in "".join(c["source"]) for c in cells
               if c["cell_type"] == "markdown")
