"""The package's layout holds: imports point down the layers (experiments -> run store -> book
helpers -> library), an experiment imports no other chapter's experiments, no module imports
another's private name, and inside the library the house rules hold (the games know no learner,
the model knows no trainer or task, the lander and the language model share only the core). Every
public name has one home, the one module it is imported from (the lib, the tests, the benches and
the chapters' code cells alike). Each rule is checked on the real package and shown to fail on a
planted violation."""
import ast
import json
import re
from pathlib import Path

import pytest
from toc import chapters_with_stored_runs

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
MODEL_CORE = {"grpo", "grpo.checks", "grpo.files", "grpo.seeding"}   # what of the core it may use


def domain(module: str) -> str:
    """A library module's subject (``toy``, ``lander``, ``lm``), or '' for the core."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in DOMAINS else ""


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


BUILT = "a module name built at run time"


def imports(source: str, module: str, is_package: bool):
    """``(imported module, names taken from it, line)`` for every grpo import in ``source``,
    relative ones resolved, function-level ones, ``importlib.import_module("grpo...")`` (under any
    alias) and ``sys.modules["grpo..."]`` included (``BUILT`` for a name put together at run
    time, whose layer no reader can check); and ``(dotted path, attribute, line)`` for every
    private attribute reached through a grpo module (``rl._job``, ``grpo.lm.eval._private``,
    ``getattr(rl, "_job")``, ``sys.modules["grpo.lm.rl"]._job``). A name a function binds for
    itself (a parameter, a local variable) is not the module it shadows."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    found, aliases, private_attrs = [], {}, []
    importers = _importers(tree)
    for node in ast.walk(tree):
        dynamic = _imported_by_call(node, *importers) or _sys_modules_entry(node)
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
    shadowed = local_names(tree)
    for node in ast.walk(tree):
        reached = _private_reach(node)
        if reached is None:
            continue
        base, attr = reached
        path = dotted(base)
        if path and path.split(".")[0] in aliases and id(base) not in shadowed:
            private_attrs.append((path, attr, node.lineno))
        elif _sys_modules_entry(base):
            private_attrs.append((_sys_modules_entry(base), attr, node.lineno))
    return found, private_attrs


def _private_reach(node):
    """``(object, name)`` when ``node`` reaches a private name of an object: ``obj._x`` or
    ``getattr(obj, "_x"[, default])``; else None."""
    if isinstance(node, ast.Attribute):
        base, attr = node.value, node.attr
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id == "getattr" and len(node.args) >= 2
          and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
        base, attr = node.args[0], node.args[1].value
    else:
        return None
    return (base, attr) if attr.startswith("_") and not attr.startswith("__") else None


def local_names(tree) -> set:
    """``id``s of the nodes that refer to a function's own binding (a parameter or a name it
    assigns, and attribute chains on it), not to the module-level name it shadows."""
    out = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        args = fn.args
        bound = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        bound |= {a.arg for a in (args.vararg, args.kwarg) if a}
        body = fn.body if isinstance(fn.body, list) else [fn.body]
        for stmt in body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    bound.add(n.id)
        for stmt in body:
            for n in ast.walk(stmt):
                root = n
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in bound:
                    out.add(id(n))
    return out


def dotted(node) -> str:
    """``a.b.c`` for a chain of attributes on a name, else ''."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def _importers(tree) -> tuple[set, set]:
    """The names a source binds to the ``importlib`` module (``import importlib as il``) and to its
    ``import_module`` (``from importlib import import_module as load``), and ``__import__``."""
    modules, functions = {"importlib"}, {"__import__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "importlib"}
        elif isinstance(node, ast.ImportFrom) and node.module == "importlib":
            functions |= {a.asname or a.name for a in node.names if a.name == "import_module"}
    return modules, functions


def _constant_prefix(arg) -> tuple[str, bool]:
    """``(text, whole)``: a string argument's constant text, or the constant text it starts with
    when it is built (an f-string, a sum), ``whole`` False then."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value, True
    if isinstance(arg, ast.JoinedStr):
        first = arg.values[0] if arg.values else None
        return (first.value if isinstance(first, ast.Constant) else ""), False
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add):
        return _constant_prefix(arg.left)[0], False
    return "", False


