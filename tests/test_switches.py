"""Every stored-run switch in the book (a code cell that sets ``RETRAIN...``): re-training goes to
scratch/ (``runstore.writable``, a SCRATCH folder, or a lib ``retrain`` that uses it) or writes
nothing, and the cell or the prose just above it states the run's CPU time and memory. The
behaviour itself (bytes under data/runs/ unchanged) is tested per chapter, in tests/test_live_NN.py,
test_stored_jobs.py and test_runstore.py; this test finds a switch that was added without either."""
import json
import re
from pathlib import Path

import pytest

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
                found.append((f"{path.relative_to(ROOT)}:{SWITCH.search(source).group(1)}",
                              source, above))
    return found


SWITCHES = switches()


def test_the_book_has_its_switches():
    names = {name.split(":")[0] for name, _, _ in SWITCHES}
    for n in range(6, 13):
        assert any(name.startswith(f"chapters/{n:02d}_") for name in names), n


@pytest.mark.parametrize("name, source, above", SWITCHES, ids=[s[0] for s in SWITCHES])
def test_a_switch_retrains_into_scratch_and_states_its_cost(name, source, above):
    assert TO_SCRATCH.search(source) or not WRITES.search(source), \
        f"{name}: the switch's cell neither routes to scratch nor is free of writes"
    text = source + above
    assert "CPU" in text, f"{name}: no CPU time stated at the switch"
    assert re.search(r"\b(GB|MB)\b|memory", text), f"{name}: no memory stated at the switch"
