"""Chapters 6-12 read as lessons, as chapters 1-5 already do (issue 60): each held to the measures
of ``grpo.book.prose.lesson_counts``, chapters 1-5 to no worse than their figures when chapters
6-12 were rewritten, and each measure shown to fail on a planted case."""
import json
from pathlib import Path

import pytest
import yaml

from grpo.book.prose import LessonCounts, lesson_counts

ROOT = Path(__file__).resolve().parents[1]
LESSON = {"words_per_sentence": 22.0, "long_per_1000_words": 3.5, "intervals": 3,
          "statistics_words": 2}
# Chapters 1-5 as they read before chapters 6-12 were rewritten (issue 60's table): no worse.
FIRST_HALF = {1: (20.7, 2.4, 0, 0), 2: (23.6, 2.6, 0, 0), 3: (22.5, 1.8, 0, 2), 4: (19.2, 3.2, 0, 0),
              5: (21.7, 3.1, 0, 2)}


def toc_chapters() -> dict:
    """Chapter number -> path, for every chapters/NN_*.ipynb the table of contents lists."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return {int(Path(f).name[:2]): ROOT / f"{f}.ipynb" for f in files if f.startswith("chapters/")}


def over(counts: LessonCounts, limits: dict) -> list[str]:
    """The measures on which ``counts`` exceeds ``limits``, each with its value."""
    return [f"{k} {getattr(counts, k):.1f} > {v}" for k, v in limits.items()
            if round(getattr(counts, k), 1) > v]


def test_the_lessons_are_the_tocs_chapters_from_6():
    """Chapters 6 on are numbered without a gap from 6, whatever their count (a chapter 13 in
    ``_toc.yml`` is held to the limits without editing a number here)."""
    later = sorted(n for n in toc_chapters() if n >= 6)
    assert later == list(range(6, 6 + len(later))) and len(later) >= 7
    assert sorted(n for n in toc_chapters() if n < 6) == sorted(FIRST_HALF)


@pytest.mark.parametrize("number", [n for n in sorted(toc_chapters()) if n >= 6])
def test_a_chapter_from_6_reads_as_a_lesson(number):
    path = toc_chapters()[number]
    assert over(lesson_counts(json.loads(path.read_text())), LESSON) == [], path.name


@pytest.mark.parametrize("number", sorted(FIRST_HALF))
def test_chapters_1_to_5_read_no_worse_than_they_did(number):
    path = toc_chapters()[number]
    limits = dict(zip(LESSON, FIRST_HALF[number], strict=True))
    assert over(lesson_counts(json.loads(path.read_text())), limits) == [], path.name


def _nb(*markdown, expressions=None):
    cells = []
    for text in markdown:
        cell = {"cell_type": "markdown", "source": text, "metadata": {}}
        if expressions:
            cell["metadata"]["user_expressions"] = [
                {"expression": k, "result": {"data": {"text/plain": repr(v)}}}
                for k, v in expressions.items()]
        cells.append(cell)
    return {"cells": cells}


def test_each_measure_fails_on_a_planted_case():
    short = "The group has eight answers. Two are right. They get more reward. "
    assert over(lesson_counts(_nb(short * 20)), LESSON) == []
    long_one = "This sentence " + "goes on and on " * 12 + "until it ends. "
    assert any(x.startswith("long_per_1000_words")
               for x in over(lesson_counts(_nb(short * 40 + long_one * 3)), LESSON))
    wordy = "The answers that the group of eight writes are read by the verifier, " * 2 + "then paid. "
    assert over(lesson_counts(_nb(wordy * 5)), LESSON)[0].startswith("words_per_sentence")
    intervals = short * 20 + "It moved +1.0 [-2.0, +3.0], +2 [0, 4], +3 [1, 5] and +4 [2, 6]. "
    assert over(lesson_counts(_nb(intervals)), LESSON) == ["intervals 4.0 > 3"]
    stats = short * 20 + "A paired bootstrap under Holm's correction. "
    assert over(lesson_counts(_nb(stats)), LESSON) == ["statistics_words 3.0 > 2"]


def test_glued_values_maths_and_code_are_counted_as_the_reader_gets_them():
    nb = _nb("It moved {eval}`glue[\"lift\"]` points. $$\\frac{a}{b} = [1, 2]$$ Code:\n```\n[3, 4]\n```",
             expressions={'glue["lift"]': "+1.0 [-2.0, +3.0]"})
    counts = lesson_counts(nb)
    assert counts.intervals == 1 and counts.words == 4


def test_reading_load_counts_what_the_page_shows_and_not_what_it_hides():
    from grpo.book.prose import READING_RATES, reading_load
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "One two three four.\n\n$$x = 1$$\n\n"
                                                            "| a | b |\n|---|---|\n| 1 | 2 |"},
        {"cell_type": "code", "metadata": {}, "source": "x = 1\n\nprint(x)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n2\n"}]},
        {"cell_type": "code", "metadata": {"tags": ["remove-input"]}, "source": "hidden = 1\nplot()",
         "outputs": [{"output_type": "display_data", "data": {"image/png": "..."}}]},
        {"cell_type": "code", "metadata": {"tags": ["remove-cell"]}, "source": "glue('a', 1)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "not shown\n"}]},
    ]}
    load = reading_load(nb)
    assert (load.code_lines, load.output_lines, load.figures, load.tables,
            load.display_equations) == (2, 2, 1, 1, 1)
    r = READING_RATES
    assert load.minutes == pytest.approx(load.prose_words / r["prose_words_a_minute"]
                                         + 2 / r["code_lines_a_minute"]
                                         + 2 / r["output_lines_a_minute"] + r["wall_minutes_a_figure"]
                                         + r["wall_minutes_a_table"] + r["wall_minutes_a_display_equation"])


@pytest.mark.parametrize("number", [n for n in sorted(toc_chapters()) if n >= 6])
def test_a_chapter_from_6_links_how_we_measure_and_it_comes_before_them(number):
    """The statistics are explained once, on "How we measure", before chapter 6: each later chapter
    links to it instead of explaining them again."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert files.index("book/how_we_measure") < files.index(
        str(toc_chapters()[6].relative_to(ROOT).with_suffix("")))
    cells = json.loads(toc_chapters()[number].read_text())["cells"]
    assert any("how_we_measure" in "".join(c["source"]) for c in cells
               if c["cell_type"] == "markdown")


