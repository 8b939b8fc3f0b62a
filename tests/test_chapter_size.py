"""The course's limits: chapters 6-12 keep to 60 distinct numbers and 3,500 words of prose, each
trains something live (a cell tagged ``live-run``), and the counter itself counts what it says."""
import json

import pytest

import chapter_size as size
from grpo.book import prose

MAIN = sorted(p for p in size.ROOT.glob("chapters/*.ipynb")
              if any(str(p.relative_to(size.ROOT)).startswith(m) for m in size.MAIN_PATH))


def test_the_main_path_is_chapters_6_to_12():
    assert [p.name[:2] for p in MAIN] == ["06", "07", "08", "09", "10", "11", "12"]


@pytest.mark.parametrize("path", MAIN, ids=lambda p: p.name[:2])
def test_a_main_path_chapter_keeps_to_the_limits(path):
    n, w = prose.measure(path)
    assert n <= size.MAX_NUMBERS, f"{path.name}: {n} distinct numbers in its prose (max {size.MAX_NUMBERS})"
    assert w <= size.MAX_WORDS, f"{path.name}: {w} words of prose (max {size.MAX_WORDS})"


@pytest.mark.parametrize("path", MAIN, ids=lambda p: p.name[:2])
def test_a_main_path_chapter_trains_live(path):
    cells = json.loads(path.read_text())["cells"]
    live = [c for c in cells if "live-run" in c.get("metadata", {}).get("tags", [])]
    assert live, f"{path.name} has no cell tagged live-run"
    assert all(c["cell_type"] == "code" for c in live)


def _nb(markdown, glued=None):
    cells = [{"cell_type": "markdown", "source": markdown, "metadata": {}}]
    for name, value in (glued or {}).items():
        cells.append({"cell_type": "code", "source": "", "metadata": {}, "outputs": [{
            "output_type": "display_data", "metadata": {"scrapbook": {"name": name}},
            "data": {"text/plain": repr(value)}}]})
    return {"cells": cells}


def test_glued_values_are_counted_as_rendered():
    nb = _nb("A lift of {glue:text}`lift:+.1f` points over {glue:text}`n` problems.",
             {"lift": 3.14159, "n": 2000})
    text = prose.prose(nb)
    assert "+3.1 points over 2000 problems" in text
    assert prose.numbers(text) == {3.1, 2000.0}


def test_names_are_not_numbers_and_each_value_counts_once():
    text = "float64 on x86-64, GSM8K and SmolLM2-135M; 1,234 and 1234 and +0.5 and 0.50; lr 1e-5."
    assert prose.numbers(text) == {1234.0, 0.5, 1e-5}
    assert prose.numbers("500k steps on 1-4-step problems, a 1.5B model") == {500e3, 1.0, 4.0, 1.5e9}


def test_code_blocks_targets_and_links_are_not_prose():
    nb = _nb("(sec-7)=\n# Title\n\n```python\nx = 99\n```\nSee {doc}`../book/lab_06` and "
             "[the run](data/runs/06/seed_42.json) in chapter 3.")
    text = prose.prose(nb)
    assert prose.numbers(text) == {3.0}
    assert prose.words("one two, three's four-5") == 5
