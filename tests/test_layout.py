"""The package's layout holds: imports point down the layers (experiments -> run store -> book
helpers -> library), an experiment imports no other chapter's experiments, no module imports
another's private name, and inside the library the house rules hold (the games know no learner,
the model knows no trainer or task, the lander and the language model share only the core). Every
public name has one home, the one module it is imported from (the lib, the tests, the benches and
the chapters' code cells alike). Each rule is checked on the real package and shown to fail on a
planted violation."""
import ast
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "lib"


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


DOMAINS = ("toy", "lander", "lm")               # the library's three subjects; the rest is the core
ENVIRONMENTS = {"grpo.toy.lava", "grpo.lander.env"}   # the games: they know no learner
MODEL_ONLY = {"grpo.lm.model", "grpo.lm.tokenizer"}   # the model: it knows no trainer and no task


def domain(module: str) -> str:
    """A library module's subject (``toy``, ``lander``, ``lm``), or '' for the core."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in DOMAINS else ""


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str, is_package: bool):
    """``(imported module, names taken from it, line)`` for every grpo import in ``source``,
    relative ones resolved, function-level ones and ``importlib.import_module("grpo...")`` included;
    and ``(dotted path, attribute, line)`` for every private attribute reached through an imported
    grpo name (``rl._job``, ``grpo.lm.eval._private``)."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    found, aliases, private_attrs = [], {}, []
    for node in ast.walk(tree):
        dynamic = _imported_by_call(node)
        if dynamic:
            found.append((dynamic, [], node.lineno))
        elif isinstance(node, ast.Import):
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
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            path = dotted(node.value)
            if path and path.split(".")[0] in aliases:
                private_attrs.append((path, node.attr, node.lineno))
    return found, private_attrs


