"""The package's layout holds: imports point down the layers (experiments -> run store -> book
helpers -> library), an experiment imports no other chapter's experiments, and no module imports
another's private name. Each rule is checked on the real package and shown to fail on a planted
violation."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "lib"


def layer(module: str) -> int:
    """0 the library, 1 the book helpers, 2 the run store, 3 the experiments."""
    if module.startswith("grpo.experiments"):
        return 3
    if module == "grpo.runstore" or module.startswith("grpo.runstore."):
        return 2
    if module == "grpo.book" or module.startswith("grpo.book."):
        return 1
    return 0


def chapter(module: str) -> str:
    """An experiment's chapter package, ``grpo.experiments.chNN_name`` ('' outside experiments)."""
    parts = module.split(".")
    return ".".join(parts[:3]) if module.startswith("grpo.experiments.") else ""


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str, is_package: bool):
    """``(imported module, names taken from it, line)`` for every grpo import in ``source``,
    relative ones resolved, function-level ones included; and ``(alias, attribute, line)`` for
    every ``alias._private`` access through an imported grpo module."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    found, aliases, private_attrs = [], {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "grpo" or a.name.startswith("grpo."):
                    found.append((a.name, [], node.lineno))
                    aliases[a.asname or a.name.split(".")[0]] = a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "grpo" or target.startswith("grpo."):
                names = [a.name for a in node.names]
                found.append((target, names, node.lineno))
                for a in node.names:
                    aliases[a.asname or a.name] = f"{target}.{a.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            private_attrs.append((node.value.id, node.attr, node.lineno))
    return found, private_attrs


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """What ``source``, as ``module``, breaks of the layout's rules."""
    out = []
    found, private_attrs = imports(source, module, is_package)
    for target, names, line in found:
        # ``from grpo.x import y`` may name the submodule grpo.x.y
        targets = [target] + [f"{target}.{n}" for n in names]
        mine = layer(module)
        theirs = max(layer(t) for t in targets)
        if theirs > mine:
            out.append(f"{module}:{line} imports {target} from a layer above it")
        for t in targets:
            if mine == 3 and layer(t) == 3 and chapter(t) and chapter(t) != chapter(module):
                out.append(f"{module}:{line} imports another chapter's experiment {t}")
        for n in names:
            if n.startswith("_") and not n.startswith("__") and target != module:
                out.append(f"{module}:{line} imports the private name {target}.{n}")
    for alias, attr, line in private_attrs:
        out.append(f"{module}:{line} uses the private name {alias}.{attr}")
    return out


def modules():
    return sorted(ROOT.joinpath("grpo").rglob("*.py"))


def test_every_module_keeps_the_layout():
    assert modules(), f"no modules under {ROOT / 'grpo'}"
    found = []
    for path in modules():
        found += violations(path.read_text(), module_name(path), path.name == "__init__.py")
    assert not found, "\n".join(found)


def test_the_layers_are_where_the_layout_says():
    names = {module_name(p) for p in modules()}
    assert {"grpo.runstore", "grpo.runstore.grids", "grpo.book.results", "grpo.toy.lava", "grpo.lm.grpo",
            "grpo.lander.trainers"} <= names
    experiments = {n for n in names if layer(n) == 3 and n.count(".") == 3}
    assert len({chapter(n) for n in experiments}) == 7, experiments  # chapters 6 to 12
    for n in names:       # nothing that writes data/runs/ sits in the library
        if layer(n) == 0:
            path = ROOT / Path(*n.split("."))
            path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
            text = path.read_text()
            assert '/ "runs"' not in text and "run_dir(" not in text, \
                f"{n} builds a data/runs path: it is an experiment"


