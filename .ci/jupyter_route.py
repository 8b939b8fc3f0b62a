"""The notebooks in the Jupyter route's form: {eval} prose with its stored results, the current
first cell for Colab and Binder.

    .venv/bin/python .ci/jupyter_route.py [--check] [NOTEBOOK ...]   (default: every chapter, page)

For each notebook (grpo.book.glued.to_eval_prose): each ``{glue:text}`name``` (``{glue}``,
``{glue:any}``, ``{glue:md}``) in its markdown becomes ``{eval}`glue["name"]```; the one line
``from myst_nb import glue`` becomes ``from grpo.book.glued import glue`` (the same outputs, so no
re-execution is needed); and each markdown cell's ``user_expressions`` metadata is set from the
notebook's stored glue outputs, which jupyterlab-myst shows until the kernel has run the cell.
Each chapter's first code cell becomes the one ``python -m grpo.book.colab`` prints for
``_config.yml`` (grpo.book.colab.with_current_first_cell; it prints nothing inside the repository,
so no re-execution is needed either). Idempotent: run it again after any change to the prose or
the outputs (`make execute` refreshes the stored results itself). ``--check`` changes nothing
and exits 1, listing what is out of date.
"""
import sys
from pathlib import Path

import nbformat

from grpo.book.colab import configured_repository, first_cell, with_current_first_cell
from grpo.book.glued import eval_prose_problems, to_eval_prose

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = [a for a in argv if a != "--check"]
    paths = [Path(n) for n in names] or sorted(ROOT.glob("chapters/[0-9][0-9]_*.ipynb")) + sorted(
        ROOT.glob("book/*.ipynb"))
    stale = 0
    cell = first_cell(*configured_repository())
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        problems = eval_prose_problems(nb)
        if with_current_first_cell(nb, cell):
            problems.append("its first cell is not the current one (python -m grpo.book.colab)")
        if check:
            stale += bool(problems)
            for p in problems:
                print(f"{path}: {p}")
        elif problems:
            nbformat.write(to_eval_prose(nb), path)    # nb has the current first cell by now
            print(f"{path}: {len(problems)} fixes")
    if check and stale:
        print(f"{stale} notebook(s) out of date: run .ci/jupyter_route.py")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
