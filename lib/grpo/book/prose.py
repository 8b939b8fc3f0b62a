"""What a reader meets in a page's prose: its distinct numbers and words, glued values filled in.

The prose is every markdown cell as it renders: each ``{eval}`glue["name"]``` (or myst-nb's
``{glue:text}`name```, ``{glue}``) is replaced by the value the notebook glued, formatted as the
role asks. Fenced code, MyST targets, a directive's options (its body, such as a figure's caption,
is prose), roles' targets ({doc}, {ref}, {cite}, ...), link URLs and HTML comments are not prose
and are dropped; inline code, tables and math stay. A number is any numeric token that does not sit
inside a name beginning with a letter (``float64``, ``GSM8K``, ``x86-64``, ``SmolLM2-135M`` are
names, but ``500k``, ``1.5B`` and the 1 and 4 of ``1-4-step`` are numbers); ``1,234``, ``+0.5`` and
``0.50`` count as the values 1234, 0.5 and 0.5, ``500k`` as 500000, and each distinct value counts
once. Words are runs of letters and digits. ``tests/chapter_size.py`` holds chapters 6-11 to the
course's limits with it; the landing page turns words into reading time.

``page_text`` is the whole page as a reader meets it: the markdown cells rendered as above, and
between them the markdown a code cell displays (a generated table, a verdict line), each where it
appears. ``section`` cuts one heading's text out of it and ``sentences`` splits a text into the
sentences a reader would quote. The landing page quotes each chapter's finding with them, and
``tests/conclusions.py`` reads every page's claims through them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .glued import glue_outputs

_GLUE = re.compile(r"\{glue(?::(?:text|any|md))?\}`([^`:]+)(?::([^`]*))?`"
                   r"""|\{eval\}`\s*glue\[\s*["']([^"']+)["']\s*\]\s*`""")
_ROLE_TARGET = re.compile(r"\{(?!glue)([\w:-]+)\}`([^`]*)`")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")
_NUMBER = re.compile(r"(?<![\w.])[-+−]?\d+(?:,\d{3})*(?:\.\d+)?([kMB](?![A-Za-z]))?")
_NAME = re.compile(r"\b(?=[\w-]*\d)[A-Za-z_][\w]*(?:-[\w]+)*\b")
_SCALE = {"k": 1e3, "M": 1e6, "B": 1e9}
_SCI = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[-+−]?\d+\b")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")


def glued_values(nb: dict) -> dict[str, object]:
    """``{name: value}`` for every value the notebook glued (the last one, if glued twice)."""
    values = {}
    for name, data in glue_outputs(nb):
        text = next((data[k] for k in ("application/papermill.record/text/markdown",
                                       "application/papermill.record/text/plain", "text/plain")
                     if k in data), "")
        text = "".join(text) if isinstance(text, list) else text
        try:
            values[name] = json.loads(text.replace("'", '"'))
        except ValueError:
            values[name] = text.strip("'\"")
    return values


def _fill(match: re.Match, values: dict) -> str:
    name, fmt = (match.group(1) or match.group(3)).strip(), match.group(2)
    if name not in values:
        return " "
    value = values[name]
    if fmt:
        try:
            return format(value, fmt)
        except (TypeError, ValueError):
            pass
    return str(value)


def _role(match: re.Match) -> str:
    """A role as it reads: a {term} shows its text, a role with ``text <target>`` its text, and
    any other role (a citation, a bare {doc} or {numref} target) is not prose."""
    name, body = match.group(1), match.group(2)
    if "<" in body:
        return re.sub(r"\s*<[^>]*>", "", body)
    return body if name == "term" else " "


def render_markdown(text: str, values: dict) -> str:
    """One markdown cell's text as a reader sees it (see the module docstring)."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"^(```|~~~)(?!\{).*?^\1\s*$", " ", text, flags=re.S | re.M)  # code
    text = re.sub(r"^(```|~~~|:::)\{[^}]*\}.*$|^:[\w-]+:.*$|^(```|~~~|:::)\s*$", " ", text,
                  flags=re.M)                   # a directive's fences and options: its body stays
    text = re.sub(r"^\([\w-]+\)=\s*$", " ", text, flags=re.M)
    text = _GLUE.sub(lambda m: _fill(m, values), text)
    text = _ROLE_TARGET.sub(_role, text)
    return _LINK.sub(lambda m: m.group(1), text)