@pytest.mark.parametrize("module, source, rule", [
    ("grpo.lm.rl", "from grpo.experiments.ch10_word_problems import long_runs\n", "layer above"),
    ("grpo.lm.rl", "def f():\n    from grpo.runstore import bits\n", "layer above"),
    ("grpo.lm.rl", "from grpo.book import results\n", "layer above"),
    ("grpo.lm.grpo", "from ..book.plots import COLORS\n", "layer above"),
    ("grpo.book.plots", "import grpo.experiments.ch06_lander.main_runs\n", "layer above"),
    ("grpo.experiments.ch08_grpo_math.main_runs",
     "from grpo.experiments.ch10_word_problems.long_runs import RUNS\n", "another chapter"),
    ("grpo.experiments.ch08_grpo_math.main_runs", "from grpo.lm.rl import _job\n", "private"),
    ("grpo.experiments.ch08_grpo_math.main_runs", "from grpo.lm import rl\nrl._job(1)\n",
     "private"),
])
def test_a_planted_violation_fails(module, source, rule):
    found = violations(source, module)
    assert found and all(rule in v for v in found), found


@pytest.mark.parametrize("module, source", [
    ("grpo.experiments.ch08_grpo_math.main_runs", "from grpo.runstore.models import run_from_sft\n"),
    ("grpo.experiments.ch07_small_lm.answer_only", "from grpo.experiments.ch07_small_lm import sft_run\n"),
    ("grpo.experiments.ch06_lander.main_runs", "from grpo.runstore import write_json\n"),
    ("grpo.book.live", "from grpo.toy import lava\n"),
    ("grpo.lander.env", "from ..objectives import log_softmax\n"),
])
def test_an_import_down_the_layers_passes(module, source):
    assert violations(source, module) == []


# ----------------------------------------------------------------------------- one name, one thing

# The interface each experiment module offers as a producer of stored runs: its command line and
# how its runs are made, stored, read back and replayed. Modules of different chapters may each
# define these (as every script may define ``main``); nothing else may share a name.
PRODUCER_PROTOCOL = {"main", "run", "run_and_store", "store", "load_stored", "load_run",
                     "load_record", "load_study", "run_study", "stored_dir", "stored_path",
                     "replay", "retrain", "outcomes_of", "lift", "cpu_seconds", "train_model"}


def public_names(source: str) -> set[str]:
    """The module-level functions and classes of ``source`` whose names have no leading ``_``."""
    return {n.name for n in ast.parse(source).body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")}


def shared_names(sources: dict[str, str]) -> list[str]:
    """Public names defined by more than one of ``sources`` (module name -> text): any name two
    library modules share, or an experiment shares with the library; and a name two experiments
    share unless it belongs to ``PRODUCER_PROTOCOL``. ``main``, the entry point of every module
    run as ``python -m``, is the one name any module may define."""
    where: dict[str, list[str]] = {}
    for module, source in sources.items():
        for name in public_names(source):
            where.setdefault(name, []).append(module)
    out = []
    for name, mods in sorted(where.items()):
        library = [m for m in mods if layer(m) < 3]
        if len(mods) > 1 and name != "main" and (library or name not in PRODUCER_PROTOCOL):
            out.append(f"{name}: {', '.join(sorted(mods))}")
    return out


def test_no_two_public_functions_share_a_name():
    sources = {module_name(p): p.read_text() for p in modules()}
    assert not shared_names(sources), "\n".join(shared_names(sources))


@pytest.mark.parametrize("sources", [
    {"grpo.toy.algos": "def train_grpo(): pass\n", "grpo.lander.trainers": "def train_grpo(): pass\n"},
    {"grpo.lm.eval": "def evaluate(): pass\n",
     "grpo.experiments.ch11_pretrained.smollm2_runs": "def evaluate(): pass\n"},
    {"grpo.experiments.ch10_word_problems.long_runs": "class Spec: pass\n",
     "grpo.experiments.ch11_pretrained.smollm2_runs": "class Spec: pass\n"},
])
def test_a_planted_shared_name_fails(sources):
    assert len(shared_names(sources)) == 1


def test_experiments_may_share_the_producer_protocol():
    assert shared_names({"grpo.experiments.ch06_lander.main_runs": "def main(): pass\n",
                         "grpo.experiments.ch08_grpo_math.main_runs": "def main(): pass\n"}) == []
