"""What a student sees on the built site, page by page, in the chapters and their lab notes.

Run by `make browser` (part of `make test`, after the strict build), never by `make unit`: it reads
_build/html, and its file name does not match pytest's test_*.py. ``tests/test_site_lessons.py``
plants each fault in a small page and shows that the checks catch it.

On every chapter and lab-notes page:
  * every image (a PNG, an SVG, an animation's frame) sits in a numbered figure ("Fig. 6.2") with a
    caption, and its alt text says what the figure shows (not empty, not a file name);
  * no visible code line only glues a value, formats a table, writes results, holds a `RETRAIN`
    switch or loads stored runs: such cells show their output, and their code is one click away
    (`hide-input`) or gone (`remove-input`);
  * no printed output names a file the page wrote or read (``wrote data/results/...``,
    ``data/runs/...``) or a raw dict;
  * every exercise's solution is folded (an admonition with the ``dropdown`` class, which
    sphinx-togglebutton closes), and a chapter has two or three exercises.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))

# A code line that only glues, formats, saves, switches or loads.
PLUMBING = re.compile(
    r"^\s*glue\(|\bmarkdown_table\(|\bsave_results\(|\bRETRAIN\w*\s*=|"
    r"\b(load_stored|load_run|read_run|load_record|load_results|load_sft_model)\(|"
    r"display\(\s*Markdown\(")
# Printed output that names a stored file, or a dict's repr.
PRINTED_PATH = re.compile(r"\b(wrote|saved|read from)\b.*\b(data|scratch)/|\bdata/(results|runs|models)/"
                          r"|^\s*\{'[a-z_]+': ")
FILE_NAME = re.compile(r"(^|/)[\w.-]+\.(png|svg|jpe?g|gif)$|_images/", re.I)


def lesson_pages() -> list[Path]:
    """The built chapters and lab notes."""
    if not HTML.is_dir():
        return []
    return sorted([*HTML.glob("chapters/*.html"), *HTML.glob("book/lab_*.html")])


def _article(html: str):
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(html, "html.parser")
    return soup.find("article") or soup.find("main") or soup


def image_faults(html: str) -> list[str]:
    """Each image outside a numbered, captioned figure, or whose alt text says nothing."""
    faults = []
    for img in _article(html).find_all("img"):
        name = img.get("id") or img.get("src", "")[:60]
        figure = img.find_parent("figure")
        caption = figure.find("figcaption") if figure else None
        if caption is None or not caption.get_text(strip=True):
            faults.append(f"image {name}: no caption")
        elif caption.find(class_="caption-number") is None:
            faults.append(f"image {name}: its figure has no number")
        alt = (img.get("alt") or "").strip()
        if len(alt.split()) < 3 or FILE_NAME.search(alt):
            faults.append(f"image {name}: alt text {alt!r} does not say what it shows")
    return faults


def plumbing_faults(html: str) -> list[str]:
    """Visible code lines that only glue, format, save, switch or load."""
    faults = []
    for block in _article(html).select("div.cell_input"):
        if block.find_parent("details") is not None:
            continue                                    # hide-input: one click away
        for line in block.get_text().splitlines():
            if PLUMBING.search(line):
                faults.append(f"visible plumbing: {line.strip()[:90]}")
    return faults


def printed_path_faults(html: str) -> list[str]:
    """Printed output lines that name a file the page wrote or read, or print a raw dict."""
    faults = []
    for block in _article(html).select("div.cell_output"):
        for line in block.get_text().splitlines():
            if PRINTED_PATH.search(line):
                faults.append(f"printed: {line.strip()[:90]}")
    return faults


def solution_faults(html: str) -> list[str]:
    """Exercise solutions shown open, and a chapter whose exercise count is not two or three."""
    article = _article(html)
    faults = []
    solutions = [a for a in article.select("div.admonition")
                 if (a.find(class_="admonition-title") or a).get_text(strip=True) == "Solution"]
    for a in solutions:
        if "dropdown" not in a.get("class", []):
            faults.append("an exercise's solution is not folded (no dropdown class)")
    if article.find(id="exercises") is not None and not 2 <= len(solutions) <= 3:
        faults.append(f"{len(solutions)} exercises with solutions (two or three a chapter)")
    return faults


def page_faults(html: str) -> list[str]:
    return (image_faults(html) + plumbing_faults(html) + printed_path_faults(html)
            + solution_faults(html))


def _id(path: Path) -> str:
    return str(path.relative_to(HTML))


@pytest.mark.parametrize("page", lesson_pages(), ids=_id)
def test_a_lesson_page_shows_captioned_figures_and_no_plumbing(page):
    assert page_faults(page.read_text()) == [], _id(page)


def test_the_site_was_built():
    assert len(lesson_pages()) >= 12, f"no built chapters under {HTML}: run `make book` first"