def dotted(node) -> str:
    """``a.b.c`` for a chain of attributes on a name, else ''."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def _imported_by_call(node) -> str:
    """The grpo module an ``importlib.import_module(...)`` or ``__import__(...)`` call names (its
    constant prefix when the name is built: ``f"grpo.experiments.{x}"`` is grpo.experiments)."""
    if not (isinstance(node, ast.Call) and node.args
            and (dotted(node.func) in ("importlib.import_module", "import_module", "__import__"))):
        return ""
    arg = node.args[0]
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        arg = arg.values[0]
    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
        return ""
    name = arg.value.rstrip(".")
    return name if name == "grpo" or name.startswith("grpo.") else ""


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
        if mine == 0 and theirs == 0:
            out += library_rules(module, targets, line)
    for path, attr, line in private_attrs:
        out.append(f"{module}:{line} uses the private name {path}.{attr}")
    return out


def library_rules(module: str, targets: list[str], line: int) -> list[str]:
    """The house rules inside the library (``DESIGN.md``) that one import can break."""
    out = []
    for t in targets:
        if t == module or not domain(t):
            continue
        if module in ENVIRONMENTS:
            out.append(f"{module}:{line} imports {t}: a game knows no learner (only the core)")
        elif module in MODEL_ONLY:
            out.append(f"{module}:{line} imports {t}: the model knows no trainer and no task")
        elif domain(module) != domain(t):
            out.append(f"{module}:{line} imports {t}: the {domain(module) or 'core'} and the "
                       f"{domain(t)} share only the core")
    return list(dict.fromkeys(out))


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
    assert {"grpo.runstore", "grpo.runstore.addition_jobs", "grpo.book.results", "grpo.toy.lava",
            "grpo.lm.grpo", "grpo.lander.trainers"} <= names
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
    ("grpo.experiments.ch08_grpo_math.main_runs", "import grpo.lm.eval\ngrpo.lm.eval._private()\n",
     "private"),
    ("grpo.lm.rl", "import importlib\nimportlib.import_module('grpo.experiments.ch10_word_problems')\n",
     "layer above"),
    ("grpo.lm.rl", "from importlib import import_module\nimport_module(f'grpo.experiments.{x}')\n",
     "layer above"),
    ("grpo.lander.trainers", "from grpo.lm.rl import GroupDraws\n", "share only the core"),
    ("grpo.lander.trainers", "from grpo.lm import rl\n", "share only the core"),
    ("grpo.lm.rl", "from ..lander import env\n", "share only the core"),
    ("grpo.toy.algos", "def f():\n    from grpo.lm.model import GPT\n", "share only the core"),
    ("grpo.lm.model", "from grpo.lm.rl import train_lm_grpo\n", "no trainer and no task"),
    ("grpo.lm.model", "from .data import PROTOCOL\n", "no trainer and no task"),
    ("grpo.lm.tokenizer", "from grpo.lm import train\n", "no trainer and no task"),
    ("grpo.toy.lava", "from grpo.toy.algos import train_grpo\n", "knows no learner"),
    ("grpo.toy.lava", "from . import algos\n", "knows no learner"),
    ("grpo.lander.env", "from .trainers import train\n", "knows no learner"),
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
    ("grpo.lander.trainers", "from .env import make_envs\nfrom grpo.mlp import Adam\n"),
    ("grpo.lm.rl", "from .model import sample\nfrom grpo.seeding import seeded_generator\n"),
    ("grpo.lm.model", "from grpo.files import write_atomically\n"),
    ("grpo.lm.rl", "import importlib\nimportlib.import_module('torch')\n"),
    ("grpo.lm.rl", "import grpo.lm.eval\ngrpo.lm.eval.outcomes()\n"),
])
def test_an_import_down_the_layers_passes(module, source):
    assert violations(source, module) == []


# ----------------------------------------------------------------------------- no command line, no global
# random state, one clock

GLOBAL_SEEDS = {"torch.manual_seed", "torch.random.manual_seed", "torch.seed", "random.seed",
                "np.random.seed", "numpy.random.seed", "torch.cuda.manual_seed_all"}
WALL_CLOCKS = {"time.time", "time.perf_counter", "time.monotonic", "perf_counter", "monotonic"}


def house_rules(source: str, module: str) -> list[str]:
    """What ``source``, as ``module``, breaks of the rules a name check sees: the library (layer
    0) has no command line (no ``main``, ``argparse`` or ``SystemExit``) and no global random state
    (it never seeds a global generator); no module of the package times with a wall clock (a
    timing means CPU seconds: ``runstore.cpu_timed``, or ``time.process_time`` inside a loop)."""
    out, tree = [], ast.parse(source)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call) and dotted(node.func) in GLOBAL_SEEDS and layer(module) == 0:
            out.append(f"{module}:{line} seeds a global generator ({dotted(node.func)}): pass a "
                       "generator in (grpo.seeding.seeded_generator)")
        if isinstance(node, ast.Call) and dotted(node.func) in WALL_CLOCKS:
            out.append(f"{module}:{line} times with a wall clock ({dotted(node.func)}): CPU "
                       "seconds, through runstore.cpu_timed")
        if layer(module) == 0 and (
                (isinstance(node, ast.FunctionDef) and node.name == "main" and node in tree.body)
                or (isinstance(node, ast.Name) and node.id == "SystemExit")
                or (isinstance(node, (ast.Import, ast.ImportFrom))
                    and "argparse" in {a.name for a in node.names} | {node.__dict__.get("module")})):
            out.append(f"{module}:{line} is a command line: it belongs in grpo.experiments")
    return out


def test_the_library_has_no_command_line_no_global_seed_and_one_clock():
    found = []
    for path in modules():
        found += house_rules(path.read_text(), module_name(path))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("module, source", [
    ("grpo.lm.rl", "import torch\ndef f(cfg):\n    torch.manual_seed(cfg.seed)\n"),
    ("grpo.lm.addition", "import torch\ntorch.random.manual_seed(0)\n"),
    ("grpo.toy.lava", "import numpy as np\nnp.random.seed(0)\n"),
    ("grpo.lm.hf", "def main(argv=None):\n    pass\n"),
    ("grpo.lm.hf", "def f(e):\n    raise SystemExit(f'error: {e}')\n"),
    ("grpo.lander.trainers", "import argparse\n"),
    ("grpo.lm.hf", "import time\nt0 = time.perf_counter()\n"),
    ("grpo.experiments.ch06_lander.gradient_noise", "import time\nt0 = time.time()\n"),
])
def test_a_planted_house_rule_breach_fails(module, source):
    assert len(house_rules(source, module)) == 1


def test_the_house_rules_pass_what_they_allow():
    assert house_rules("import torch\ng = torch.Generator().manual_seed(0)\n", "grpo.lm.rl") == []
    assert house_rules("import time\nt = time.process_time()\n", "grpo.lm.rl") == []
    assert house_rules("import argparse\ndef main(argv=None):\n    raise SystemExit(1)\n",
                       "grpo.experiments.hf_cli") == []
    assert house_rules("import torch\ntorch.manual_seed(0)\n", "grpo.runstore.addition_jobs") == []


# ----------------------------------------------------------------------------- one name, one thing

# The interface an experiment module offers as a producer of stored runs: its command line and how
# its runs are made, stored, read back and replayed. Any experiment module may define these names,
# each with the one signature given here (its parameters, in order; defaults are the module's own);
# every other public name is defined once in the whole package.
PRODUCER_PROTOCOL = {
    "main": ("argv",),                                    # the command line (python -m ...)
    "stored_dir": (),                                     # the folder its stored runs live in
    "stored_path": (),                                    # or the one file its study lives in
    "run_and_store": ("runs", "workers", "directory"),    # run specs or registry names, store them
    "store": ("results", "runs", "cpu_s", "directory"),   # store runs made elsewhere
    "load_stored": ("runs", "directory"),                 # read them back (they must be these runs)
    "cpu_seconds": ("directory",),                        # each stored run's CPU seconds
    "train_model": ("cfg", "models_dir"),                 # chapter 7's one-run producers: train,
    "train_and_store": ("cfg", "models_dir", "directory"),  # and store,
    "load_record": ("cfg", "directory"),                  # and read the record back
    "load_study": ("path",),                              # a stored study, as it was written
    "run": ("name", "directory"),                         # a registry's long runs: one run,
    "load_run": ("name", "directory"),                    # read back from a folder,
    "replay": ("name", "n"),                              # its first n rows (stored, now),
    "retrain": ("names", "workers", "again"),             # the RETRAIN switch: -> the folder,
    "retrain_dir": (),                                    # which is this one (under scratch/),
    "outcomes_of": ("name", "key", "part", "directory"),  # per-problem outcomes,
    "lift": ("names", "against", "key", "part", "directory"),  # paired lift over another run
    # a design's readers (chapter 11's two designs): an arm's runs, the prompts' selection scores,
    # the endpoints the design named, each read from the stored runs or a re-trained folder
    "arm_runs": ("arm",),
    "selection_scores": ("directory",),
    "endpoints": ("directory",),
}


def public_names(source: str) -> set[str]:
    """The public names ``source`` offers at module level: its functions and classes, a function
    bound by assignment (a lower-case name, ``stored_jobs = partial(...)``), and any imported name
    it lists in ``__all__`` (a re-export). Names with a leading ``_`` are private."""
    tree = ast.parse(source)
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    imported, listed = set(), set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if "__all__" in targets and isinstance(node.value, (ast.List, ast.Tuple)):
                listed |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
            names |= {t for t in targets if t.islower()}
        elif isinstance(node, ast.ImportFrom):
            imported |= {a.asname or a.name for a in node.names}
    return {n for n in names | (imported & listed) if not n.startswith("_")}


def signature(source: str, name: str) -> tuple[str, ...] | None:
    """The parameter names of ``source``'s module-level function ``name``, in order (``*args`` and
    ``**kwargs`` marked), or None when it has none."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            a = node.args
            return tuple([p.arg for p in a.posonlyargs + a.args]
                         + ([f"*{a.vararg.arg}"] if a.vararg else [])
                         + [p.arg for p in a.kwonlyargs]
                         + ([f"**{a.kwarg.arg}"] if a.kwarg else []))
    return None


