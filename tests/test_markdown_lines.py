"""A line of prose never starts a list by accident (issue 61).

CommonMark lets a bullet ("- ", "+ ", "* ") or "1. " interrupt a paragraph: a sentence wrapped so
that its next source line begins "- \\sum_a ..." or "+ 4 = 7" becomes a list item, and an inline
maths span cut by it shows as raw TeX (chapter 5's Caveat 2 did, from the day it was written).
This test reads every markdown cell of the book's notebooks (and its .md pages) and flags a line
that opens a list in the middle of a prose paragraph. A list the prose means to start keeps a
blank line before it, or follows a line that ends with a colon ("Three things conspire:"); inside
an open inline maths span ($ ... on the lines before) even that does not count as meant.
The browser test catches what slips through on the built page (TeX outside maths).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("book/*.ipynb"), *ROOT.glob("book/*.md")])

# What CommonMark lets interrupt a paragraph: a bullet with content, or an ordered list from 1
LIST_START = re.compile(r"^ {0,3}(?:[-+*]|1[.)])[ \t]+\S")
# A block that is not a paragraph of prose: heading, table, quote, HTML, directive option, rule
NOT_PROSE = re.compile(r"^ {0,3}(?:#{1,6}(?:\s|$)|\||>|<|:|---|\*\*\*|___|\[\^)")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}|:{3,})\s*(\{[\w-]+\}|[\w+-]*)")
# Directives whose body is not markdown (a plain ``` fence, with or without a language, is code)
CODE_DIRECTIVES = {"{code}", "{code-block}", "{code-cell}", "{math}", "{literalinclude}", "{raw}"}


def _inline_dollars(text: str) -> int:
    """Unescaped single $ (not $$) in ``text``: odd means an inline maths span is still open."""
    text = re.sub(r"\\\$", "", text)
    text = re.sub(r"\$\$", "", text)
    text = re.sub(r"`[^`]*`", "", text)
    return text.count("$")


def accidental_list_lines(markdown: str) -> list[str]:
    """The lines of ``markdown`` that open a list in the middle of a prose paragraph."""
    found = []
    fence = None              # the open fence's marker while inside a fenced block
    code = False              # ... and whether its body is code (not markdown)
    in_math = False           # inside a $$ ... $$ display block
    kind = None               # the current block: None (after a blank line), prose, list, other
    paragraph: list[str] = []
    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                fence, kind, paragraph = None, None, []
                continue
            if code:
                continue
        m = FENCE.match(line)
        if m and not in_math:
            fence, info = m.group(1), m.group(2).lower()
            code = info in CODE_DIRECTIVES if info.startswith("{") else fence[0] != ":"
            kind, paragraph = None, []
            continue
        if stripped.startswith("$$") or in_math:
            if stripped.startswith("$$"):
                opened_and_closed = len(stripped) > 2 and stripped.endswith("$$") and stripped != "$$"
                if not opened_and_closed:
                    in_math = not in_math
            kind = "other"
            continue
        if not stripped:
            kind, paragraph = None, []
            continue
        if kind is None:
            if LIST_START.match(line) or line.startswith(("  ", "\t")):
                kind = "list"            # a list, or a list item's continuation paragraph
            elif NOT_PROSE.match(line):
                kind = "other"
            else:
                kind = "prose"
            paragraph = [line]
            continue
        if kind == "prose" and LIST_START.match(line):
            open_maths = _inline_dollars("\n".join(paragraph)) % 2 == 1
            if open_maths or not paragraph[-1].rstrip().endswith(":"):
                found.append(line.strip()[:80])
            else:
                kind = "list"            # "...:" then a list: meant
        paragraph.append(line)
    return found


def page_markdown(path: Path) -> list[tuple[str, str]]:
    """(where, markdown) for each markdown cell of a notebook, or the whole of an .md page."""
    if path.suffix == ".md":
        return [(path.name, path.read_text())]
    cells = json.loads(path.read_text())["cells"]
    return [(f"{path.name} cell {k}", "".join(c["source"])) for k, c in enumerate(cells)
            if c["cell_type"] == "markdown"]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_line_of_prose_starts_a_list_by_accident(path):
    found = [f"{where}: {line}" for where, text in page_markdown(path)
             for line in accidental_list_lines(text)]
    assert not found, "a prose line opens a list (rewrap it, or put a blank line before a " \
                      "list):\n  " + "\n  ".join(found)


def test_the_check_catches_a_wrapped_sentence_and_passes_meant_lists():
    # chapter 5's Caveat 2 as it was: an inline maths span wrapped onto "- \sum_a"
    caveat = ("because $\\mathrm{KL}(\\pi_{\\text{ref}}\\|\\pi_\\theta) = \\sum_a \\pi_{\\text{ref}}"
              "\\log\\pi_{\\text{ref}}\n- \\sum_a \\pi_{\\text{ref}}\\log\\pi_\\theta$ and the first "
              "sum does not depend on $\\theta$.")
    found = accidental_list_lines(caveat)
    assert len(found) == 1 and found[0].startswith("- \\sum_a \\pi_{\\text{ref}}\\log"), found
    for planted in ("a total of 3\n+ 4 = 7 points", "the moves\n* the ones that fell",
                    "Chapter\n1. It showed", "an open span $x = a:\n- b$ here"):
        assert len(accidental_list_lines(planted)) == 1, planted
    meant = ("Three things conspire:\n- one\n- two\n\nA paragraph.\n\n- a list\n- wrapped item\n"
             "  continued\n- three\n\n1. first\n2. second\n\nprose ends\n2. cannot interrupt\n"
             "```python\nx = 1\n- 2\n```\n$$\na\n- b\n$$\n| a | b |\n|---|---|\n")
    assert accidental_list_lines(meant) == []
    # a directive's body is markdown and is checked; a code fence's is not
    assert len(accidental_list_lines("```{note}\nsome prose\n- \\sum_a\n```")) == 1
    assert accidental_list_lines("```{code-block} python\nsome code\n- 1\n```") == []
