"""README.md, read as a maintainer would: its `make full` table lists the Makefile's commands in
their order, each row's CPU time is what the stored runs recorded (``tests/full_runs.py``), the
rows add up to the stated total, and no table cell runs longer than a few lines. Each check is
shown failing on a planted case."""
import re
from pathlib import Path

import pytest

import full_runs as F

README = (F.ROOT / "README.md").read_text()
MAKEFILE = (F.ROOT / "Makefile").read_text()
MAX_CELL = 300            # characters: three lines of the README's 100-character text
PREFIX = "python -m grpo.experiments."


def tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table in ``text``: its rows (header and separator dropped), split in cells."""
    out = []
    for block in re.findall(r"(?:^\|.*\|\s*$\n?)+", text, re.M):
        lines = block.strip().splitlines()
        out.append([[c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
                    for line in lines[2:]])
    return out


def full_table(text: str) -> list[list[str]]:
    section = text.split("### `make full`", 1)
    if len(section) < 2:
        raise ValueError("README.md has no '### `make full`' section")
    return tables(section[1].split("\n## ", 1)[0])[0]


def first_number(cell: str) -> float:
    return float(re.search(r"\d[\d,]*(?:\.\d+)?", cell).group(0).replace(",", ""))


def full_problems(text: str, makefile: str) -> list[str]:
    """What is wrong with the README's `make full` table against the Makefile and the runs."""
    rows = full_table(text)
    *commands, total = rows
    problems = []
    listed = [PREFIX + re.search(r"`([^`]*)`", r[1]).group(1) for r in commands]
    if listed != F.makefile_commands(makefile):
        problems.append(f"the table lists {listed}, the Makefile runs "
                        f"{F.makefile_commands(makefile)}")
    if listed != [f.command for f in F.FULL]:
        problems.append("tests/full_runs.py's FULL is not the table's list")
        return problems
    minutes = [first_number(r[4]) for r in commands]
    for row, run, m in zip(commands, F.FULL, minutes):
        if m != round(run.cpu_minutes()):
            problems.append(f"{row[1]}: {m:g} CPU-minutes, the stored runs say "
                            f"{round(run.cpu_minutes())}")
        if row[5] != f"`{Path(run.test).name}`" or not (F.ROOT / run.test).exists():
            problems.append(f"{row[1]}: replayed by {row[5]}, not {run.test}")
    numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", total[4])]
    cpu_h, wall_h = F.totals(minutes, [f.workers for f in F.FULL])
    if numbers[:2] != [sum(minutes), round(cpu_h, 1)] or numbers[2] != round(wall_h, 1):
        problems.append(f"the total reads {total[4]}; the rows add up to {sum(minutes):,.0f} "
                        f"CPU-minutes, {cpu_h:.1f} CPU-hours, {wall_h:.1f} hours on {F.CORES} cores")
    return problems


def long_cells(text: str) -> list[str]:
    return [c[:60] + "..." for t in tables(text) for row in t for c in row if len(c) > MAX_CELL]


def test_make_full_table_is_the_makefile_and_the_stored_runs():
    problems = full_problems(README, MAKEFILE)
    assert not problems, "\n".join(problems)
    assert len(F.makefile_commands(MAKEFILE)) == len(F.FULL) >= 10


def test_a_wrong_row_total_or_order_is_caught():
    rows = full_table(README)
    first, second = rows[0][1], rows[1][1]
    swapped = README.replace(first, "@@").replace(second, first).replace("@@", second)
    assert any("the Makefile runs" in p for p in full_problems(swapped, MAKEFILE))
    extra = MAKEFILE.replace("\t$(BIN)/python -m grpo.experiments.ch07_small_lm.sft_run\n",
                             "\t$(BIN)/python -m grpo.experiments.ch07_small_lm.sft_run\n"
                             "\t$(BIN)/python -m grpo.experiments.ch09_addition.grids\n")
    assert any("the Makefile runs" in p for p in full_problems(README, extra))
    total = rows[-1][4]
    wrong = README.replace(total, total.replace(re.search(r"\d[\d,]*", total).group(0), "999"))
    assert any("add up to" in p for p in full_problems(wrong, MAKEFILE))
    row = "| " + " | ".join(rows[2]) + " |"
    drifted = README.replace(row, row.replace(f"| {rows[2][4]} |", "| 7 |"))
    assert any("the stored runs say" in p for p in full_problems(drifted, MAKEFILE))


def test_no_readme_table_cell_runs_longer_than_a_few_lines():
    assert not long_cells(README), long_cells(README)
    assert long_cells("| a | b |\n|---|---|\n| x | " + "y" * (MAX_CELL + 1) + " |\n")


@pytest.mark.parametrize("claim", ["(table below)", "its lab notes are in the appendix"])
def test_the_readme_no_longer_says_what_the_pages_do_not_show(claim):
    assert claim not in README


def test_the_make_test_line_names_the_browser_test_and_its_chromium():
    line = next(x for x in README.splitlines() if x.startswith("make test"))
    assert "browser test" in line
    assert "apt-get" in README.split("## What this is")[0] and "chromium" in README.split("##")[0]