def shared_names(sources: dict[str, str]) -> list[str]:
    """Public names defined by more than one of ``sources`` (module name -> text): any name two
    library modules share, or an experiment shares with the library; and a name two experiments
    share unless it belongs to ``PRODUCER_PROTOCOL``. ``main``, the entry point of a module run as
    ``python -m``, any module above the library may define (``grpo.book.machine`` too)."""
    where: dict[str, list[str]] = {}
    for module, source in sources.items():
        for name in public_names(source):
            where.setdefault(name, []).append(module)
    out = []
    for name, mods in sorted(where.items()):
        library = [m for m in mods if layer(m) < (1 if name == "main" else 3)]
        if len(mods) > 1 and (library or name not in PRODUCER_PROTOCOL):
            out.append(f"{name}: {', '.join(sorted(mods))}")
    return out


def protocol_breaches(sources: dict[str, str]) -> list[str]:
    """Every experiment module's definition of a ``PRODUCER_PROTOCOL`` name whose parameters are
    not the protocol's."""
    out = []
    for module, source in sorted(sources.items()):
        if layer(module) == 3:
            for name, want in PRODUCER_PROTOCOL.items():
                got = signature(source, name)
                if got is not None and got != want:
                    out.append(f"{module}.{name}{got}: the protocol's is {name}{want}")
    return out


