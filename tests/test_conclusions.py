"""Conclusions a student can repeat (``tests/conclusions.py`` says what each rule reads): no word
of gain beside an interval that includes 0 on any rendered page, and chapters 6-12 each
close on a short "What we found". The rules are shown to fail on planted cases first."""
import json

import pytest

import conclusions as C
from grpo.book import prose


def _nb(markdown, glued=None, displayed=None):
    cells = [{"cell_type": "markdown", "source": markdown, "metadata": {}}]
    for name, value in (glued or {}).items():
        cells.append({"cell_type": "code", "source": "", "metadata": {}, "outputs": [{
            "output_type": "display_data", "metadata": {"scrapbook": {"name": name}},
            "data": {"text/plain": repr(value)}}]})
    if displayed:
        cells.append({"cell_type": "code", "source": "", "metadata": {}, "outputs": [{
            "output_type": "execute_result", "metadata": {}, "execution_count": 1,
            "data": {"text/markdown": displayed, "text/plain": "<Markdown>"}}]})
    return {"cells": cells}


BREACHES = [
    "GRPO on that model lifts held-out accuracy by +1.1 points [-10.3, +12.6].",
    "From the annealed start, GRPO lifts +1.9 points [-0.2, +4.1]: neither interval excludes 0.",
    "The strict reward improved accuracy (+0.6 points [-16.3, +17.4], two seeds).",
    "It helped a little, +0.5 [−1.2, +2.3], on the held-out problems.",
    "Refilling the batch raised accuracy +0.5 points ([-0.5, +1.4], 3 seeds).",
    "Dr. GRPO beats the default by +1.4 points [-11.0, +13.9]; the KL grew.",
    "The aggregation gained -4.9 points [-9.8, -0.0] over the start.",           # touches 0
    "| GRPO lifts accuracy by +1.1 points [-10.3, +12.6] | chapter 8 |",          # a table row
]
FINE = [
    "GRPO lifts held-out accuracy by +23.8 points [+21.0, +26.5].",               # excludes 0
    "GRPO moved held-out accuracy by +1.1 points [-10.3, +12.6].",                # "moved"
    "The greedy lifts are -0.7 points [-1.6, +0.1] and -2.2 points [-3.5, -1.1].",  # a noun
    "Its lifts, +0.7 points [-2.2, +3.6], are within noise.",                     # a noun
    "Still open: whether the verifier's signal helps (+0.5 points [-1.2, +2.3]).",  # a question
    "Does the strict reward help, at +0.6 points [-16.3, +17.4]?",                # a question
    "Does it beat the start by +0.6 points [-16.3, +17.4]?",                      # a question
    "GRPO did not lift accuracy: +1.1 points [-10.3, +12.6].",                    # negated
    "SFT lifts as much: GRPO minus it is +0.8 [-0.5, +2.2].",                     # another clause
    "GRPO lifts +23.8 points [+21.0, +26.5] and the random reward moved +0.8 [-0.5, +2.2].",
    "PPO's ratio falls to 0.01 [-0.30, 0.31] at 500k as its policy improves.",    # after it
    "Rewards lie in $[0, 1]$ and a lift of 0 raises nothing.",                    # no interval
]


@pytest.mark.parametrize("text", BREACHES)
def test_a_word_of_gain_beside_an_interval_that_includes_0_is_caught(text):
    found = C.gain_beside_zero(text)
    assert len(found) == 1, found
    assert found[0].word.lower() in C.GAIN


@pytest.mark.parametrize("text", FINE)
def test_moved_nouns_questions_and_intervals_that_exclude_0_pass(text):
    assert C.gain_beside_zero(text) == []


def test_the_rule_reads_glued_values_and_generated_tables():
    nb = _nb("GRPO lifts accuracy by {glue:text}`lift`.", {"lift": "+1.1 points [-10.3, +12.6]"},
             displayed="| finding |\n|---|\n| SFT raised it +0.8 [-0.5, +2.2] |")
    found = C.gain_beside_zero(prose.page_text(nb))
    assert [b.word for b in found] == ["lifts", "raised"]
    assert C.gain_beside_zero(prose.prose(nb)) and "raised" not in prose.prose(nb)


def test_intervals_are_estimates_inside_their_brackets():
    got = C.intervals("+23.8 points ([+21.0, +26.5], 5 seeds) and +0.8 [-0.5, +2.2]; "
                      "lr in [1e-6, 1e-2], rewards in $[0, 1]$, 3 [4, 5]")
    assert [(iv.lo, iv.hi, iv.includes_zero) for iv in got] == [(21.0, 26.5, False),
                                                                (-0.5, 2.2, True)]


@pytest.mark.parametrize("path", C.PAGES, ids=lambda p: p.name)
def test_no_page_claims_a_gain_its_interval_does_not_show(path):
    found = C.gain_beside_zero(C.page(path))
    assert not found, f"{path.name}:\n" + "\n".join(f"- {b}" for b in found)


FOUND = [p for p in C.PAGES if p.parent.name == "chapters" and p.name[:2] in C.FOUND_CHAPTERS]


