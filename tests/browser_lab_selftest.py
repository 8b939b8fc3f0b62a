"""The JupyterLab test can fail: a small notebook with one planted fault of each kind is caught.

Run by `make browser` beside tests/browser_lab.py (not by `make unit`: it needs chromium). It writes
a notebook with a raw glue role, an unknown directive, an {eval} role with no stored value whose
name the kernel never glues, a widget view whose model does not exist, an output that throws in
the page and an error output, runs the JupyterLab test on it in a subprocess, and checks that
each fault is reported (the clean chapter is tests/browser_lab.py's own run).
"""
import os
import subprocess
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import browser_site  # noqa: E402

md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell


def planted_notebook() -> nbformat.NotebookNode:
    fine = md('A fine value: {eval}`glue["x"]`, and a planted raw role: \\{glue:text}`x`.')
    fine.metadata["user_expressions"] = [{"expression": 'glue["x"]', "result": {
        "status": "ok", "data": {"text/plain": "1"}, "metadata": {}}}]
    glued = code('from grpo.book.glued import glue\n\nglue("x", 1, display=False)')
    glued.outputs = [nbformat.v4.new_output("display_data", metadata={
        "scrapbook": {"name": "x", "mime_prefix": "application/papermill.record/"}},
        data={"application/papermill.record/text/plain": "1"})]
    cells = [
        fine, glued,
        md('Never glued: {eval}`glue["nope"]`.\n\n```{glue:figure} x\nA figure.\n```'),
        code("from IPython.display import display\n\ndisplay({'application/vnd.jupyter.widget-view+json':"
             " {'model_id': 'planted', 'version_major': 2, 'version_minor': 0},"
             " 'text/plain': 'a widget'}, raw=True)"),
        code("from IPython.display import HTML\n\n"
             "HTML('<img src=\"data:,\" onerror=\"throw new Error(\\'planted page error\\')\">')"),
        # an error output that does not stop Run All (a raise would abort the queued requests)
        code("try:\n    1 / 0\nexcept ZeroDivisionError:\n    get_ipython().showtraceback()"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_a_broken_notebook_fails_with_each_fault_named(tmp_path):
    path, why = browser_site.chromium_path()
    if path is None:
        browser_site.loud_skip(why)
    notebook = tmp_path / "planted.ipynb"
    nbformat.write(planted_notebook(), notebook)
    env = dict(os.environ, BOOK_LAB_NOTEBOOK=str(notebook), BOOK_LAB_SCREENSHOTS=str(tmp_path / "shots"))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(HERE / "browser_lab.py")], env=env, capture_output=True, text=True,
                         timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "1 failed" in out, out
    for fault in ("[before] cell 0: raw role syntax in the rendered text: {glue:text}`x",
                  "[before] cell 2: a role or directive JupyterLab does not render: {glue:figure}",
                  '[before] cell 2: an {eval} shows no value: glue["nope"]',
                  '[after] cell 2: {eval}`glue["nope"]` failed: KeyError',
                  "[after] cell 3: a widget failed to render",
                  "JavaScript error: planted page error",
                  "[after] cell 5: error output: ZeroDivisionError"):
        assert fault in out, f"not reported: {fault}\n{out}"
    assert "cell 1" not in out.split("AssertionError")[-1], out    # the clean cell passes
    shots = sorted(p.name for p in (tmp_path / "shots").glob("*.png"))
    assert shots == ["lab__planted-after.png", "lab__planted-before.png"], shots


if __name__ == "__main__":
    import pytest
    sys.exit(pytest.main([__file__, "-q"]))