def package_sources(skip: str = "") -> dict[str, str]:
    return {module_name(p): p.read_text() for p in modules()
            if not (skip and module_name(p).startswith(skip))}


def test_no_two_public_functions_share_a_name():
    found = shared_names(package_sources())
    assert not found, "\n".join(found)


def test_every_producer_keeps_the_protocol():
    found = protocol_breaches(package_sources())
    assert not found, "\n".join(found)


@pytest.mark.parametrize("sources", [
    {"grpo.toy.algos": "def train_grpo(): pass\n", "grpo.lander.trainers": "def train_grpo(): pass\n"},
    {"grpo.lm.eval": "def evaluate(): pass\n",
     "grpo.experiments.ch11_pretrained.smollm2_runs": "def evaluate(): pass\n"},
    {"grpo.experiments.ch10_word_problems.long_runs": "class Spec: pass\n",
     "grpo.experiments.ch11_pretrained.smollm2_runs": "class Spec: pass\n"},
    {"grpo.lm.rl": "from .eval import outcomes\n__all__ = ['outcomes']\n",       # a re-export
     "grpo.lm.eval": "def outcomes(): pass\n"},
    {"grpo.experiments.ch09_addition.grids": "from functools import partial\n"
                                             "stored_jobs = partial(print, 1)\n",
     "grpo.runstore.addition_jobs": "def stored_jobs(): pass\n"},
    {"grpo.lander.env": "def main(argv=None): pass\n", "grpo.lander.trainers": "def main(): pass\n"},
])
def test_a_planted_shared_name_fails(sources):
    assert len(shared_names(sources)) == 1


def test_experiments_may_share_the_producer_protocol():
    assert shared_names({"grpo.experiments.ch06_lander.main_runs": "def main(): pass\n",
                         "grpo.experiments.ch08_grpo_math.main_runs": "def main(): pass\n"}) == []
    assert protocol_breaches({"grpo.experiments.ch06_lander.main_runs": "def main(argv=None): pass\n",
                              "grpo.lm.rl": "def main(x): pass\n"}) == []


@pytest.mark.parametrize("source", [
    "def outcomes_of(name, part, key): pass\n",                   # chapter 11's order
    "def retrain(names, workers=1): pass\n",
    "def replay(name, n=2, *, check=True): pass\n",
    "def load_run(name): pass\n",
])
def test_a_producer_off_the_protocol_fails(source):
    found = protocol_breaches({"grpo.experiments.ch10_word_problems.long_runs": source})
    assert len(found) == 1 and "the protocol's is" in found[0]


# ----------------------------------------------------------------------------- one home per name

def bound_names(source: str) -> tuple[set[str], set[str]]:
    """``(defined, imported)``: the names ``source`` binds at module level by def, class or
    assignment, and those it binds by ``from ... import`` (the top level, and under a top-level
    ``if`` or ``try``)."""
    defined, imported = set(), set()
    body = list(ast.parse(source).body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.If, ast.Try)):
            body += node.body + node.orelse + getattr(node, "finalbody", [])
            body += [s for h in getattr(node, "handlers", []) for s in h.body]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                defined |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {a.asname or a.name.split(".")[0] for a in node.names}
    return defined, imported


def package_index(root: Path = ROOT) -> dict:
    """Every grpo module: ``{name: (defined, imported, is_package)}``."""
    index = {}
    for path in sorted(root.joinpath("grpo").rglob("*.py")):
        defined, imported = bound_names(path.read_text())
        index[module_name(path, root)] = (defined, imported, path.name == "__init__.py")
    return index


