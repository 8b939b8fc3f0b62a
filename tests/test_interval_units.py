"""An interval says what it varies over (issue 73). On chapters 6-12, every sentence that states a
lift with its 95% interval ("+1.1 points [-10.3, +12.6]") names the unit the interval resamples:
the seeds, the runs (one run: "over problems, one run", ``grpo.stats.Lift.unit``), the problems,
the calculations or the starts. An interval from one run over problems alone then reads as such,
and cannot pass for one that counts how much another run would differ. A table names the unit in
a column instead, so table rows are not read here."""
import json
import re
from pathlib import Path

import pytest

from grpo.book import prose

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p for p in ROOT.glob("chapters/[0-9][0-9]_*.ipynb") if int(p.name[:2]) >= 6)
LIFT = re.compile(r"[+\-−]\d+(?:\.\d+)?(?: points)? \[\s*[+\-−]?\d+(?:\.\d+)?\s*,"
                  r"\s*[+\-−]?\d+(?:\.\d+)?\s*\]")
UNIT = re.compile(r"\b(seeds?|runs?|problems|calculations|starts|SFT runs)\b", re.I)


def unnamed(text: str) -> list[str]:
    """The sentences of ``text`` that state a lift with its interval and name no unit."""
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("|"))
    return [s for s in prose.sentences(text) if LIFT.search(s) and not UNIT.search(s)]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_interval_in_a_chapter_names_what_it_varies_over(path):
    assert unnamed(prose.page_text(json.loads(path.read_text()))) == [], path.name


def test_an_interval_without_its_unit_is_caught_and_one_with_it_passes():
    assert unnamed("SFT lifted accuracy +18.6 points [+16.6, +20.7].") == [
        "SFT lifted accuracy +18.6 points [+16.6, +20.7]."]
    assert unnamed("GRPO minus SFT is +0.8 [-0.5, +2.2] here.") != []
    assert unnamed("SFT lifted it +18.6 points [+16.6, +20.7], over problems, one run.") == []
    assert unnamed("Over two seeds GRPO moved it +1.1 points [-10.3, +12.6].") == []
    assert unnamed("| SFT | +18.6 points [+16.6, +20.7] |") == []      # a table: its column
    assert unnamed("Rewards lie in $[0, 1]$ and the band is [0.8, 1.2].") == []   # no lift
