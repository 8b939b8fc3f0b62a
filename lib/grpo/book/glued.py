"""The prose's numbers in the book and in JupyterLab: ``glue`` keeps them, ``glue[name]`` reads.

A chapter puts a number into a sentence in two steps. A code cell glues it, ``glue("lift", x,
display=False)``, and the prose names it, ``{eval}`glue["lift"]```. Two renderers read that role:

* the book (Sphinx, outputs stored, nothing executed): ``book/_ext/glue_eval.py`` pastes the value
  stored in the notebook's glue output, exactly as myst-nb's ``{glue:text}`lift``` did;
* JupyterLab with jupyterlab-myst: running a markdown cell evaluates its ``{eval}`` expressions in
  the kernel and keeps each result in the cell's metadata (``user_expressions``), so a saved
  notebook shows its numbers before any kernel runs. ``.ci/jupyter_route.py`` writes that metadata
  from the stored outputs.

``glue`` is myst-nb's ``glue`` (the same outputs, so nbval compares every glued value as before)
that also keeps the text each value shows as. ``glue[name]`` is that text: the value's plain-text
form (its markdown, for a ``Markdown`` object), read as a Python literal and turned back into
text, as myst-nb's role does; its repr is the text itself, with no quotes or escapes, so the
kernel's reply to jupyterlab-myst is exactly what the book shows.

A sentence may name a value before the cell that computes it (the prose introduces a cell, then
the cell runs): until that cell has run in this kernel, ``glue[name]`` reads the value stored in
the notebook's file, which jupyter_server names to the kernel (``JPY_SESSION_NAME``).
"""
from __future__ import annotations

import json
import os
import re
from ast import literal_eval
from pathlib import Path

GLUE_MIME_PREFIX = "application/papermill.record/"   # myst-nb's prefix for display=False


def shown_text(bundle: dict) -> str:
    """The text a glued value shows as in the prose, from its mime bundle (prefix stripped)."""
    if not isinstance(bundle, dict):
        raise ValueError(f"bundle must be a dict of mime type -> data, got {type(bundle).__name__}")
    text = bundle.get("text/markdown", bundle.get("text/plain"))
    if text is None:
        raise ValueError(f"bundle has neither text/markdown nor text/plain: {sorted(bundle)}")
    text = "".join(text) if isinstance(text, list) else str(text)
    if "text/markdown" in bundle:
        return text
    try:
        return str(literal_eval(text))
    except (SyntaxError, ValueError):
        return text


def glue_outputs(nb: dict):
    """``(name, mime bundle)`` of every output that glued a value in a notebook (parsed JSON), in
    order (a name glued twice comes twice)."""
    if not isinstance(nb, dict) or "cells" not in nb:
        raise ValueError("nb must be a notebook parsed from JSON (a dict with 'cells')")
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is not None:
                yield name, out.get("data", {})


def stored_glue(nb: dict) -> dict[str, str]:
    """``{name: shown text}`` for every value a notebook (parsed JSON) glued, from its outputs."""
    return {name: shown_text({k.removeprefix(GLUE_MIME_PREFIX): v for k, v in data.items()})
            for name, data in glue_outputs(nb)}


class ShownText(str):
    """A glued value as the prose shows it: a ``str`` whose repr is the text itself."""

    def __repr__(self) -> str:
        return str(self)


class Glue:
    """myst-nb's ``glue``, which also keeps what it glued: ``glue[name]`` is the text it shows."""

    def __init__(self, notebook: str | Path | None = None):
        self.shown: dict[str, str] = {}
        self.notebook = notebook      # where stored values are read from; None: the kernel's own
        self._stored: dict[str, str] | None = None

    def __call__(self, name: str, variable, display: bool = True) -> None:
        from IPython.core.formatters import format_display_data
        from myst_nb import glue as myst_glue

        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        myst_glue(name, variable, display)
        bundle, _ = format_display_data(variable)
        self.shown[name] = shown_text(bundle)

    def __getitem__(self, name: str) -> str:
        if name in self.shown:
            return ShownText(self.shown[name])
        stored = self.stored()
        if name in stored:
            return ShownText(stored[name])
        raise KeyError(f"nothing is glued as {name!r} yet: run the cell that computes it")

    def stored(self) -> dict[str, str]:
        """The values stored in the notebook's file (read once; empty when there is no file)."""
        if self._stored is None:
            path = self.notebook or os.environ.get("JPY_SESSION_NAME")
            try:
                self._stored = stored_glue(json.loads(Path(path).read_text())) if path else {}
            except (OSError, ValueError):
                self._stored = {}
        return self._stored