def _displayed_markdown(cell: dict) -> list[str]:
    """The markdown a code cell displays (not a glued value, which is shown where it is pasted)."""
    out = []
    for o in cell.get("outputs", []):
        if o.get("metadata", {}).get("scrapbook"):
            continue
        md = o.get("data", {}).get("text/markdown")
        if md is not None:
            out.append("".join(md) if isinstance(md, list) else md)
    return out


def prose(nb: dict) -> str:
    """The markdown cells' text as a reader sees it (see the module docstring)."""
    values = glued_values(nb)
    return "\n".join(render_markdown("".join(c["source"]), values) for c in nb["cells"]
                     if c["cell_type"] == "markdown")


def page_text(nb: dict) -> str:
    """The whole page as a reader sees it: the markdown cells rendered, and the markdown each code
    cell displays (its generated tables and lines), in page order, a blank line between blocks."""
    values = glued_values(nb)
    blocks = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            blocks.append(render_markdown("".join(cell["source"]), values))
        elif cell["cell_type"] == "code":
            blocks += [render_markdown(md, values) for md in _displayed_markdown(cell)]
    return "\n\n".join(blocks)


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def section(text: str, heading: str) -> str | None:
    """The text under the first heading that reads ``heading`` (case and trailing punctuation
    aside), up to the next heading of the same or a higher level; None where there is none."""
    if not isinstance(heading, str) or not heading.strip():
        raise ValueError(f"heading must be a non-empty string, got {heading!r}")
    want = heading.strip().rstrip(".:?").lower()
    for m in _HEADING.finditer(text):
        if m.group(2).rstrip(".:?").lower() == want:
            level = len(m.group(1))
            rest = text[m.end():]
            nxt = next((h for h in _HEADING.finditer(rest) if len(h.group(1)) <= level), None)
            return rest[:nxt.start()] if nxt else rest
    return None


