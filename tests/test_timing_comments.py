"""No timing lives in a notebook's code comment, where no test reads it ("Measured under the book's
pins: 110 CPU-seconds"): a cost a page states is read from what measured it, ``data/bench/`` (make
bench) or a stored run's ``cpu_s`` (the run store), and printed or glued into the prose, so that a
new measurement changes the page. A page that must keep one for a while is counted in STILL_THERE,
and its count may only fall."""
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([*REPO.glob("chapters/*.ipynb"), *REPO.glob("book/*.ipynb")])
# a number, then a time unit (with or without CPU-); "CPU-minutes" alone after a wrapped number
TIMING = re.compile(r"\d[\d,.]*\s*(?:-\s*)?(?:CPU[- ]?)?(?:seconds?|secs?|minutes?|mins?|hours?|"
                    r"s|h|ms)\b|^#\s*CPU-(?:seconds|minutes|hours)\b", re.I)
STILL_THERE: dict[str, int] = {}   # none now: chapter 9's switches print make bench's estimate


def timing_comments(source: str) -> list[str]:
    """The comments of a code cell's source that state a time."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    return [t.string for t in tokens if t.type == tokenize.COMMENT and TIMING.search(t.string)]


def page_timing_comments(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return [c for cell in cells if cell["cell_type"] == "code"
            for c in timing_comments("".join(cell["source"]))]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_page_adds_a_timing_in_a_comment(path):
    found = page_timing_comments(path)
    allowed = STILL_THERE.get(str(path.relative_to(REPO)), 0)
    assert len(found) <= allowed, "a timing in a comment, which no test reads:\n" + "\n".join(found)
    assert len(found) >= allowed, (f"{path.name} carries {len(found)} timing comments now: lower "
                                   f"STILL_THERE to {len(found) or 'nothing'}")


@pytest.mark.parametrize("source, count", [
    ("# Measured under the book's pins: 110 CPU-seconds on one core\nx = 1\n", 1),
    ("x = 1  # about 15 CPU-seconds\n", 1),
    ("# Stored: 13 runs (about 7\n# CPU-minutes); peak under 1 GB\n", 1),
    ("live_cpu_s = time.process_time() - cpu0  # CPU seconds for both runs\n", 0),
    ("# 6.5 CPU-hours in all\n", 1),
    ("# the sum of their stored cpu_s, read above\nprint(f'{cpu / 60:.0f} CPU-minutes')\n", 0),
    ("# 8 prompts x 8 samples, 64 new tokens\n", 0),
])
def test_a_planted_timing_comment_is_found(source, count):
    assert len(timing_comments(source)) == count
