"""The results registry: where it lives, stable text, and refusing what JSON cannot hold."""
import json
from pathlib import Path

import numpy as np
import pytest

from grpo.book import results


def test_default_directory_is_under_the_repo_root(monkeypatch):
    monkeypatch.delenv(results.ENV_VAR, raising=False)
    root = Path(__file__).resolve().parents[1]
    assert results.results_dir() == root / "data" / "results"


def test_round_trip_with_stable_text_in_the_override_directory(tmp_path, monkeypatch):
    monkeypatch.setenv(results.ENV_VAR, str(tmp_path))
    data = {"b": np.float64(0.5), "a": [np.int64(1), (2, 3)], "c": {"x": np.array([1.5, 2.5])}}
    path = results.save_results("99_test", data)
    assert path == tmp_path / "99_test.json"
    text = path.read_text()
    assert text == json.dumps({"a": [1, [2, 3]], "b": 0.5, "c": {"x": [1.5, 2.5]}}, indent=2,
                              sort_keys=True) + "\n"
    assert results.load_results("99_test") == {"a": [1, [2, 3]], "b": 0.5, "c": {"x": [1.5, 2.5]}}
    results.save_results("99_test", data)
    assert path.read_text() == text                        # a re-run leaves no diff


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), np.float64("-inf")])
def test_nan_and_inf_are_refused_and_nothing_is_written(tmp_path, monkeypatch, bad):
    monkeypatch.setenv(results.ENV_VAR, str(tmp_path))
    with pytest.raises(ValueError, match="NaN or inf"):
        results.save_results("99_bad", {"x": {"y": [1.0, bad]}})
    assert not (tmp_path / "99_bad.json").exists()


@pytest.mark.parametrize("name", ["", "a/b", "x.json", "../up", None])
def test_bad_names(name, tmp_path, monkeypatch):
    monkeypatch.setenv(results.ENV_VAR, str(tmp_path))
    with pytest.raises(ValueError, match="bare file stem"):
        results.save_results(name, {})


def test_results_must_be_a_dict(tmp_path, monkeypatch):
    monkeypatch.setenv(results.ENV_VAR, str(tmp_path))
    with pytest.raises(TypeError):
        results.save_results("99_x", [1, 2])


def test_mismatches_reports_nan_against_a_number_and_zero_against_nan():
    from grpo.book.results import mismatches

    assert mismatches(float("nan"), float("nan")) == []
    assert mismatches([0.0], [float("nan")]) == ["[0]: 0.0 != nan"]
    assert mismatches({"kl": float("nan")}, {"kl": 4.7e-5}) == ["kl: nan != 4.7e-05"]
    assert mismatches(0.0, 1e-3) and not mismatches(1.0, 1.0 + 1e-12)