# Abbreviations after which a full stop does not end a sentence.
_ABBREVIATIONS = ("e.g", "i.e", "cf", "vs", "Dr", "al", "Fig", "Eq", "approx", "resp", "No")
_SENTENCE_END = re.compile(r"(?<=[.!?])[*_)\]\"'’”]*\s+(?=[\"'“‘(\[*_`$]*[A-Z0-9{$`])")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each on one line with its spaces collapsed. A heading, a table
    row, a list item and a blank line each end a sentence; inside a paragraph a sentence ends at
    '.', '!' or '?' before a capital, a digit or markup (not after "e.g.", "Dr." and the like)."""
    out = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]\s|\d+\.\s|#|\|))", text):
        block = " ".join(block.split())
        if not block or block.startswith("#") or re.fullmatch(r"\|?[\s|:-]*\|?", block):
            continue
        block = re.sub(r"^(?:[-*+]|\d+\.)\s+", "", block)
        start = 0
        for m in _SENTENCE_END.finditer(block):
            before = block[start:m.start()]
            word = re.search(r"([\w.]+)[.!?][*_)\]\"'’”]*$", before)
            if word and word.group(1) in _ABBREVIATIONS:
                continue
            out.append(block[start:m.start()].strip())
            start = m.end()
        if block[start:].strip():
            out.append(block[start:].strip())
    return out


def numbers(text: str) -> set[float]:
    """The distinct numeric values in ``text`` (float64 or GSM8K are names; 500k is a number)."""
    found = {float(m.group(0).replace("−", "-")) for m in _SCI.finditer(text)}
    text = _SCI.sub(" ", text)
    text = _NAME.sub(" ", text)
    for m in _NUMBER.finditer(text):
        token = m.group(0).replace("−", "-").replace(",", "").lstrip("+").rstrip("kMB")
        found.add(abs(float(token)) * _SCALE.get(m.group(1), 1))
    return found


def words(text: str) -> int:
    return len(_WORD.findall(text))


def measure(path: Path) -> tuple[int, int]:
    """(distinct numbers, words) in the rendered prose of the notebook at ``path``."""
    text = prose(json.loads(Path(path).read_text()))
    return len(numbers(text)), words(text)


# ----------------------------------------------------------------------------- a lesson's measures
# How a chapter reads as a lesson, counted the way issue 60 counted chapters 1-12 (and
# ../shared/tools/prose_stats.py counts them): the markdown cells with each {eval} value filled in
# from the cell's stored user_expressions, maths and fenced code left out; sentences are counted
# outside headings, tables, quotes and lists.

_EVAL = re.compile(r"\{eval\}`([^`]+)`")
STATISTICS_WORDS = re.compile(
    r"\b(Holm|bootstrap\w*|paired|p-values?|p\s?[<=]|adjusted p|family|families|power(?:ed)?|"
    r"endpoints?|quadrature|t-interval|confidence|Bonferroni|standard errors?|SNR|pre-?regist\w*|"
    r"secondary|primary)\b", re.I)
_INTERVAL = re.compile(r"\[\s*[+\-−]?\d+(?:\.\d+)?\s*,\s*[+\-−]?\d+(?:\.\d+)?\s*\]")


def lesson_prose(nb: dict) -> str:
    """The markdown cells as the lesson measures count them: {eval} values from each cell's stored
    ``user_expressions``, display and inline maths out (inline maths as one token), fenced code
    out, a role's text kept."""
    out = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        values = {}
        for e in cell.get("metadata", {}).get("user_expressions", []):
            data = e.get("result", {}).get("data", {})
            values[e["expression"]] = str(data.get("text/markdown")
                                          or data.get("text/plain", "??")).strip("'\"")
        text = _EVAL.sub(lambda m: values.get(m.group(1), "??"), text)
        text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
        text = re.sub(r"```.*?```", " ", text, flags=re.S)
        text = re.sub(r"\$[^$]+\$", "x", text)
        text = re.sub(r"\{[a-z:]+\}`([^`<]*)(?:<[^>]*>)?`", r"\1", text)
        out.append(text)
    return "\n".join(out)


@dataclass(frozen=True)
class LessonCounts:
    """A page's prose measured as a lesson (``lesson_counts``)."""
    words: int
    words_per_sentence: float
    long_sentences: int                 # over 40 words
    intervals: int                      # "[lo, hi]" pairs of numbers
    statistics_words: int              # STATISTICS_WORDS

    @property
    def long_per_1000_words(self) -> float:
        return 1000 * self.long_sentences / max(1, self.words)


def lesson_counts(nb: dict) -> LessonCounts:
    """Words, the mean words a sentence, sentences over 40 words, intervals and statistics words in
    a notebook's prose (``lesson_prose``)."""
    text = lesson_prose(nb)
    body = re.sub(r"^\s*([#|>:-]|\d+\.).*$", "", text, flags=re.M)
    said = [s for s in re.split(r"(?<=[.!?])\s+", " ".join(body.split())) if len(s.split()) > 3]
    return LessonCounts(
        words=len(re.findall(r"[A-Za-z][A-Za-z'’-]*", text)),
        words_per_sentence=round(sum(len(s.split()) for s in said) / max(1, len(said)), 1),
        long_sentences=sum(len(s.split()) > 40 for s in said),
        intervals=len(_INTERVAL.findall(text)),
        statistics_words=len(STATISTICS_WORDS.findall(text)))


# ----------------------------------------------------------------------------- reading time
# What a reader reads on a page, and the rates the model turns it into minutes at. The rates are
# stated, not measured on readers: prose at a common speed for technical text, code skimmed at a
# line a second, printed output faster, half a minute for a figure, a table or a displayed
# equation. Cold readers' paces have differed from the model's (data/bench/cold_read.json: one
# took 5 hours where the model said 5.4, the next 7 where it said 4.7, the third 8.2 where it said
# 4.4), so the landing page scales the model by the slowest pace a cold reader has shown
# (``slowest_pace``).

