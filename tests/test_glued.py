"""The prose's {eval} form: glue keeps what it glues, glue[name] reads it back (live or stored), the
conversion is idempotent, and every notebook's stored expressions match its glued outputs."""
import copy
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from IPython.core.formatters import format_display_data
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import Markdown
from IPython.utils.capture import capture_output

from grpo.book import glued
from grpo.book.glued import Glue, eval_prose_problems, shown_text, stored_glue, to_eval_prose

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(ROOT.glob("chapters/[0-9][0-9]_*.ipynb")) + sorted(ROOT.glob("book/*.ipynb"))
# jupyterlab-myst shows a text/plain result without one pair of surrounding quotes
# (src/components/inlineExpression.tsx, PlainTextRenderer)
LAB_PLAIN = re.compile(r"^([\"'])(.*)\1$")


def glue_outputs(fn, *args):
    InteractiveShell.instance()
    with capture_output() as captured:
        fn(*args)
    return [(o.data, o.metadata) for o in captured.outputs]


BOTH_QUOTES = 'the bench\'s "x"'           # its repr would escape a quote


@pytest.mark.parametrize("value, shown", [
    ("+1.732", "+1.732"), (58, "58"), (0.5, "0.5"), ("it's", "it's"), (BOTH_QUOTES, BOTH_QUOTES),
    (Markdown("`L..` and `LL.`"), "`L..` and `LL.`")])
def test_glue_outputs_what_myst_nb_does_and_keeps_the_shown_text(value, shown):
    from myst_nb import glue as myst_glue
    g = Glue()
    assert glue_outputs(g, "x", value, False) == glue_outputs(myst_glue, "x", value, False)
    assert g["x"] == shown
    InteractiveShell.instance()
    reply, _ = format_display_data(g["x"])    # the kernel's reply to {eval}`glue["x"]`
    assert reply == {"text/plain": shown} and LAB_PLAIN.sub(r"\2", shown) == shown


def test_a_name_not_glued_yet_reads_the_stored_value_then_the_live_one(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [{
        "output_type": "display_data", "metadata": {"scrapbook": {"name": "n", "mime_prefix": ""}},
        "data": {"application/papermill.record/text/plain": "'12'"}}]}]}
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps(nb))
    g = Glue(notebook=path)
    assert g["n"] == "12"
    InteractiveShell.instance()
    with capture_output():
        g("n", 13, False)
    assert g["n"] == "13"
    with pytest.raises(KeyError, match="nothing is glued as 'm' yet: run the cell"):
        g["m"]
    assert Glue(notebook=tmp_path / "missing.ipynb").stored() == {}


def test_the_kernel_finds_its_notebook_from_jupyter_server(tmp_path, monkeypatch):
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "", "metadata": {},
                                           "outputs": [{"output_type": "display_data",
                                                        "metadata": {"scrapbook": {"name": "k"}},
                                                        "data": {"text/plain": "7"}}]}]}))
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    assert Glue()["k"] == "7"


@pytest.mark.parametrize("bad", [None, "", 3])
def test_glue_refuses_a_bad_name(bad):
    with pytest.raises(ValueError, match="name"):
        Glue()(bad, 1, False)


def test_shown_text_and_stored_glue_refuse_what_they_cannot_read():
    with pytest.raises(ValueError, match="bundle"):
        shown_text("58")
    with pytest.raises(ValueError, match="neither"):
        shown_text({"image/png": "..."})
    with pytest.raises(ValueError, match="nb must be a notebook"):
        stored_glue([])


def test_glue_roles_are_written_as_eval_and_a_format_spec_is_refused():
    md = "A {glue:text}`lift` over {glue}`n`, in {glue:md}`cells` and {glue:any}`x_1`."
    assert glued.eval_roles(md) == ('A {eval}`glue["lift"]` over {eval}`glue["n"]`, in '
                                    '{eval}`glue["cells"]` and {eval}`glue["x_1"]`.')
    for bad in ("{glue:text}`lift:+.1f`", "{glue:text}`../chapters/x::lift`"):
        with pytest.raises(ValueError, match="only a plain glued name"):
            glued.eval_roles(bad)


def _page():
    return {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "Before: {glue:text}`a`."},
        {"cell_type": "code", "metadata": {}, "source": "import numpy as np\nfrom myst_nb import glue",
         "outputs": []},
        {"cell_type": "code", "metadata": {}, "source": "glue('a', '+1.5', display=False)", "outputs": [
            {"output_type": "display_data", "metadata": {"scrapbook": {"name": "a"}},
             "data": {"application/papermill.record/text/plain": "'+1.5'"}}]},
        {"cell_type": "markdown", "metadata": {}, "source": "After: {glue:text}`a`, twice {glue}`a`."},
    ]}


def test_the_conversion_is_idempotent_and_leaves_nothing_to_fix():
    nb = _page()
    assert len(eval_prose_problems(nb)) == 4
    once = to_eval_prose(copy.deepcopy(nb))
    assert eval_prose_problems(once) == []
    assert to_eval_prose(copy.deepcopy(once)) == once
    assert once["cells"][1]["source"] == "import numpy as np\nfrom grpo.book.glued import glue"
    assert once["cells"][3]["source"] == 'After: {eval}`glue["a"]`, twice {eval}`glue["a"]`.'
    assert once["cells"][3]["metadata"]["user_expressions"] == 2 * [
        {"expression": 'glue["a"]', "result": {"status": "ok", "data": {"text/plain": "+1.5"},
                                               "metadata": {}}}]


def test_stale_or_missing_stored_expressions_are_found():
    nb = to_eval_prose(_page())
    nb["cells"][2]["outputs"][0]["data"]["application/papermill.record/text/plain"] = "'+1.6'"
    assert eval_prose_problems(nb) == [
        "cell 0: its stored {eval} results differ from the glued outputs",
        "cell 3: its stored {eval} results differ from the glued outputs"]
    nb = to_eval_prose(_page())
    nb["cells"][3]["source"] += ' And {eval}`glue["b"]`.'
    assert eval_prose_problems(nb) == [
        "cell 3: the prose names 'b', which the notebook's outputs never glue"]
    with pytest.raises(ValueError, match="never glue"):
        to_eval_prose(nb)


def test_the_script_checks_and_fixes_a_notebook(tmp_path):
    import nbformat
    spec = importlib.util.spec_from_file_location("jupyter_route", ROOT / ".ci" / "jupyter_route.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    path = tmp_path / "page.ipynb"
    nbformat.write(nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                       "cells": _page()["cells"]}), path)
    assert script.main(["--check", str(path)]) == 1
    assert script.main([str(path)]) == 0
    text = path.read_text()
    assert script.main(["--check", str(path)]) == 0
    assert script.main([str(path)]) == 0 and path.read_text() == text      # idempotent


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_is_in_the_eval_form_with_its_stored_results(path):
    nb = json.loads(path.read_text())
    problems = eval_prose_problems(nb)
    assert not problems, (f"{path.name} (run .ci/jupyter_route.py):\n  " + "\n  ".join(problems[:8]))
    for name, shown in stored_glue(nb).items():    # the lab shows what the book shows
        assert LAB_PLAIN.sub(r"\2", shown) == shown, f"{path.name}: {name} shows as {shown!r}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
