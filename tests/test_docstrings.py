"""Every docstring points to code that runs: each dotted ``grpo.…`` name the package's sources and
the README mention (an entry point, a function, a constant) is one that imports. A deleted entry
point left in a docstring (``grpo.runstore.models.run_lm_configs``) fails here, as a planted
case shows."""
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOTTED = re.compile(r"(?<![/\w.])grpo(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?!\w*/)")   # not a path
TEMPLATES = {"grpo.experiments.chNN_name.module"}      # a pattern the layout describes, not a name


def resolves(name: str) -> bool:
    """Whether ``name`` is a module, or an attribute reached from the longest module prefix."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def dangling(text: str) -> list[str]:
    names = {m.rstrip(".") for m in DOTTED.findall(text)} - TEMPLATES
    return sorted(n for n in names if not n.endswith(".py") and not resolves(n))


def test_every_grpo_name_the_sources_and_readme_mention_resolves():
    found = []
    for path in [*sorted((REPO / "lib" / "grpo").rglob("*.py")), REPO / "README.md"]:
        found += [f"{path.relative_to(REPO)}: {n}" for n in dangling(path.read_text())]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("text", ["Runs are ``grpo.runstore.models.run_lm_configs``.",
                                  "see grpo.lm.rl.train_grpo", "grpo.lm.nothing_here"])
def test_a_planted_dangling_name_fails(text):
    assert dangling(text)


def test_names_that_run_pass():
    assert dangling("``grpo.lm.rl.train_lm_grpo`` and grpo.runstore.models.run_from_sft, "
                    "grpo.lm.hf, grpo.experiments.chNN_name.module, lib/grpo/lm/grpo.py.") == []
