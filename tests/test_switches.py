"""Every stored-run switch in the book (a code cell that sets ``RETRAIN...``): re-training goes to
scratch/ (``runstore.writable``, a SCRATCH folder, or a lib ``retrain`` that uses it) or writes
nothing, the switch is read by the cell's code, and the cell or the prose just above it states the
run's CPU time and memory. The switch, its reading, the routing and the writes are read from the
cell's syntax tree, so a comment or a string that names them does not count; the cost is prose and
may sit in a comment. The behaviour itself (bytes under data/runs/ unchanged) is tested per
chapter, in tests/test_live_NN.py, test_stored_jobs.py and test_runstore.py; this test finds a
switch that was added without either."""
import ast
import json
import re
from pathlib import Path

import pytest
from toc import chapters_with_stored_runs

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(ROOT.glob("chapters/*.ipynb")) + sorted(ROOT.glob("book/*.ipynb"))
SWITCH = re.compile(r"RETRAIN\w*")
ROUTES = {"writable", "retrain"}                  # calls that send a re-training to scratch/
WRITES = re.compile(r"save\w*|write_\w+|to_json|savez\w*|\w*store")   # calls that write a file


def syntax_tree(source: str) -> ast.Module:
    """A cell's code, IPython's magic and shell lines read as ``pass``."""
    try:
        return ast.parse(source)
    except SyntaxError:
        return ast.parse("\n".join(line[:len(line) - len(line.lstrip())] + "pass"
                                   if line.lstrip().startswith(("%", "!")) else line
                                   for line in source.splitlines()))


def switch_names(source: str) -> list[str]:
    """The switches a cell's code sets at its top level (``RETRAIN... = ...``), in order."""
    out = []
    for node in syntax_tree(source).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out += [n.id for t in targets for n in ast.walk(t)
                    if isinstance(n, ast.Name) and SWITCH.fullmatch(n.id)]
    return out


def switch_faults(source: str) -> list[str]:
    """What a switch cell's code does wrong: a switch it sets and never reads, or a write (a call
    named like ``save``, ``write_...``, ``...store``) with nothing that routes to scratch/ (a call
    of ``writable`` or ``retrain``, a ``retrain=`` argument, a SCRATCH name)."""
    tree = syntax_tree(source)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    called = [n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
              for n in ast.walk(tree) if isinstance(n, ast.Call)]
    names = read | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    routes = (any(c in ROUTES for c in called) or any("SCRATCH" in n.upper() for n in names)
              or any(k.arg == "retrain" for k in ast.walk(tree) if isinstance(k, ast.keyword)))
    faults = [f"{s} is set and never read" for s in switch_names(source) if s not in read]
    writes = sorted({c for c in called if WRITES.fullmatch(c)})
    if writes and not routes:
        faults.append(f"it writes ({', '.join(writes)}) and routes nothing to scratch/")
    return faults


def switches():
    found = []
    for path in PAGES:
        cells = json.loads(path.read_text())["cells"]
        for i, cell in enumerate(cells):
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and switch_names(source):
                above = "".join(cells[i - 1]["source"]) if i else ""
                found.append((f"{path.relative_to(ROOT)}:{i}:{switch_names(source)[0]}",
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
    assert not switch_faults(source), f"{name}: {switch_faults(source)}"
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


# Each passes a reading of the cell's text: its words are there, in comments and strings.
@pytest.mark.parametrize("source", [
    "# True re-trains into scratch/ (writable); 2 CPU-minutes, 0.3 GB\nRETRAIN = False\n"
    "if RETRAIN:\n    main_runs.run_and_store(specs, directory=main_runs.stored_dir())\n",
    "RETRAIN = False  # if RETRAIN: writable(...), 2 CPU-minutes, 0.3 GB\nruns = load_stored()\n",
    "RETRAIN = True\nnote = 'retrain=RETRAIN, into SCRATCH'\nif RETRAIN:\n    model.save(path)\n",
], ids=["route-in-a-comment", "switch-never-read", "route-in-a-string"])
def test_a_switch_cell_whose_code_does_not_route_or_read_it_fails(source):
    assert switch_names(source) == ["RETRAIN"]
    assert switch_faults(source)


def test_a_switch_in_a_comment_or_a_string_is_no_switch():
    assert switch_names('# RETRAIN = True re-trains\ndoc = """\nRETRAIN = True\n"""\n') == []
    assert switch_names("%time x = 1\nRETRAIN_MAIN = RETRAIN\n") == ["RETRAIN_MAIN"]


@pytest.mark.parametrize("source", [
    "RETRAIN = False\nSTORE = run_and_store(specs, directory=writable(STORE)) if RETRAIN else STORE\n",
    "RETRAIN = False\nruns = stored.retrain(workers=2) if RETRAIN else stored.RUN_FOLDER\n",
    "RETRAIN_MAP = RETRAIN\nout = stored_jobs('start_map', jobs, retrain=RETRAIN_MAP)\n",
    "RETRAIN = False\nif RETRAIN:\n    MODELS = SCRATCH\n    save(model, MODELS)\n",
    "RETRAIN_NOISE = False\nstudy = run_noise_study(workers=2) if RETRAIN_NOISE else load_study()\n",
])
def test_a_switch_cell_that_routes_or_writes_nothing_passes(source):
    assert switch_faults(source) == []
