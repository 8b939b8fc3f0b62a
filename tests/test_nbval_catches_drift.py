"""nbval is the guard that text and code agree: prove a moved number makes it fail.

We build a one-cell notebook that prints the untrained bot's exact test score, store its output,
and run nbval twice in a subprocess: once against the real lib (must pass), once against a copy of
the lib whose exact evaluator is patched to score lava tiles one tile further (must fail).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import grpo

CELL = ("import numpy as np\n"
        "from grpo.toy.lava import exact_score, held_out_floors\n"
        "print(f'{exact_score(held_out_floors(), np.zeros((4, 2))).mean_score:.3f}')")
# the way chapters put a number into prose: glued, not printed
GLUE_CELL = ("from myst_nb import glue\n"
             "glue('untrained', round(float(exact_score(held_out_floors()[:50], np.zeros((4, 2)))"
             ".mean_score), 3), display=False)")


def run_nbval(notebook: Path, pythonpath: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
         "--nbval-current-env", str(notebook)],
        cwd=notebook.parent, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def stored_notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(CELL))
    nb.cells.append(nbformat.v4.new_code_cell(GLUE_CELL))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    printed = nb.cells[0].outputs[0]["text"].strip()
    assert printed == "0.276"
    glued = nb.cells[1].outputs[0]
    assert glued["output_type"] == "display_data" and "scrapbook" in glued["metadata"]
    path = tmp_path / "drift.ipynb"
    nbformat.write(nb, path)
    return path


def test_nbval_passes_unchanged_and_fails_when_a_lib_number_moves(stored_notebook, tmp_path):
    ok = run_nbval(stored_notebook, None)
    assert ok.returncode == 0, ok.stdout + ok.stderr

    patched = tmp_path / "patched_lib"
    shutil.copytree(Path(grpo.__file__).parent, patched / "grpo")
    source = (patched / "grpo" / "toy" / "lava.py").read_text()
    original = "np.where(floors[:, t], t / EXIT,"
    assert original in source, "the patch target moved; update this test"
    (patched / "grpo" / "toy" / "lava.py").write_text(
        source.replace(original, "np.where(floors[:, t], (t + 1) / EXIT,"))

    moved = run_nbval(stored_notebook, str(patched))
    assert moved.returncode == 1, moved.stdout + moved.stderr
    # both cells fail: the printed number and the glued one
    assert "0.276" in moved.stdout and "2 failed" in moved.stdout, moved.stdout
