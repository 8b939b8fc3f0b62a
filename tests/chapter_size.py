"""The course's limits on a page's prose, measured with ``grpo.book.prose`` (distinct numbers and
words, glued values filled in): the chapters from 6 on, as ``_toc.yml`` lists them, keep to 60
distinct numbers and 3,500 words.

    python tests/chapter_size.py            # a table for every chapter and page
"""
from __future__ import annotations

import sys
from pathlib import Path

from grpo.book.prose import measure

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from toc import chapters_with_stored_runs  # noqa: E402  (the chapter list is _toc.yml's)

MAIN_PATH = [f"chapters/{n:02d}_" for n in chapters_with_stored_runs()]  # held to the limits below
MAX_NUMBERS = 60
MAX_WORDS = 3500


def main() -> int:
    paths = sorted(ROOT.glob("chapters/*.ipynb")) + sorted(ROOT.glob("book/*.ipynb"))
    print(f"{'page':42s} {'numbers':>8s} {'words':>7s}")
    over = 0
    for p in paths:
        n, w = measure(p)
        held = any(str(p.relative_to(ROOT)).startswith(m) for m in MAIN_PATH)
        flag = "  over" if held and (n > MAX_NUMBERS or w > MAX_WORDS) else ""
        over += bool(flag)
        print(f"{str(p.relative_to(ROOT)):42s} {n:8d} {w:7d}{flag}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
