"""The run store: records and weights round-trip exactly, a missing file names its command, a
re-run that computes the same bytes leaves the file alone, and the command line refuses what it
does not know."""
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from grpo import runstore


def test_run_dir_is_a_chapter_folder_under_data_runs():
    assert runstore.run_dir("08_grpo_math") == runstore.RUNS_DIR / "08_grpo_math"
    assert runstore.RUNS_DIR.parent.name == "data" and runstore.RUNS_DIR.is_dir()
    for bad in ("", "../x", ".hidden", 8):
        with pytest.raises(ValueError, match="chapter"):
            runstore.run_dir(bad)


def test_json_round_trips_and_an_unchanged_file_is_not_rewritten(tmp_path):
    path = tmp_path / "a" / "run.json"
    record = {"b": [1, 2.5, None], "a": "x"}
    runstore.write_json(path, record)
    assert path.read_text() == json.dumps(record, indent=1) + "\n"
    assert runstore.read_json(path, "grpo.experiments.x") == record
    before = path.stat().st_mtime_ns
    runstore.write_json(path, record)
    assert path.stat().st_mtime_ns == before
    runstore.write_json(path, record, indent=0, sort_keys=True)
    assert path.read_text() == json.dumps(record, indent=0, sort_keys=True) + "\n"


def test_rows_are_one_a_line_and_read_back(tmp_path):
    path = tmp_path / "runs.json"
    sections = {"jobs": [{"lr": 1e-5}, {"lr": 2e-5}], "runs": [{"x": [1, 2]}, {"x": [3]}]}
    runstore.write_json_rows(path, sections, compact=("runs",))
    lines = path.read_text().splitlines()
    assert lines[1] == '{"lr": 1e-05},' and lines[4] == '{"x":[1,2]},'
    assert json.loads(path.read_text()) == sections


def test_a_missing_record_names_the_command_that_writes_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m grpo.experiments.ch99_x.y name"):
        runstore.read_json(tmp_path / "none.json", "grpo.experiments.ch99_x.y name")


def test_weights_and_arrays_round_trip_exactly(tmp_path):
    state = {"w": torch.randn(3, 4, dtype=torch.float64).t(), "b": torch.arange(3.0)}
    runstore.write_weights(tmp_path / "w.safetensors", state)
    back = runstore.read_weights(tmp_path / "w.safetensors")
    assert back["w"].dtype == torch.float64 and all(torch.equal(back[k], state[k]) for k in state)
    arrays = {"1/x": np.random.default_rng(0).normal(size=5), "2/y": np.arange(4)}
    runstore.write_arrays(tmp_path / "a.npz", arrays)
    assert (tmp_path / "a.npz").is_file() and not (tmp_path / "a.npz.npz").exists()
    back = runstore.read_arrays(tmp_path / "a.npz")
    assert all(np.array_equal(back[k], arrays[k]) for k in arrays)


def test_bits_round_trip():
    a = np.array([[1, 0, 0, 1], [0, 0, 1, 1]])
    assert runstore.bits(a) == "10010011"
    assert (runstore.unbits(runstore.bits(a), 4) == a).all()
    assert runstore.unbits("0110").tolist() == [0.0, 1.0, 1.0, 0.0]


def test_cpu_timed_returns_the_result_and_the_cpu_it_took():
    result, cpu_s = runstore.cpu_timed(lambda n: sum(i * i for i in range(n)), 200_000)
    assert result == sum(i * i for i in range(200_000)) and cpu_s > 0


def test_the_command_line_runs_lists_and_refuses(capsys, tmp_path):
    registry = {"a": SimpleNamespace(note="the first"), "b": SimpleNamespace(note="the second")}
    calls = []

    def store(names, workers):
        calls.append((names, workers))
        return [tmp_path / f"{n}.json" for n in names]

    runstore.command_line("grpo.experiments.x", "Doc.\n\nMore.", store, ["a", "--workers", "3"],
                          registry=registry, workers=2)
    runstore.command_line("grpo.experiments.x", "Doc.", store, ["--all"], registry=registry,
                          workers=2)
    assert calls == [(["a"], 3), (["a", "b"], 2)]
    assert "wrote" in capsys.readouterr().out
    runstore.command_line("grpo.experiments.x", "Doc.", store, ["--list"], registry=registry,
                          workers=2)
    assert "the second" in capsys.readouterr().out and len(calls) == 2
    for argv in (["c"], []):
        with pytest.raises(SystemExit):
            runstore.command_line("grpo.experiments.x", "Doc.", store, argv, registry=registry)
    assert len(calls) == 2


