"""Each chapter's "Exercises" section, written at the notebook's end from
grpo.book.exercise_texts (issue 71).

    .venv/bin/python .ci/insert_exercises.py [--check] [NOTEBOOK ...]   (default: every chapter)

For each chapter (its number is the file name's first two digits), the section is the cells of
``exercise_texts.exercise_cells``: a heading, then per exercise its task, its stub, its one-line
check and its folded solution, without outputs. The cells are marked in their metadata
(``grpo_exercise``), so a second run replaces them rather than adding more, and keeps each cell
whose text has not changed as it is, outputs and id included: run it again after editing
``exercise_texts`` and only the edited cells change. Then ``make execute NB=...`` stores the
outputs (each check prints ``not attempted yet``). ``--check`` changes nothing and exits 1,
listing the notebooks whose section is missing or out of date.
"""
import sys
from pathlib import Path

import nbformat

from grpo.book.exercise_texts import with_exercises

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = [a for a in argv if a != "--check"]
    paths = [Path(n) for n in names] or sorted(ROOT.glob("chapters/[0-9][0-9]_*.ipynb"))
    stale = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        before = nbformat.writes(nb)
        updated = nbformat.from_dict(with_exercises(nb, int(path.name[:2])))
        if nbformat.writes(updated) == before:
            continue
        stale += 1
        if check:
            print(f"{path}: its exercises are missing or out of date")
        else:
            nbformat.write(updated, path)
            print(f"{path}: exercises written")
    if check and stale:
        print(f"{stale} notebook(s) out of date: run .ci/insert_exercises.py")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
