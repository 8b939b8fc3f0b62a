"""What the book's conclusions may say, read from the rendered pages (``grpo.book.prose``: glue
filled in, generated tables included).

**The verb rule.** A word of gain ("lifts", "raised", "improves", "helps", "beats", ...) may stand
beside a 95% interval only where the interval excludes 0; otherwise the page says "moved" or
"could not tell". An interval is a point estimate, an optional unit and ``[lo, hi]`` holding it:
``+1.1 points [-10.3, +12.6]``, ``+1.9 [-0.2, +4.1]``, ``+23.8 points ([+21.0, +26.5], 5 seeds``.
It includes 0 when lo <= 0 <= hi as printed (so ``[-9.8, -0.0]`` touches 0). A word of gain is
*beside* an interval when it comes before it in the same clause (a clause ends at a sentence's
end, a semicolon, a colon, a table cell or a paragraph) with no other interval between them.
It is not a claim of gain when it is
  * a plural noun: after a determiner or a possessive ("the lifts", "its gains", "GRPO's lifts",
    "two lifts") or before a verb of being or "of" ("lifts are", "gains of");
  * negated: "not", "never", "no", "nor", "neither", "without" or "n't" among the three words
    before it;
  * asked: the clause has "whether" or "if" before it, or the sentence ends with "?".

**"What we found"** of chapters 6-12 holds at most five sentences, plus one on
``trl.GRPOConfig``, and at most two intervals.

**The landing page quotes.** Each row of its findings table is a sentence its chapter's page shows
word for word; where the chapter has a "What we found", the row is that section's opening
sentence. So no figure is credited to a page that does not show it.

    python tests/conclusions.py          # every page's findings, and each chapter's size
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from grpo.book import prose

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(ROOT.glob("chapters/*.ipynb")) + sorted(ROOT.glob("book/*.ipynb"))
FOUND_CHAPTERS = ["06", "07", "08", "09", "10", "11", "12"]      # held to the size of "What we found"
MAX_SENTENCES, MAX_INTERVALS = 5, 2

GAIN = ("lifts", "lifted", "raises", "raised", "improves", "improved", "helps", "helped",
        "beats", "beat", "increases", "increased", "boosts", "boosted", "gains", "gained",
        "outperforms", "outperformed", "surpasses", "surpassed", "rises", "rose")
_NUM = r"[-+\u2212]?\d+(?:,\d{3})*(?:\.\d+)?"
INTERVAL = re.compile(rf"({_NUM})\s*(?:%|percentage points?|points?|pp|tokens?)?\s*\(?"
                      rf"\[\s*({_NUM})\s*,\s*({_NUM})\s*\]")
_GAIN = re.compile(r"\b(" + "|".join(GAIN) + r")\b", re.I)
_CLAUSE_END = re.compile(r"[;:|]|(?<=[.!?])\s|\n\s*\n")
_DETERMINERS = {"the", "a", "its", "their", "these", "those", "both", "all", "our", "his", "her",
                "whose", "some", "any", "such", "two", "three", "four", "five", "six", "each",
                "per-seed", "per-start", "which", "what", "and"}
_NOUN_AFTER = {"are", "were", "is", "was", "have", "had", "of", "differ", "agree", "span"}
_NEGATIONS = {"not", "never", "no", "nor", "neither", "without"}


def number(text: str) -> float:
    return float(text.replace("\u2212", "-").replace(",", ""))


@dataclass(frozen=True)
class Interval:
    text: str              # as printed, e.g. "+1.1 points [-10.3, +12.6]"
    lo: float
    hi: float
    start: int             # where it starts in the text it was found in

    @property
    def includes_zero(self) -> bool:
        return self.lo <= 0 <= self.hi


def intervals(text: str) -> list[Interval]:
    """Every printed 95% interval in ``text``: a point estimate inside its own [lo, hi]."""
    text = re.sub(r"\$[^$]*\$", lambda m: " " * len(m.group(0)), text)        # maths is not one
    found = []
    for m in INTERVAL.finditer(text):
        est, lo, hi = number(m.group(1)), number(m.group(2)), number(m.group(3))
        if lo <= est <= hi:
            found.append(Interval(m.group(0), lo, hi, m.start()))
    return found


def _words_before(text: str, end: int, n: int) -> list[str]:
    return re.findall(r"[\w'’-]+", text[:end])[-n:]


def is_claim_of_gain(clause: str, m: re.Match) -> bool:
    """Whether the word of gain ``m`` in ``clause`` claims a gain (see the module docstring)."""
    word = m.group(1).lower()
    before = _words_before(clause, m.start(), 3)
    after = re.findall(r"[\w'’-]+", clause[m.end():])[:1]
    if word.endswith("s") and word not in ("rose",):
        prev = before[-1].lower() if before else ""
        if prev in _DETERMINERS or re.search(r"['’]s?$", prev) or re.fullmatch(r"\d+", prev):
            return False
        if after and after[0].lower() in _NOUN_AFTER:
            return False
    if any(w.lower() in _NEGATIONS or w.lower().endswith("n't") for w in before):
        return False
    if re.search(r"\b(whether|if)\b", clause[:m.start()], re.I):
        return False
    return True


@dataclass(frozen=True)
class Breach:
    word: str
    interval: str
    sentence: str

    def __str__(self):
        return (f"'{self.word}' beside {self.interval}, an interval that includes 0 ('moved' or "
                f"'could not tell'): {self.sentence}")


def gain_beside_zero(text: str) -> list[Breach]:
    """Every word of gain beside an interval that includes 0, in ``text`` (see the docstring)."""
    breaches = []
    for sentence in prose.sentences(text):
        asked = sentence.rstrip("*_)\"'’” ").endswith("?")
        found = intervals(sentence)
        for k, iv in enumerate(found):
            if not iv.includes_zero or asked:
                continue
            ends = [c.end() for c in _CLAUSE_END.finditer(sentence, 0, iv.start)]
            start = max(ends + [found[k - 1].start + len(found[k - 1].text) if k else 0])
            clause = sentence[start:iv.start]
            for m in _GAIN.finditer(clause):
                if is_claim_of_gain(clause, m):
                    breaches.append(Breach(m.group(1), iv.text, sentence))
    return breaches


def page(path: Path) -> str:
    return prose.page_text(json.loads(Path(path).read_text()))


def what_we_found(path: Path) -> str | None:
    return prose.section(page(path), "What we found")


@dataclass(frozen=True)
class Size:
    sentences: list[str]       # counted against MAX_SENTENCES
    trl_line: str | None       # the one sentence on trl.GRPOConfig, not counted
    intervals: list[Interval]  # in the whole section, the TRL line included


def size(section: str) -> Size:
    """The sentences and intervals of a "What we found" section (its "Try this" is not in it)."""
    counted, trl = [], None
    for s in prose.sentences(section):
        if trl is None and "GRPOConfig" in s:
            trl = s
        else:
            counted.append(s)
    return Size(counted, trl, intervals(section))


def size_problems(section: str) -> list[str]:
    s = size(section)
    out = []
    if len(s.sentences) > MAX_SENTENCES:
        out.append(f"{len(s.sentences)} sentences besides the line on trl.GRPOConfig "
                   f"(at most {MAX_SENTENCES})")
    if len(s.intervals) > MAX_INTERVALS:
        out.append(f"{len(s.intervals)} intervals (at most {MAX_INTERVALS}): "
                   + "; ".join(iv.text for iv in s.intervals))
    return out


LANDING = ROOT / "book" / "intro.ipynb"
FINDINGS_HEADER = "| what the book found | shown in |"


def findings_rows(nb: dict) -> list[tuple[str, str]]:
    """(the quoted text, the page it links to, relative to the repository) for every row of the
    landing page's stored findings table."""
    shown = ["".join(o["data"]["text/markdown"]) for c in nb["cells"] for o in c.get("outputs", [])
             if "text/markdown" in o.get("data", {})]
    table = next((t for t in shown if t.lstrip().startswith(FINDINGS_HEADER)), None)
    if table is None:
        raise ValueError("the landing page shows no findings table (its header: "
                         f"{FINDINGS_HEADER!r})")
    rows = []
    for line in table.strip().splitlines()[2:]:
        text, link = re.fullmatch(r"\|\s*(.*?)\s*\|\s*(.*?)\s*\|", line).groups()
        rows.append((text.replace("\\|", "|"), re.search(r"\.\./([^)\s]+)\)", link).group(1)))
    return rows


def quotation_problems(rows: list[tuple[str, str]], root: Path = ROOT) -> list[str]:
    """What is wrong with the landing page's quotations (see the module docstring)."""
    problems = []
    for text, target in rows:
        shown = page(root / target)
        if " ".join(text.split()) not in " ".join(shown.split()):
            problems.append(f"{target} does not show: {text}")
            continue
        found = prose.section(shown, "What we found")
        if found is not None and prose.sentences(found)[0] != text:
            problems.append(f"{target}: the row is not the opening sentence of its 'What we "
                            f"found' ({prose.sentences(found)[0]}): re-execute the landing page")
    return problems


def main() -> int:
    bad = 0
    for path in PAGES:
        name = str(path.relative_to(ROOT))
        for b in gain_beside_zero(page(path)):
            bad += 1
            print(f"{name}: {b}")
        if name.startswith("chapters/") and name[9:11] in FOUND_CHAPTERS:
            section = what_we_found(path)
            for p in (["no 'What we found' section"] if section is None
                      else size_problems(section)):
                bad += 1
                print(f"{name}: What we found: {p}")
    for p in quotation_problems(findings_rows(json.loads(LANDING.read_text()))):
        bad += 1
        print(f"book/intro.ipynb: {p}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