def test_the_size_rule_counts_sentences_the_trl_line_and_intervals():
    text = ("## What we found\n\nOne lifts +2.0 [+1.0, +3.0]. Two moved +0.1 [-1.0, +1.2]. "
            "Three, e.g. a third, +5.0 [+4.0, +6.0]. Four. Five.\n\n**For `trl.GRPOConfig`:** "
            "set `beta=0.0`.\n\n## Try this\n\n- Six. Seven.")
    section = prose.section(text, "What we found")
    assert "Six" not in section
    s = C.size(section)
    assert len(s.sentences) == 5 and s.trl_line.startswith("**For `trl.GRPOConfig`")
    assert C.size_problems(section) == [f"3 intervals (at most {C.MAX_INTERVALS}): "
                                        "+2.0 [+1.0, +3.0]; +0.1 [-1.0, +1.2]; +5.0 [+4.0, +6.0]"]
    assert C.size_problems(section.replace("Five.", "Five. Six.").replace(
        " Three, e.g. a third, +5.0 [+4.0, +6.0].", " Three.")) == [
        f"6 sentences besides the line on trl.GRPOConfig (at most {C.MAX_SENTENCES})"]


def test_chapters_6_to_12_are_held_to_the_size():
    assert [p.name[:2] for p in FOUND] == C.FOUND_CHAPTERS


@pytest.mark.parametrize("path", FOUND, ids=lambda p: p.name[:2])
def test_what_we_found_is_five_sentences_and_two_intervals(path):
    section = C.what_we_found(path)
    assert section is not None, f"{path.name} has no 'What we found'"
    problems = C.size_problems(section)
    assert not problems, f"{path.name}, What we found: " + "; ".join(problems)


def test_sentences_split_where_a_reader_would():
    text = ("# Title\n\nDr. GRPO, e.g. its constant, moved it 0.5 points. It is *one* seed (lab "
            "notes). **For `trl.GRPOConfig`:** set it.\nStill one sentence, `x.y` included?\n"
            "- A bullet. Another.\n| a | b |\n|---|---|\n| 1.5 | row |")
    assert prose.sentences(text) == [
        "Dr. GRPO, e.g. its constant, moved it 0.5 points.", "It is *one* seed (lab notes).",
        "**For `trl.GRPOConfig`:** set it.", "Still one sentence, `x.y` included?",
        "A bullet.", "Another.", "| a | b |", "| 1.5 | row |"]


def test_page_text_keeps_terms_and_link_text_and_drops_targets():
    nb = _nb("The {term}`gradient signal-to-noise ratio <Gradient SNR>` and {term}`RLOO`, "
             "see {doc}`the notes <../book/lab_06_lander>` and [chapter 9](09.ipynb) "
             "{cite}`shao2024deepseekmath`.")
    assert " ".join(prose.page_text(nb).split()) == (
        "The gradient signal-to-noise ratio and RLOO, see the notes and chapter 9 .")


def test_section_needs_a_heading_and_stops_at_the_next_of_its_level():
    text = "## A\none\n### A.1\ntwo\n## B\nthree"
    assert prose.section(text, "a") == "\none\n### A.1\ntwo\n"
    assert prose.section(text, "C") is None
    with pytest.raises(ValueError, match="heading"):
        prose.section(text, "")


def test_the_landing_page_quotes_each_chapter():
    rows = C.findings_rows(json.loads(C.LANDING.read_text()))
    assert len(rows) >= 8 and all(t.startswith("chapters/") for _, t in rows)
    problems = C.quotation_problems(rows)
    assert not problems, "\n".join(problems)


def test_a_figure_credited_to_a_page_that_does_not_show_it_is_caught():
    rows = C.findings_rows(json.loads(C.LANDING.read_text()))
    target = dict((t, x) for x, t in rows)
    ch11, ch12 = (next(t for t in target if t.startswith(f"chapters/{n}_")) for n in (11, 12))
    planted = [
        # chapter 11's lab notes show -49.6, chapter 11 does not
        ("SFT for the same CPU beat GRPO: GRPO minus it -49.6 points [-65.7, -33.5].", ch11),
        # a sentence of chapter 12's, credited to chapter 11
        (target[ch12], ch11),
        # on the page, but not the opening sentence of its "What we found"
        (C.prose.sentences(C.what_we_found(C.ROOT / ch12))[1], ch12),
    ]
    problems = C.quotation_problems(planted)
    assert len(problems) == 3
    assert "does not show" in problems[0] and "does not show" in problems[1]
    assert "opening sentence" in problems[2]


def glossary_terms(text: str) -> set[str]:
    """The terms a MyST ``{glossary}`` block defines: its unindented lines (lower case, as Sphinx
    matches a {term} role)."""
    block = text.split("```{glossary}", 1)[1].split("\n```", 1)[0]
    return {line.strip().lower() for line in block.splitlines()
            if line.strip() and not line.startswith((" ", "\t", ":"))}


def test_the_glossary_defines_the_words_the_chapters_use_first():
    terms = glossary_terms((C.ROOT / "book" / "glossary.md").read_text())
    needed = {"gradient signal-to-noise ratio", "rloo", "maj@k", "pass@k", "0/1 advantages",
              "expert iteration", "dr. grpo", "dapo", "gspo", "sharpening", "process supervision",
              "argmax policy", "greedy accuracy", "reuse", "unit of an interval", "token budget"}
    assert needed <= terms, sorted(needed - terms)
    assert "rloo" not in glossary_terms("```{glossary}\nRLO\n  x\n```")
