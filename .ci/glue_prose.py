"""Write the notebooks' prose in its {eval} form, and store what JupyterLab shows before it runs.

    .venv/bin/python .ci/glue_prose.py [--check] [NOTEBOOK ...]   (default: every chapter, page)

For each notebook (grpo.book.glued.to_eval_prose): each ``{glue:text}`name``` (``{glue}``,
``{glue:any}``, ``{glue:md}``) in its markdown becomes ``{eval}`glue["name"]```; the one line
``from myst_nb import glue`` becomes ``from grpo.book.glued import glue`` (the same outputs, so no
re-execution is needed); and each markdown cell's ``user_expressions`` metadata is set from the
notebook's stored glue outputs, which jupyterlab-myst shows until the kernel has run the cell.
Idempotent: run it again after any change to the prose or the outputs (`make execute` does).
``--check`` changes nothing and exits 1 listing what is out of date.
"""
import sys
from pathlib import Path

import nbformat

from grpo.book.glued import eval_prose_problems, to_eval_prose

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = [a for a in argv if a != "--check"]
    paths = [Path(n) for n in names] or sorted(ROOT.glob("chapters/[0-9][0-9]_*.ipynb")) + sorted(
        ROOT.glob("book/*.ipynb"))
    stale = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        problems = eval_prose_problems(nb)
        if check:
            stale += bool(problems)
            for p in problems:
                print(f"{path}: {p}")
        elif problems:
            nbformat.write(to_eval_prose(nb), path)
            print(f"{path}: prose in its {{eval}} form, {len(problems)} fixes")
    if check and stale:
        print(f"{stale} notebook(s) out of date: run .ci/glue_prose.py")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
