"""The chapters' first cell: a no-op inside the repo, clone + install outside it."""
import importlib.util
import os
import subprocess
import sys

import pytest

from grpo.book import colab

URL = "https://github.com/example-owner/example-repo"


def run_cell(source, monkeypatch, tmp_path, found):
    """Execute the cell with find_spec answering ``found`` and subprocess.run recorded."""
    calls = []
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if found else None)
    monkeypatch.setattr(subprocess, "run", lambda cmd, check: calls.append(cmd))
    monkeypatch.chdir(tmp_path)
    (tmp_path / colab.CLONE_DIR / "chapters").mkdir(parents=True, exist_ok=True)   # the clone
    path_before = list(sys.path)
    try:
        exec(compile(source, "<first cell>", "exec"), {})
        return calls, os.getcwd()
    finally:
        sys.path[:] = path_before


def test_cell_does_nothing_inside_the_repo(monkeypatch, tmp_path):
    calls, cwd = run_cell(colab.first_cell(URL), monkeypatch, tmp_path, found=True)
    assert calls == [] and cwd == str(tmp_path)


def test_cell_installs_the_clone_and_enters_its_chapters_outside(monkeypatch, tmp_path):
    calls, cwd = run_cell(colab.first_cell(URL + "/", "dev"), monkeypatch, tmp_path, found=False)
    # the clone directory already exists (a re-run): no second clone, only the install
    assert calls == [[sys.executable, "-m", "pip", "install", "--quiet", "-e", colab.CLONE_DIR]]
    assert cwd == str(tmp_path / colab.CLONE_DIR / "chapters")


def test_cell_outside_says_what_the_reader_there_sees(monkeypatch, tmp_path, capsys):
    run_cell(colab.first_cell(URL), monkeypatch, tmp_path, found=False)
    said = capsys.readouterr().out
    assert "jupyterlab-myst" in said and '{eval}`glue["name"]`' in said and "{cite}`key`" in said


def test_the_first_cell_is_put_in_place_once():
    cell = colab.first_cell(URL)
    old = colab.first_cell("")
    nb = {"cells": [{"cell_type": "markdown", "source": "# T"},
                    {"cell_type": "code", "source": old, "metadata": {}, "outputs": []},
                    {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": []}]}
    assert colab.with_current_first_cell(nb, cell) is True
    assert nb["cells"][1]["source"] == cell.rstrip("\n") and nb["cells"][2]["source"] == "x = 1"
    assert colab.with_current_first_cell(nb, cell) is False
    other = {"cells": [{"cell_type": "code", "source": "import numpy", "metadata": {}}]}
    assert colab.with_current_first_cell(other, cell) is False
    with pytest.raises(ValueError, match="nb must be a notebook"):
        colab.with_current_first_cell([], cell)


def test_cell_clones_when_there_is_no_clone(monkeypatch, tmp_path):
    source = colab.first_cell(URL).replace(f'os.path.isdir("{colab.CLONE_DIR}")', "False")
    calls, _ = run_cell(source, monkeypatch, tmp_path, found=False)
    assert calls[0] == ["git", "clone", "--quiet", "--depth", "1", "--branch", "main", URL,
                        colab.CLONE_DIR]


def test_cell_without_a_url_says_which_setting_to_fill(monkeypatch, tmp_path):
    with pytest.raises(RuntimeError, match="repository.url"):
        run_cell(colab.first_cell(""), monkeypatch, tmp_path, found=False)
    calls, _ = run_cell(colab.first_cell(""), monkeypatch, tmp_path, found=True)
    assert calls == []


def test_cell_in_a_real_kernel_inside_the_repo_prints_nothing():
    out = subprocess.run([sys.executable, "-c", colab.first_cell(URL)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""


@pytest.mark.parametrize("url, branch", [("http://x.org/r", "main"), ("github.com/a/b", "main"),
                                         (URL, "main; rm -rf /"), (URL, "")])
def test_bad_settings_are_refused(url, branch):
    with pytest.raises(ValueError):
        colab.first_cell(url, branch)
    with pytest.raises(TypeError):
        colab.first_cell(None)


def test_a_flow_style_repository_mapping_is_read(tmp_path):
    """Regression: `repository: {url: ..., branch: ...}` gave ('', 'main')."""
    cfg = tmp_path / "_config.yml"
    cfg.write_text('title: x\nrepository: {url: "https://github.com/a/b", branch: trunk}\n')
    assert colab.configured_repository(cfg) == ("https://github.com/a/b", "trunk")
    cfg.write_text("repository: https://github.com/a/b\n")
    with pytest.raises(ValueError, match="must be a mapping"):
        colab.configured_repository(cfg)


def test_configured_repository_reads_the_config(tmp_path):
    cfg = tmp_path / "_config.yml"
    cfg.write_text('title: x\nrepository:\n  url: "https://github.com/a/b"  # note\n'
                   '  branch: trunk\nhtml:\n  x: 1\n')
    assert colab.configured_repository(cfg) == ("https://github.com/a/b", "trunk")
    cfg.write_text("title: x\n")
    assert colab.configured_repository(cfg) == ("", "main")
    url, branch = colab.configured_repository()           # the book's own: empty until set
    assert colab.first_cell(url, branch).startswith("# Outside the book's repository")


def test_every_chapter_opens_with_the_current_first_cell():
    """Each chapter's first code cell is the one ``python -m grpo.book.colab`` prints for _config.yml."""
    import json
    from pathlib import Path
    expected = colab.first_cell(*colab.configured_repository())
    chapters = sorted((Path(__file__).resolve().parents[1] / "chapters").glob("[0-9][0-9]_*.ipynb"))
    assert len(chapters) >= 8
    for path in chapters:
        first = next(c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        assert "".join(first["source"]) == expected.rstrip("\n"), path.name
        assert "remove-input" in first["metadata"].get("tags", []) and not first["outputs"], path.name