def test_a_run_computed_now_is_written_to_scratch_unless_a_maintainer_stores_it(monkeypatch,
                                                                                tmp_path):
    monkeypatch.setattr(runstore, "RUNS_DIR", tmp_path / "runs")
    monkeypatch.setattr(runstore, "SCRATCH_DIR", tmp_path / "scratch")
    monkeypatch.delenv(runstore.STORE_ENV, raising=False)
    stored = tmp_path / "runs" / "09_addition" / "grid.json"
    assert runstore.writable(stored) == tmp_path / "scratch" / "runs" / "09_addition" / "grid.json"
    assert runstore.writable(tmp_path / "elsewhere.json") == tmp_path / "elsewhere.json"
    monkeypatch.setenv(runstore.STORE_ENV, "1")
    assert runstore.writable(stored) == stored.resolve()


def test_runs_to_write_skips_what_is_there_unless_again_and_refuses_unknown_names(tmp_path):
    registry = {"a": 1, "b": 2, "c": 3}
    (tmp_path / "b.json").write_text("{}")
    assert runstore.runs_to_write(None, registry, tmp_path) == ["a", "c"]
    assert runstore.runs_to_write(["b", "a"], registry, tmp_path) == ["a"]
    assert runstore.runs_to_write(["b", "a"], registry, tmp_path, again=True) == ["b", "a"]
    with pytest.raises(ValueError, match="runs: unknown"):
        runstore.runs_to_write(["d"], registry, tmp_path)


def test_a_logs_timings_are_read_under_either_name_and_left_out_of_replays():
    """A GRPO log names its clock (``sample_cpu_s``...); runs stored before kept the same CPU
    seconds as ``sample_s``... (``STORED_TIME_KEYS``): both read alike, both left out of a replay."""
    new = {"loss": 0.5, "sample_cpu_s": 1.0, "ref_cpu_s": 2.0, "update_cpu_s": 3.0, "cpu_s": 6.5}
    old = {"loss": 0.5, "sample_s": 1.0, "ref_s": 2.0, "update_s": 3.0}
    assert runstore.cpu_split(new) == runstore.cpu_split(old) == {
        "sample_cpu_s": 1.0, "ref_cpu_s": 2.0, "update_cpu_s": 3.0}
    assert runstore.without_timings(new) == runstore.without_timings(old) == {"loss": 0.5}
    assert runstore.without_timings({"step_wall_s": 1, "sampled_tokens": 9}) == {"sampled_tokens": 9}


def test_a_stored_config_rebuilds_as_its_dataclass():
    """JSON keeps a config as asdict's dict: tuples become lists and RunConfig.evaluation a dict.
    config_from_json gives back the equal frozen config, the one a stored file's key was made of."""
    from dataclasses import asdict
    from grpo.lm.eval import EvalConfig
    from grpo.lm.rl import EIConfig, RunConfig
    from grpo.runstore import config_from_json
    for cfg in (RunConfig(ratio_level="sequence", evaluation=EvalConfig(every=5, held_out=9)),
                EIConfig(betas=(0.9, 0.9))):
        back = config_from_json(type(cfg), json.loads(json.dumps(asdict(cfg))))
        assert back == cfg and repr(back) == repr(cfg)
    with pytest.raises(TypeError, match="eval_every"):          # a field the config no longer has
        config_from_json(RunConfig, {"eval_every": 5})
    with pytest.raises(ValueError, match="fields must be a dict"):
        config_from_json(RunConfig, [("seed", 1)])
    with pytest.raises(ValueError, match="cls must be a dataclass"):
        config_from_json(dict, {})