READING_RATES = {"prose_words_a_minute": 200, "code_lines_a_minute": 60,
                 "output_lines_a_minute": 40, "wall_minutes_a_figure": 0.5,
                 "wall_minutes_a_table": 0.5, "wall_minutes_a_display_equation": 0.5}
_HIDDEN_CODE = {"remove-input", "remove-cell", "hide-input"}
_HIDDEN_OUTPUT = {"remove-output", "remove-cell", "hide-output"}


@dataclass(frozen=True)
class ReadingLoad:
    """What a page asks a reader to read (``reading_load``)."""
    prose_words: int
    code_lines: int                     # non-blank lines of the code cells the page shows
    output_lines: int                   # lines of printed text the page shows
    figures: int                        # images, animations and glued figures
    tables: int                         # tables in the prose and tables a cell displays
    display_equations: int

    @property
    def minutes(self) -> float:
        """The reading time at ``READING_RATES``."""
        r = READING_RATES
        return (self.prose_words / r["prose_words_a_minute"]
                + self.code_lines / r["code_lines_a_minute"]
                + self.output_lines / r["output_lines_a_minute"]
                + self.figures * r["wall_minutes_a_figure"]
                + self.tables * r["wall_minutes_a_table"]
                + self.display_equations * r["wall_minutes_a_display_equation"])


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def reading_load(nb: dict) -> ReadingLoad:
    """Count what a notebook's page shows: its prose words (``prose``), the code and printed
    output of cells not hidden by a tag, its figures, tables and display equations."""
    code = output = figures = tables = equations = 0
    for cell in nb["cells"]:
        tags = set(cell.get("metadata", {}).get("tags", []))
        source = _text(cell.get("source", ""))
        if cell["cell_type"] == "markdown":
            figures += len(re.findall(r"\{glue:figure\}|\{figure\}|!\[", source))
            tables += len(re.findall(r"^\s*\|?\s*:?-{3,}", source, flags=re.M))
            equations += len(re.findall(r"\$\$", source)) // 2
            equations += len(re.findall(r"^```\{math\}", source, flags=re.M))
            continue
        if cell["cell_type"] != "code":
            continue
        if not tags & _HIDDEN_CODE:
            code += sum(1 for line in source.splitlines() if line.strip())
        if tags & _HIDDEN_OUTPUT:
            continue
        for out in cell.get("outputs", []):
            if out.get("metadata", {}).get("scrapbook"):
                continue                # a glued value is read where the prose pastes it
            data = out.get("data", {})
            if out.get("output_type") == "stream":
                output += len(_text(out.get("text", "")).rstrip("\n").splitlines())
            elif "image/png" in data or "image/svg+xml" in data:
                figures += 1
            elif "_anim_img" in _text(data.get("text/html", "")):
                figures += 1
            elif "text/markdown" in data:
                shown = _text(data["text/markdown"])
                if re.search(r"^\s*\|?\s*:?-{3,}", shown, flags=re.M):
                    tables += 1
                else:
                    output += len(shown.splitlines())
            elif "text/plain" in data:
                output += len(_text(data["text/plain"]).splitlines())
    return ReadingLoad(prose_words=words(prose(nb)), code_lines=code, output_lines=output,
                       figures=figures, tables=tables, display_equations=equations)


def slowest_pace(reads) -> float:
    """The largest ratio, over cold reads, of a reader's hours to the reading model's hours for
    the book as it stood when they read it (``course_wall_hours`` over
    ``model_wall_hours_at_that_commit``): the factor that makes the model's times hold for the
    slowest reader seen so far."""
    reads = list(reads)
    if not reads:
        raise ValueError("reads is empty: no cold read to calibrate on")
    ratios = []
    for r in reads:
        hours, model = r.get("course_wall_hours"), r.get("model_wall_hours_at_that_commit")
        if not all(isinstance(x, (int, float)) and x > 0 for x in (hours, model)):
            raise ValueError(f"reads: each read needs positive course_wall_hours and "
                             f"model_wall_hours_at_that_commit, got {r!r}")
        ratios.append(hours / model)
    return max(ratios)