def _module_named(arg) -> str:
    """The grpo module a string argument names: itself when constant; when built at run time, the
    package its constant prefix names whole (``f"grpo.experiments.{x}"``: grpo.experiments), or
    ``BUILT`` where no package below grpo is fixed (``f"grpo.{x}"``, a variable)."""
    text, whole = _constant_prefix(arg)
    if whole:
        name = text.rstrip(".")
        return name if name == "grpo" or name.startswith("grpo.") else ""
    fixed = text.rpartition(".")[0]                 # its complete components
    if fixed.startswith("grpo."):
        return fixed
    return BUILT if not text or "grpo".startswith(text) or text.startswith("grpo") else ""


def _imported_by_call(node, modules=frozenset({"importlib"}),
                      functions=frozenset({"__import__"})) -> str:
    """The grpo module an ``import_module(...)`` or ``__import__(...)`` call names, whatever the
    alias (``modules``: names of importlib, ``functions``: of import_module), or ``BUILT``."""
    if not (isinstance(node, ast.Call) and node.args):
        return ""
    head, _, attr = dotted(node.func).rpartition(".")
    if not ((head in modules and attr == "import_module") or (not head and attr in functions)):
        return ""
    return _module_named(node.args[0])


def _sys_modules_entry(node) -> str:
    """The grpo module ``sys.modules["grpo..."]`` or ``sys.modules.get("grpo...")`` reads."""
    if isinstance(node, ast.Subscript) and dotted(node.value) == "sys.modules":
        return _module_named(node.slice)
    if isinstance(node, ast.Call) and dotted(node.func) == "sys.modules.get" and node.args:
        return _module_named(node.args[0])
    return ""


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """What ``source``, as ``module``, breaks of the layout's rules."""
    out = []
    found, private_attrs = imports(source, module, is_package)
    for target, names, line in found:
        if target == BUILT:
            out.append(f"{module}:{line} imports {BUILT}: its layer cannot be checked")
            continue
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
    """The house rules inside the library (``lib/grpo/__init__.py`` states them) that one import
    can break."""
    out = []
    for t in targets:
        core = t == "grpo" or any(t == m or t.startswith(m + ".") for m in MODEL_CORE - {"grpo"})
        if module in MODEL_ONLY and t != module and not core and not domain(t):
            out.append(f"{module}:{line} imports {t}: the model knows no trainer and no task "
                       f"(of the core, only {', '.join(sorted(MODEL_CORE))})")
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
    numbers = sorted({int(chapter(n).split(".")[-1][2:4]) for n in experiments})
    assert numbers == chapters_with_stored_runs(), experiments   # one package a chapter, from 6
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
    # issue 62's planted cases, each of which this test once passed:
    ("grpo.lm.rl", "import importlib as il\nil.import_module('grpo.experiments.ch10_word_problems')\n",
     "layer above"),
    ("grpo.lm.rl", "from importlib import import_module as load\nload('grpo.runstore')\n",
     "layer above"),
    ("grpo.lm.rl", "import importlib\nname = 'grpo.' + part\nimportlib.import_module(name)\n",
     "built at run time"),
    ("grpo.lm.rl", "import importlib\nimportlib.import_module('grpo.' + part)\n", "built at run time"),
    ("grpo.lm.rl", "__import__(f'grpo.{part}')\n", "built at run time"),
    ("grpo.lm.rl", "import sys\nsys.modules['grpo.experiments.ch10_word_problems'].RUNS\n",
     "layer above"),
    ("grpo.experiments.ch08_grpo_math.main_runs", "from grpo.lm import rl\ngetattr(rl, '_job')\n",
     "private"),
    ("grpo.experiments.ch08_grpo_math.main_runs", "import sys\nsys.modules['grpo.lm.rl']._job\n",
     "private"),
    ("grpo.lm.model", "from grpo import surrogate\n", "no trainer and no task"),
    ("grpo.lm.model", "from grpo.surrogate import clipped_surrogate\n", "no trainer and no task"),
    ("grpo.lm.tokenizer", "def f():\n    from grpo.objectives import group_advantages\n",
     "no trainer and no task"),
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
    ("grpo.lm.model", "from grpo.files import write_atomically\nfrom grpo import checks\n"),
    # a function's own ``model`` or ``rl`` is not the module it shadows (the false alarm at hf.py)
    ("grpo.experiments.ch08_grpo_math.main_runs",
     "from grpo.lm import model, rl\ndef f(model):\n    return model._cache\n"
     "def g():\n    rl = object()\n    return getattr(rl, '_x')\n"),
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
    surface, and then that is the one path to those names from outside the package (``from
    grpo.lander import RunSpec``, never ``grpo.lander.trainers``'s); a submodule is its own
    home. A name a function binds for itself is not the module it shadows."""
    out, modules, tree = [], {}, ast.parse(source)
    shadowed = local_names(tree)
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
              and modules.get(node.value.id) in index and isinstance(node.ctx, ast.Load)
              and id(node.value) not in shadowed):
            taken = [(modules[node.value.id], node.attr)]
        for module, name in taken:
            defined, imported, is_package = index[module]
            home = name in defined or f"{module}.{name}" in index or name == "*" \
                or (is_package and name in imported) or name.startswith("__")
            surface = surface_of(module, name, where, index)
            if not home:
                out.append(f"{where}:{node.lineno} takes {name} from {module}, which only "
                           "imports it: import it from its home")
            elif surface:
                out.append(f"{where}:{node.lineno} takes {name} from {module}: {surface} names it "
                           f"as its surface, so import it from {surface}")
    return out


def surface_of(module: str, name: str, where: str, index: dict) -> str:
    """The package above ``module`` whose ``__init__`` names ``name`` as its public surface, when
    ``where`` lies outside that package (else '')."""
    parts = module.split(".")
    for i in range(len(parts) - 1, 0, -1):
        package = ".".join(parts[:i])
        if package in index and index[package][2] and name in index[package][1]:
            inside = where == package or where.startswith(package + ".")
            return "" if inside else package
    return ""


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
    pages = [f for path in PAGES for f in stray_imports(code_cells(path),
                                                       str(path.relative_to(REPO)), index)]
    found += [f for f in pages if not _pending(f)]
    assert not found, "\n".join(found)


PAGES = sorted([*REPO.glob("chapters/*.ipynb"), *REPO.glob("book/*.ipynb")])
# Library names issue 62 renamed that the pages, rewritten in main, still take (the report
# lists each edit): old name -> new. Once no page takes an old name, its entry fails the test
# below and leaves the list.
PENDING_RENAMES: dict = {}


def _pending(finding: str) -> str:
    """The old name a page's finding takes, when ``PENDING_RENAMES`` lists it ('' otherwise)."""
    old = re.search(r" takes (\w+) from ", finding)
    return old.group(1) if old and old.group(1) in PENDING_RENAMES else ""


def test_the_pages_still_take_only_the_pending_renames():
    index = package_index()
    taken = {_pending(f) for path in PAGES
             for f in stray_imports(code_cells(path), str(path.relative_to(REPO)), index)}
    assert taken - {""} == set(PENDING_RENAMES), "drop the renamed names from PENDING_RENAMES"


@pytest.mark.parametrize("source", [
    "from grpo.lm.train import completions\n",            # its home is grpo.lm.eval
    "from grpo.lm import rl\nrl.evaluate\n",
    "from grpo.lm.grpo import group_advantages\n",         # its home is grpo.objectives
    "from .train import completions\n",                   # relative, in grpo.lm.rl
])
def test_a_planted_stray_import_fails_and_a_shadowing_local_name_passes(source):
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


def test_a_packages_surface_is_the_one_path_to_its_names():
    index = {"grpo.lander": (set(), {"RunSpec", "trainers"}, True),
             "grpo.lander.trainers": ({"RunSpec", "train_lander_grpo"}, set(), False)}
    outside = "from grpo.lander.trainers import RunSpec\n"
    assert len(stray_imports(outside, "tests/test_x.py", index)) == 1
    assert len(stray_imports(outside, "grpo.experiments.ch06_lander.main_runs", index)) == 1
    assert stray_imports(outside, "grpo.lander.env", index) == []          # inside the package
    assert stray_imports("from grpo.lander import RunSpec\n", "tests/test_x.py", index) == []
    # a name the package does not name is imported from its module
    assert stray_imports("from grpo.lander.trainers import train_lander_grpo\n", "t.py",
                         index) == []


def test_a_local_name_shadowing_an_imported_module_is_no_stray_import():
    index = {"grpo.lm": (set(), {"model"}, True),
             "grpo.lm.model": ({"GPT"}, {"write_atomically"}, False)}
    assert len(stray_imports("from grpo.lm import model\nmodel.write_atomically\n", "x", index)) == 1
    local = "from grpo.lm import model\ndef save(model):\n    model.write_atomically()\n"
    assert stray_imports(local, "x", index) == []
