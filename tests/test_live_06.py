"""Chapter 6's live run and switches: the live cell trains PPO and GRPO behind a progress bar, and
every switch that re-trains a stored run writes to scratch/, never over data/runs/."""
import ast
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


def live_calls(source: str) -> dict:
    """What a cell's code (not its comments) does: ``{called name: [keyword names]}`` and the
    string constants it names, read from its syntax tree."""
    tree = ast.parse(source)
    calls = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.setdefault(ast.unparse(node.func), []).extend(k.arg for k in node.keywords)
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str)}
    return {"calls": calls, "strings": strings}


def check_live_cell(source: str) -> None:
    """The live cell trains PPO and GRPO with ``lander.train`` behind ``progress``, seed 0, and
    writes nothing: read from its code, so a comment that names them does not count."""
    code = live_calls(source)
    assert "lander.train" in code["calls"] and "progress" in code["calls"], code["calls"]
    assert "seed" in code["calls"].get("lander.RunSpec", []), "the runs are seeded"
    assert {"ppo", "grpo"} <= code["strings"], code["strings"]
    assert not any(name.split(".")[-1].startswith(("save", "write", "store")) for name in
                   code["calls"]) and not any("data/" in s for s in code["strings"])


def test_the_live_cell_trains_ppo_and_grpo_behind_a_progress_bar():
    live = ["".join(c["source"]) for c in _cells(CHAPTER)
            if "live-run" in c["metadata"].get("tags", [])]
    assert len(live) == 1
    check_live_cell(live[0])


@pytest.mark.parametrize("source", [
    "# lander.train(spec) behind progress(...), 'ppo' and 'grpo', seed=0\nx = 1\n",
    "spec = lander.RunSpec('ppo', seed=0)\n# progress(range(9))\nlive = lander.train(spec)\n",
    "for a in ('ppo', 'grpo'):\n    with progress(range(9)) as bar:\n"
    "        lander.train(lander.RunSpec(a, seed=0), progress=bar)\n    lander.save(a)\n",
])
def test_a_live_cell_that_only_names_the_training_in_comments_fails(source):
    with pytest.raises(AssertionError):
        check_live_cell(source)


def switches_set(source: str) -> list[str]:
    """The ``RETRAIN...`` switches a cell's code assigns (not a comment or a string naming one)."""
    return [n.id for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id.startswith("RETRAIN")]


def check_switch_cell(source: str) -> None:
    """A switch cell's code sets a switch and reads it, and re-trains into scratch/ (it calls
    ``writable``) or in memory only (the noise study: ``run_noise_study``, and nothing stored);
    the cell states the cost, CPU-minutes and GB, in its comments."""
    tree = ast.parse(source)
    code = live_calls(source)
    called = {name.rpartition(".")[2] for name in code["calls"]}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    switches = switches_set(source)
    assert switches and set(switches) <= read, f"switches {switches}, read {sorted(read)}"
    stores = {name for name in called if name.startswith(("save", "write_")) or name.endswith("store")}
    assert "writable" in called or ("run_noise_study" in called and not stores), called
    assert "CPU-minutes" in source and "GB" in source


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_every_switch_retrains_into_scratch_and_states_its_cost(path):
    switches = [c for c in _code(path) if switches_set(c)]
    assert switches, f"{path.name} has no stored-run switch"
    for c in switches:
        check_switch_cell(c)


# Each passes a reading of the cell's text: the words are there, in comments.
@pytest.mark.parametrize("source", [
    "# RETRAIN = True re-trains into writable(STORE): 2 CPU-minutes, 0.3 GB each\n"
    "results = main_runs.load_stored(specs, directory=STORE)\n",
    "# True re-trains into writable(STORE): 2 CPU-minutes, 0.3 GB each\nRETRAIN = False\n"
    "if RETRAIN:\n    STORE = main_runs.run_and_store(specs, directory=STORE)\n",
    "RETRAIN = False  # if RETRAIN: 2 CPU-minutes, 0.3 GB each\n"
    "STORE = main_runs.run_and_store(specs, directory=writable(STORE))\n",
    "# noise.run_noise_study(workers=2): 9 CPU-minutes, 0.3 GB each\nRETRAIN_NOISE = False\n"
    "study = noise.load_study() if RETRAIN_NOISE else noise.write_study()\n",
], ids=["no-switch", "route-in-a-comment", "switch-never-read", "study-in-a-comment"])
def test_a_switch_cell_whose_code_does_not_route_fails(source):
    with pytest.raises(AssertionError):
        check_switch_cell(source)


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
    assert main_runs.load_stored([spec], directory=where)[0].env_steps == 64
    assert stored.read_bytes() == before
