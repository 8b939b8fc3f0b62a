"""The code the chapters print reads at a glance: every trainer a page shows with ``show_source``
(``train_*``: the toy's, the lander's, the small LM's, the Hugging Face loop) fits in 40 lines and
20 local names, as chapter 6's GRPO does, with its extras attached from outside; the sampler
chapter 7 shows is the plain one, about nanoGPT's ``generate``'s length."""
import ast
import importlib
import importlib.util
import inspect
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_LINES, MAX_LOCALS = 40, 20
SAMPLER_LINES = 25


def printed_names() -> dict[str, list[str]]:
    """Every name a page passes to ``show_source`` (its last dotted part), with the pages."""
    found = {}
    for path in sorted([*REPO.glob("chapters/*.ipynb"), *REPO.glob("book/*.ipynb")]):
        cells = json.loads(path.read_text())["cells"]
        for c in cells:
            if c["cell_type"] == "code":
                for name in re.findall(r"show_source\(([\w.]+)\)", "".join(c["source"])):
                    found.setdefault(name.split(".")[-1], []).append(path.name)
    return found


def home(name: str):
    """The lib function or class ``name`` (one public name, one module: tests/test_layout.py)."""
    for path in sorted((REPO / "lib" / "grpo").rglob("*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name for n in tree.body):
            parts = path.relative_to(REPO / "lib").with_suffix("").parts
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            return getattr(importlib.import_module(module), name)
    raise LookupError(f"no lib module defines {name}")


def size(fn) -> tuple[int, int]:
    """(source lines, local names: arguments and variables, closures' cells included)."""
    code = fn.__code__
    lines = len(inspect.getsource(fn).rstrip().splitlines())
    return lines, len(set(code.co_varnames) | set(code.co_cellvars))


TRAINERS = sorted(n for n in printed_names() if n.startswith("train"))


def test_the_pages_print_their_trainers():
    assert {"train_reinforce", "train_ppo", "train_actor_critic", "train_lander_grpo", "train_lm_grpo",
            "train_hf_grpo"} <= set(TRAINERS), TRAINERS


@pytest.mark.parametrize("name", TRAINERS)
def test_a_printed_trainer_reads_at_a_glance(name):
    lines, names = size(home(name))
    assert lines <= MAX_LINES and names <= MAX_LOCALS, \
        f"{name} (printed in {printed_names()[name]}): {lines} lines, {names} locals; at most " \
        f"{MAX_LINES} and {MAX_LOCALS}: attach its extras from outside, as train_lander_grpo's GRPOControls"


def test_chapter_7_prints_the_plain_sampler():
    printed = printed_names()
    assert "07_small_lm.ipynb" in printed.get("sample_plain", []), "chapter 7 should show sample_plain"
    assert "sample" not in printed                    # the fast path is tested equal, not shown
    assert size(home("sample_plain"))[0] <= SAMPLER_LINES


def test_a_planted_long_trainer_fails(tmp_path):
    many = "\n".join(f"    x{i} = {i}" for i in range(MAX_LOCALS + 1))
    long = "\n".join("    pass" for _ in range(MAX_LINES))
    (tmp_path / "planted.py").write_text(f"def train_many():\n{many}\n\n\ndef train_long():\n{long}\n")
    spec = importlib.util.spec_from_file_location("planted", tmp_path / "planted.py")
    planted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(planted)
    assert size(planted.train_many)[1] > MAX_LOCALS and size(planted.train_long)[0] > MAX_LINES
    assert size(home("train_lander_grpo"))[0] <= MAX_LINES
    with pytest.raises(LookupError):
        home("train_nothing")
