"""Every stored-run switch in the book (a code cell that sets ``RETRAIN...``): re-training goes to
scratch/ (``runstore.writable``, a SCRATCH folder, or a lib ``retrain`` that uses it) or writes
nothing, and the cell or the prose just above it states the run's CPU time and memory. The
behaviour itself (bytes under data/runs/ unchanged) is tested per chapter, in tests/test_live_NN.py,
test_stored_jobs.py and test_runstore.py; this test finds a switch that was added without either."""
import json
import re
from pathlib import Path

import pytest
from toc import chapters_with_stored_runs

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(ROOT.glob("chapters/*.ipynb")) + sorted(ROOT.glob("book/*.ipynb"))
SWITCH = re.compile(r"^(RETRAIN\w*)\s*=", re.M)
TO_SCRATCH = re.compile(r"writable|SCRATCH|scratch|\bretrain\b|retrain=")
WRITES = re.compile(r"\b(save|write_\w+|to_json|savez\w*|store)\(")


def switches():
    found = []
    for path in PAGES:
        cells = json.loads(path.read_text())["cells"]
        for i, cell in enumerate(cells):
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and SWITCH.search(source):
                above = "".join(cells[i - 1]["source"]) if i else ""
                found.append((f"{path.relative_to(ROOT)}:{i}:{SWITCH.search(source).group(1)}",
                              source, above))
    return found


SWITCHES = switches()
# A cost is a number with its unit ("21 CPU-minutes", "0.5 GB"), a value glued from the stored
# runs or the benches ({eval}`glue["sft_cpu_min"]` CPU-minutes), or chapter 9's sentence printed
# from make bench's estimate (grids.retrain_cost, which names CPU-minutes); a comment may wrap.
CPU_COST = re.compile(r"(\d[\d,.]*|\{eval\}`[^`]*`)\s*(-\s*)?CPU[- ]?(seconds|minutes|hours|s|min|h)\b"
                      r"|\bprint\([^\n]*retrain_cost\(")
MEMORY_COST = re.compile(r"(\d[\d,.]*|\{eval\}`[^`]*`)\s*(GB|MB)\b")
# Switches that name their cost without a number: the pages are rewritten in main (issue 62 lists
# the edit); each fails here once it states its cost, and then leaves this list.
VAGUE: dict[str, str] = {}


def stated_cost(text: str) -> tuple[bool, bool]:
    """Whether ``text`` (a switch's cell and the prose above it) states a CPU time and a memory
    peak as numbers."""
    text = re.sub(r"\n\s*#\s*", " ", text)                 # a comment wrapped onto its next line
    return bool(CPU_COST.search(text)), bool(MEMORY_COST.search(text))


def _param(switch):
    name, source, above = switch
    page, _, var = name.split(":")
    vague = VAGUE.get(f"{page}:{var}") if not all(stated_cost(source + above)) else None
    marks = [pytest.mark.xfail(strict=True, reason=f"states no {vague}")] if vague else []
    return pytest.param(name, source, above, marks=marks, id=name)


def test_the_book_has_its_switches():
    names = {name.split(":")[0] for name, _, _ in SWITCHES}
    for n in chapters_with_stored_runs():                   # from _toc.yml (tests/toc.py)
        assert any(name.startswith(f"chapters/{n:02d}_") for name in names), n


@pytest.mark.parametrize("name, source, above", [_param(s) for s in SWITCHES])
def test_a_switch_retrains_into_scratch_and_states_its_cost(name, source, above):
    assert TO_SCRATCH.search(source) or not WRITES.search(source), \
        f"{name}: the switch's cell neither routes to scratch nor is free of writes"
    cpu, memory = stated_cost(source + above)
    assert cpu, f"{name}: no CPU time (a number and its unit) stated at the switch"
    assert memory, f"{name}: no memory peak (a number and GB or MB) stated at the switch"


@pytest.mark.parametrize("text, cpu, memory", [
    ("# RETRAIN = True re-runs it (CPU time as stored)\n", False, False),   # the word alone
    ("# about the memory this page peaks at; 21 CPU-minutes\n", True, False),
    ("# about 7\n# CPU-minutes; peak under 1 GB\n", True, True),        # wrapped in a comment
    ('takes {eval}`glue["sft_cpu_min"]` CPU-minutes and {eval}`glue["gb"]` GB', True, True),
    ('print(Gd.retrain_cost("lr_sweep"))  # peak under 1 GB\n', True, True),
    ('cost = Gd.retrain_cost("lr_sweep")  # computed, never shown\n', False, False),
])
def test_a_cost_is_a_number_with_its_unit(text, cpu, memory):
    assert stated_cost(text) == (cpu, memory)