def test_the_landing_pages_course_time_holds_for_the_slowest_cold_reader():
    """The landing page's course total is the reading model's minutes for chapters 1-12 scaled by
    the slowest pace a cold reader has shown against the model (data/bench/cold_read.json), so
    the time it promises covers every cold read so far."""
    from grpo.book.prose import glued_values, reading_load, slowest_pace
    reads = json.loads((ROOT / "data" / "bench" / "cold_read.json").read_text())["reads"]
    assert len(reads) >= 2 and slowest_pace(reads) >= max(
        r["course_wall_hours"] / r["model_wall_hours_at_that_commit"] for r in reads)
    model = sum(reading_load(json.loads(p.read_text())).minutes for p in toc_chapters().values())
    stated = float(glued_values(json.loads((ROOT / "book" / "intro.ipynb").read_text()))
                   ["route_full_min"])
    assert stated >= round(model * slowest_pace(reads)) - 0.5, (stated, model)


def test_slowest_pace_is_the_slowest_reads_ratio_and_refuses_a_read_without_hours():
    from grpo.book.prose import slowest_pace
    reads = [{"course_wall_hours": 5, "model_wall_hours_at_that_commit": 5.0},
             {"course_wall_hours": 6, "model_wall_hours_at_that_commit": 4.0}]
    assert slowest_pace(reads) == 1.5
    with pytest.raises(ValueError, match="reads"):
        slowest_pace([])
    with pytest.raises(ValueError, match="reads"):
        slowest_pace([{"course_wall_hours": 5}])
