"""Chapter 6's live run and switches: the live cell trains PPO and GRPO behind a progress bar, and
every switch that re-trains a stored run writes to scratch/, never over data/runs/."""
import json
from pathlib import Path

import pytest

from grpo import runstore
from grpo.experiments.ch06_lander import credit_study, main_runs
from grpo.lander import ActorCriticConfig, RunSpec

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "06_lunar_lander.ipynb"
PAGES = [CHAPTER, ROOT / "book" / "lab_06_lander.ipynb"]


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _code(path):
    return ["".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code"]


def test_the_live_cell_trains_ppo_and_grpo_behind_a_progress_bar():
    live = ["".join(c["source"]) for c in _cells(CHAPTER)
            if "live-run" in c["metadata"].get("tags", [])]
    assert len(live) == 1
    assert "lander.train(" in live[0] and "progress(" in live[0] and "seed=0" in live[0]
    assert '"ppo"' in live[0] and '"grpo"' in live[0]
    assert "data/" not in live[0] and "save" not in live[0]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_every_switch_retrains_into_scratch_and_states_its_cost(path):
    switches = [c for c in _code(path) if "RETRAIN" in c]
    assert switches, f"{path.name} has no stored-run switch"
    for c in switches:
        assert "writable(" in c or "noise.run_noise_study(" in c      # the noise study stays in memory
        assert "CPU-minutes" in c and "GB" in c


def test_the_stored_paths_map_to_scratch(monkeypatch):
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    for p in (main_runs.stored_dir(), credit_study.stored_path()):
        assert runstore.writable(p).is_relative_to(runstore.SCRATCH_DIR)


def test_a_retrained_main_run_lands_in_scratch_and_loads(tmp_path, monkeypatch):
    """The chapter's RETRAIN path, on one tiny run: written under scratch, readable, the stored
    file untouched."""
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    monkeypatch.setattr(runstore, "SCRATCH_DIR", tmp_path)
    stored = main_runs.stored_dir() / "runs.json"
    before = stored.read_bytes()
    spec = RunSpec("ppo", 0, 64, eval_every=10**9, val_episodes=1, test_episodes=1,
                   config=ActorCriticConfig(n_envs=2, n_steps=32, minibatch=32, epochs=1))
    where = main_runs.run_and_store([spec], workers=1,
                                    directory=runstore.writable(main_runs.stored_dir()))
    assert Path(where).is_relative_to(tmp_path) and (Path(where) / "runs.json").is_file()
    assert main_runs.load_stored([spec], directory=where)[0]["env_steps"] == 64
    assert stored.read_bytes() == before