def absolute(node: ast.ImportFrom, where: str, index: dict) -> str:
    """The module a ``from ... import`` names, a relative one resolved against module ``where``."""
    if not node.level:
        return node.module or ""
    package = where if index.get(where, (0, 0, False))[2] else where.rpartition(".")[0]
    base = package.split(".")[:len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def stray_imports(source: str, where: str, index: dict, attributes: bool = True) -> list[str]:
    """Every grpo name ``source`` (module ``where``, or a file) takes from a module that is not its
    home: ``from grpo.x import n`` (relative ones too, and, with ``attributes``, ``x.n`` through an
    imported grpo module) where grpo.x only imports n. A package's ``__init__`` may name its public
    surface; a submodule is its own home."""
    out, modules, tree = [], {}, ast.parse(source)
    guarded = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
               and any("ImportError" in ast.unparse(h.type or ast.Name("")) for h in t.handlers)
               for n in ast.walk(t)}        # an import tried for an older lib, with a fallback
    for node in ast.walk(tree):
        taken = []
        if id(node) in guarded:
            continue
        if isinstance(node, ast.ImportFrom) and absolute(node, where, index) in index:
            module = absolute(node, where, index)
            taken = [(module, a.name) for a in node.names]
            modules.update({a.asname or a.name: f"{module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            modules.update({a.asname: a.name for a in node.names if a.asname and a.name in index})
        elif (attributes and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and modules.get(node.value.id) in index and isinstance(node.ctx, ast.Load)):
            taken = [(modules[node.value.id], node.attr)]
        for module, name in taken:
            defined, imported, is_package = index[module]
            home = name in defined or f"{module}.{name}" in index or name == "*" \
                or (is_package and name in imported) or name.startswith("__")
            if not home:
                out.append(f"{where}:{node.lineno} takes {name} from {module}, which only "
                           "imports it: import it from its home")
    return out


def code_cells(path: Path) -> str:
    """A notebook's code cells as one Python source (magics and shell lines left out)."""
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("\n".join(line for line in "".join(c["source"]).splitlines()
                               if not line.lstrip().startswith(("%", "!")))
                     for c in cells if c["cell_type"] == "code")


def test_every_name_is_imported_from_its_home():
    index, found = package_index(), []
    for path in modules():
        found += stray_imports(path.read_text(), module_name(path), index)
    for path in sorted([*REPO.glob("tests/*.py"), *REPO.glob("bench/*.py")]):
        # tests may reach a module's imported name to monkeypatch what it calls
        found += stray_imports(path.read_text(), str(path.relative_to(REPO)), index,
                               attributes=False)
    for path in sorted([*REPO.glob("chapters/*.ipynb"), *REPO.glob("book/*.ipynb")]):
        found += stray_imports(code_cells(path), str(path.relative_to(REPO)), index)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source", [
    "from grpo.lm.train import completions\n",            # its home is grpo.lm.eval
    "from grpo.lm import rl\nrl.evaluate\n",
    "from grpo.lm.grpo import group_advantages\n",         # its home is grpo.objectives
    "from .train import completions\n",                   # relative, in grpo.lm.rl
])
def test_a_planted_stray_import_fails(source):
    index = {"grpo.lm": (set(), {"rl"}, True),
             "grpo.lm.train": ({"sft"}, {"completions"}, False),
             "grpo.lm.rl": ({"train_lm_grpo"}, {"evaluate"}, False),
             "grpo.lm.eval": ({"completions", "evaluate"}, set(), False),
             "grpo.lm.grpo": ({"grpo_loss"}, {"group_advantages"}, False),
             "grpo.objectives": ({"group_advantages"}, set(), False)}
    assert len(stray_imports(source, "grpo.lm.rl", index)) == 1
    home = source.replace("grpo.lm.train", "grpo.lm.eval").replace("rl.evaluate", "rl.train_lm_grpo")
    home = home.replace("grpo.lm.grpo", "grpo.objectives").replace("from .train", "from .eval")
    assert stray_imports(home, "grpo.lm.rl", index) == []
