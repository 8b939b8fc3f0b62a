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
"""
from __future__ import annotations

import json
import re
from pathlib import Path

_GLUE = re.compile(r"\{glue(?::(?:text|any|md))?\}`([^`:]+)(?::([^`]*))?`"
                   r"""|\{eval\}`\s*glue\[\s*["']([^"']+)["']\s*\]\s*`""")
_ROLE_TARGET = re.compile(r"\{(?!glue)[\w:-]+\}`([^`]*)`")
_LINK = re.compile(r"\]\(([^)]*)\)")
_NUMBER = re.compile(r"(?<![\w.])[-+−]?\d+(?:,\d{3})*(?:\.\d+)?([kMB](?![A-Za-z]))?")
_NAME = re.compile(r"\b(?=[\w-]*\d)[A-Za-z_][\w]*(?:-[\w]+)*\b")
_SCALE = {"k": 1e3, "M": 1e6, "B": 1e9}
_SCI = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[-+−]?\d+\b")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")


def glued_values(nb: dict) -> dict[str, object]:
    """``{name: value}`` for every value the notebook glued (the last one, if glued twice)."""
    values = {}
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is None:
                continue
            data = out.get("data", {})
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


def prose(nb: dict) -> str:
    """The markdown cells' text as a reader sees it (see the module docstring)."""
    values = glued_values(nb)
    parts = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
        text = re.sub(r"^(```|~~~)(?!\{).*?^\1\s*$", " ", text, flags=re.S | re.M)  # code
        text = re.sub(r"^(```|~~~|:::)\{[^}]*\}.*$|^:[\w-]+:.*$|^(```|~~~|:::)\s*$", " ", text,
                      flags=re.M)               # a directive's fences and options: its body stays
        text = re.sub(r"^\([\w-]+\)=\s*$", " ", text, flags=re.M)
        text = _GLUE.sub(lambda m: _fill(m, values), text)
        text = _ROLE_TARGET.sub(lambda m: re.sub(r"<[^>]*>", "", m.group(1))
                                if "<" in m.group(1) else " ", text)
        text = _LINK.sub("]", text)
        parts.append(text)
    return "\n".join(parts)


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
