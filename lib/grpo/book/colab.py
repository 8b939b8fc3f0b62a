"""Running a chapter outside the repository (Colab, Binder, a bare Jupyter): the first cell.

A notebook opened from the launch buttons has no ``grpo`` package and no ``data/`` beside it.
Its first cell clones the book's repository, installs the lib from the clone and moves into the
clone's ``chapters/``, so the chapter's imports and its ``data/results`` reads work unchanged, and
then says what the reader there sees: Colab, VS Code and the classic Notebook show the prose's
MyST markup as written (no package renders MyST in their markdown cells), so the cell says how to
read a ``{eval}`` number. Inside the repository (``make lab``, nbval) and on Binder (which
installs requirements.txt, jupyterlab-myst with it, and runs postBuild) ``grpo`` is importable,
the cell does nothing, and JupyterLab renders the prose.

The repository URL is the one setting ``repository.url`` in ``_config.yml``;
``python -m grpo.book.colab`` prints the cell for it, ready to paste as a chapter's first cell.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

CLONE_DIR = "grpo-book"

FIRST_CELL = '''\
# Outside the book's repository (Colab, Binder): clone it and install its lib. In the repo: nothing.
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("grpo") is None:
    REPO, BRANCH = {repo}, {branch}
    if not REPO:
        raise RuntimeError(
            "set repository.url in the book's _config.yml, then regenerate this "
            "cell with `python -m grpo.book.colab`"
        )
    if not os.path.isdir({clone}):
        subprocess.run(
            ["git", "clone", "--quiet", "--depth", "1", "--branch", BRANCH, REPO, {clone}],
            check=True,
        )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "-e", {clone}], check=True
    )
    sys.path.insert(0, os.path.abspath(os.path.join({clone}, "lib")))
    os.chdir(os.path.join({clone}, "chapters"))
    print("Only JupyterLab with jupyterlab-myst (Binder, or `make lab` in a clone) renders the")
    print("prose. Here (Colab, VS Code, Notebook) its MyST markup shows as written: a number reads")
    print('{{eval}}`glue["name"]`, and glue["name"] in a code cell prints it once the cells above')
    print("it have run; {{cite}}`key` is a reference in the book's bibliography.")
'''


def first_cell(repo_url: str, branch: str = "main") -> str:
    """The source of a chapter's first cell for the repository at ``repo_url``.

    ``repo_url`` may be empty (no public repository yet): the cell then does nothing inside the
    repository and, outside it, stops with a message saying which setting to fill in.
    """
    if not isinstance(repo_url, str) or not isinstance(branch, str):
        raise TypeError("repo_url and branch must be strings")
    if repo_url and not re.fullmatch(r"https://\S+", repo_url):
        raise ValueError(f"repo_url must be an https:// URL (or empty), got {repo_url!r}")
    if not re.fullmatch(r"[\w./-]+", branch):
        raise ValueError(f"branch must be a plain git branch name, got {branch!r}")
    # double-quoted literals, as ruff format writes them (the chapters are formatted with it)
    return FIRST_CELL.format(
        repo=json.dumps(repo_url.rstrip("/")), branch=json.dumps(branch),
                             clone=json.dumps(CLONE_DIR)
    )


def configured_repository(config_path: str | Path | None = None) -> tuple[str, str]:
    """(url, branch) from the ``repository:`` block of ``_config.yml`` (default: the repo's)."""
    import yaml
    path = Path(config_path) if config_path else Path(__file__).resolve().parents[3] / "_config.yml"
    repo = (yaml.safe_load(path.read_text()) or {}).get("repository") or {}
    if not isinstance(repo, dict):
        raise ValueError(f"{path}: repository must be a mapping (url, branch), got {repo!r}")
    return str(repo.get("url") or ""), str(repo.get("branch") or "main")


def with_current_first_cell(nb: dict, source: str) -> bool:
    """Put ``source`` (``first_cell(...)``) into the notebook's first code cell, where that cell is
    this module's (it opens with the cell's first comment line). True when the cell changed."""
    if not isinstance(nb, dict) or "cells" not in nb:
        raise ValueError("nb must be a notebook parsed from JSON (a dict with 'cells')")
    first = next((c for c in nb["cells"] if c["cell_type"] == "code"), None)
    if first is None:
        return False
    text = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
    if not text.startswith(FIRST_CELL.split("\n", 1)[0]) or text == source.rstrip("\n"):
        return False
    first["source"] = source.rstrip("\n")
    return True


if __name__ == "__main__":
    print(first_cell(*configured_repository()), end="")