glue = Glue()


# ------------------------------------------------------------------ the prose's form, and its check

# myst-nb's inline glue roles, each of which the prose now writes as {eval}`glue["name"]`
GLUE_ROLE = re.compile(r"\{glue(?::(?:text|any|md))?\}`([^`]*)`")
EVAL_ROLE = re.compile(r"""\{eval\}`\s*glue\[\s*(["'])([^"'\\]+)\1\s*\]\s*`""")
MYST_NB_IMPORT = "from myst_nb import glue"
BOOK_IMPORT = "from grpo.book.glued import glue"


def eval_roles(markdown: str) -> str:
    """``markdown`` with each ``{glue:text}`name``` (``{glue}``, ``{glue:any}``, ``{glue:md}``)
    written as ``{eval}`glue["name"]```. A format spec or another page's key cannot be evaluated
    the same way in both renderers: refused."""
    def one(m: re.Match) -> str:
        name = m.group(1).strip()
        if not re.fullmatch(r"[\w.-]+", name):
            raise ValueError(f"cannot write {m.group(0)} as {{eval}}: only a plain glued name "
                             f"(no format spec, no other page's key) reads the same in both")
        return f'{{eval}}`glue["{name}"]`'
    return GLUE_ROLE.sub(one, markdown)


def user_expressions(markdown: str, stored: dict[str, str]) -> list[dict]:
    """What jupyterlab-myst keeps in a markdown cell's metadata after running it: one entry per
    ``{eval}`` role in order, each with the kernel's reply for ``glue[name]`` (the shown text)."""
    out = []
    for m in EVAL_ROLE.finditer(markdown):
        name = m.group(2)
        if name not in stored:
            raise ValueError(f"the prose names {name!r}, which the notebook's outputs never glue")
        expression = m.group(0)[len("{eval}`"):-1]
        out.append({"expression": expression, "result": {
            "status": "ok", "data": {"text/plain": stored[name]}, "metadata": {}}})
    return out


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def to_eval_prose(nb: dict) -> dict:
    """The notebook (parsed JSON, changed in place and returned) in the prose's {eval} form: its
    markdown's glue roles written as {eval}, ``from myst_nb import glue`` swapped for the book's
    ``glue`` (one line, the same outputs), and each markdown cell's ``user_expressions`` set from
    the stored outputs, so JupyterLab shows the numbers before a kernel runs. Idempotent."""
    stored = stored_glue(nb)
    for cell in nb["cells"]:
        text = _source(cell)
        if cell["cell_type"] == "code":
            lines = text.split("\n")
            if MYST_NB_IMPORT in lines:
                lines = [BOOK_IMPORT if ln == MYST_NB_IMPORT else ln for ln in lines]
                cell["source"] = "\n".join(lines)
        elif cell["cell_type"] == "markdown":
            text = eval_roles(text)
            cell["source"] = text
            expressions = user_expressions(text, stored)
            if expressions:
                cell.setdefault("metadata", {})["user_expressions"] = expressions
            else:
                cell.get("metadata", {}).pop("user_expressions", None)
    return nb


def eval_prose_problems(nb: dict) -> list[str]:
    """Why a notebook's prose is not in its {eval} form, or its stored expressions are stale."""
    problems = []
    stored = stored_glue(nb)
    for k, cell in enumerate(nb["cells"]):
        text = _source(cell)
        if cell["cell_type"] == "code" and MYST_NB_IMPORT in text.split("\n"):
            problems.append(f"cell {k}: imports myst-nb's glue, not {BOOK_IMPORT!r}")
        if cell["cell_type"] != "markdown":
            continue
        problems += [f"cell {k}: {m.group(0)} (write it as {{eval}}`glue[\"name\"]`)"
                     for m in GLUE_ROLE.finditer(text)]
        try:
            want = user_expressions(text, stored)
        except ValueError as err:
            problems.append(f"cell {k}: {err}")
            continue
        if cell.get("metadata", {}).get("user_expressions", []) != want:
            problems.append(f"cell {k}: its stored {{eval}} results differ from the glued outputs")
    return problems
