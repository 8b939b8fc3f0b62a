"""The package's layout holds: imports point down the layers (experiments -> run store -> book
helpers -> library), an experiment imports no other chapter's experiments, no module imports
another's private name, and inside the library the house rules hold (the games know no learner,
the model knows no trainer or task, the lander and the language model share only the core; no
command line, no global random state, no wall clock). The pages' code cells (chapters/ and book/,
read from the notebooks' JSON, IPython's magics and shell lines left out) and the benches are
callers above the library: they may import any layer, experiments included, and only public names.
An import is read whatever its form: under an alias, by a relative or run-time name, through an
attribute chain below ``import grpo``, or through a module's namespace (``vars(rl)["_x"]``). Every
public name has one home, the one module it is imported from (the lib, the tests, the benches and
the chapters' code cells alike). Each rule is checked on the real package and pages and shown to
fail on a planted violation, and to pass what the rules allow."""
import ast
import json
import re
from pathlib import Path

import pytest
from toc import chapters_with_stored_runs

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "lib"


CALLER = 4          # the layer of a caller above the package: a page


def layer(module: str) -> int:
    """0 the library, 1 the book helpers, 2 the run store, 3 the experiments; ``CALLER`` for what
    is no module of the package, a caller named by its path (``chapters/08_grpo_math.ipynb``)."""
    if not is_grpo(module):
        return CALLER
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
MODEL_PACKAGES = {m.rpartition(".")[0] for m in MODEL_ONLY}          # and the package holding it


def domain(module: str) -> str:
    """A library module's subject (``toy``, ``lander``, ``lm``), or '' for the core."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in DOMAINS else ""


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


BUILT = "a module name built at run time"


def imports(source: str, module: str, is_package: bool):
    """``(found, private_attrs)`` for ``source`` as ``module``. ``found``: ``(imported module,
    names taken from it, line)`` for every grpo import, relative ones resolved, function-level
    ones, a module run or loaded by name (``importlib.import_module``, ``__import__``,
    ``runpy.run_module``, ``pkgutil.resolve_name``, under any alias, a relative name resolved
    against its package argument) and ``sys.modules["grpo..."]`` included (``BUILT`` for a name
    put together at run time, whose layer no reader can check); and ``(reached path, [], line,
    "reaches")`` for every attribute chain that goes below an imported grpo name
    (``import grpo`` then ``grpo.experiments.ch10_word_problems.long_runs.RUNS``).
    ``private_attrs``: ``(dotted path, attribute, line)`` for every private attribute reached
    through a grpo module (``rl._job``, ``grpo.lm.eval._private``, ``getattr(rl, "_job")``,
    ``vars(rl)["_job"]``, ``rl.__dict__.get("_job")``, ``sys.modules["grpo.lm.rl"]._job``). A
    name a function binds for itself (a parameter, a local variable) is not the module it
    shadows."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    bindings, shadowed = import_bindings(tree, package), local_names(tree)
    found, private_attrs = [], []
    for node in ast.walk(tree):
        dynamic = (_imported_by_call(node, bindings, shadowed, module, package)
                   or _sys_modules_entry(node, bindings))
        if dynamic:
            found.append((dynamic, [], node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if is_grpo(a.name)]
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            if is_grpo(target):
                found.append((target, [a.name for a in node.names], node.lineno))
    outer_only = shadowed | {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in outer_only:
            path = qualified(node, bindings)
            root = dotted(node).split(".")[0]
            if root in bindings and is_grpo(path) and path != bindings[root]:
                found.append((path, [], node.lineno, "reaches"))
    for node in ast.walk(tree):
        reached = _private_reach(node)
        if reached is None:
            continue
        base, attr = reached
        path = "" if id(base) in shadowed else qualified(base, bindings)
        if path and dotted(base).split(".")[0] in bindings and is_grpo(path):
            private_attrs.append((path, attr, node.lineno))
        elif entry := (_sys_modules_entry(base, bindings)
                       or _imported_by_call(base, bindings, shadowed, module, package)):
            private_attrs.append((entry, attr, node.lineno))
    return found, private_attrs


def is_grpo(name: str) -> bool:
    return name == "grpo" or name.startswith("grpo.")


def _from_target(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` names, a relative one resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def import_bindings(tree, package: str) -> dict[str, str]:
    """What each name a source binds by import stands for, as a dotted path: ``import numpy as
    np`` binds ``np`` to numpy, ``import grpo.lm.eval`` binds ``grpo`` to grpo, ``from time import
    perf_counter as pc`` binds ``pc`` to time.perf_counter, ``from . import rl`` (in grpo.lm) binds
    ``rl`` to grpo.lm.rl."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    out[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            out.update({a.asname or a.name: f"{target}.{a.name}" for a in node.names
                        if a.name != "*"})
    return out


def qualified(node, bindings: dict) -> str:
    """``node``'s dotted name with its root replaced by what an import bound it to (``np.random``:
    numpy.random); a root no import binds (a builtin, a local) stays as written; '' when ``node``
    is not a chain of attributes on a name."""
    path = dotted(node)
    root, dot, rest = path.partition(".")
    return bindings[root] + dot + rest if root in bindings else path


def _private_reach(node):
    """``(object, name)`` when ``node`` reaches a private name of an object: ``obj._x``,
    ``getattr(obj, "_x"[, default])``, ``vars(obj)["_x"]``, ``obj.__dict__["_x"]`` or either
    one's ``.get("_x")``; else None. A named tuple's own API (``_fields``, ``_replace``, ...) is
    public, whatever its underscore."""
    def text(arg):
        return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""

    def namespace_of(obj):          # the object whose ``vars`` ``obj`` is, or None
        if (isinstance(obj, ast.Call) and isinstance(obj.func, ast.Name) and obj.func.id == "vars"
                and len(obj.args) == 1):
            return obj.args[0]
        return obj.value if isinstance(obj, ast.Attribute) and obj.attr == "__dict__" else None

    base, attr = None, ""
    if isinstance(node, ast.Attribute):
        base, attr = node.value, node.attr
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2:
        base, attr = node.args[0], text(node.args[1])
    elif isinstance(node, ast.Subscript) and namespace_of(node.value) is not None:
        base, attr = namespace_of(node.value), text(node.slice)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr == "get" and namespace_of(node.func.value) is not None and node.args):
        base, attr = namespace_of(node.func.value), text(node.args[0])
    private = attr.startswith("_") and not attr.startswith("__") and attr not in NAMEDTUPLE_API
    return (base, attr) if base is not None and private else None


NAMEDTUPLE_API = {"_fields", "_field_defaults", "_asdict", "_replace", "_make"}   # public, documented


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


def _module_named(arg, anchor: str = "") -> str:
    """The grpo module a string argument names: itself when constant; when built at run time, the
    package its constant prefix names whole (``f"grpo.experiments.{x}"``: grpo.experiments), or
    ``BUILT`` where no package below grpo is fixed (``f"grpo.{x}"``, a variable). A relative name
    (``".rl"``) is resolved against ``anchor``, the package argument of the call (``BUILT`` when
    the call gives none a reader can resolve); ``module:attribute`` names the module."""
    text, whole = _constant_prefix(arg)
    text = text.partition(":")[0]
    if text.startswith("."):
        if not anchor:
            return BUILT
        level = len(text) - len(text.lstrip("."))
        base = anchor.split(".")
        text = ".".join(base[:len(base) - level + 1] + ([text[level:]] if text[level:] else []))
    if whole:
        name = text.rstrip(".")
        return name if is_grpo(name) else ""
    fixed = text.rpartition(".")[0]                 # its complete components
    if fixed.startswith("grpo."):
        return fixed
    return BUILT if not text or "grpo".startswith(text) or text.startswith("grpo") else ""


# Calls that import or run a module named by a string: its layer is checked like an import's.
IMPORTERS = {"importlib.import_module", "__import__", "runpy.run_module", "pkgutil.resolve_name"}


def _imported_by_call(node, bindings: dict, shadowed: set, module: str, package: str) -> str:
    """The grpo module a call in ``IMPORTERS`` names, whatever the alias it is called by
    (``import importlib as il``, ``from runpy import run_module as run``), or ``BUILT``. A
    relative name is resolved against the call's ``package`` argument: a constant, or
    ``__package__`` (``package``), ``__spec__.parent`` (``package``), ``__name__`` (``module``)."""
    if not (isinstance(node, ast.Call) and node.args) or id(node.func) in shadowed:
        return ""
    if qualified(node.func, bindings) not in IMPORTERS:
        return ""
    given = [k.value for k in node.keywords if k.arg == "package"] + node.args[1:2]
    anchor = ""
    if given and isinstance(given[0], ast.Constant) and isinstance(given[0].value, str):
        anchor = given[0].value
    elif given and dotted(given[0]) in ("__package__", "__spec__.parent"):
        anchor = package
    elif given and dotted(given[0]) == "__name__":
        anchor = module
    return _module_named(node.args[0], anchor)


def _sys_modules_entry(node, bindings: dict) -> str:
    """The grpo module ``sys.modules["grpo..."]`` or ``sys.modules.get("grpo...")`` reads."""
    if isinstance(node, ast.Subscript) and qualified(node.value, bindings) == "sys.modules":
        return _module_named(node.slice)
    if (isinstance(node, ast.Call) and qualified(node.func, bindings) == "sys.modules.get"
            and node.args):
        return _module_named(node.args[0])
    return ""


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """What ``source``, as ``module``, breaks of the layout's rules. A caller above the package (a
    page, named by its path) may import any layer, experiments included, and only public names."""
    out = []
    found, private_attrs = imports(source, module, is_package)
    for target, names, line, *how in found:
        verb = how[0] if how else "imports"
        if target == BUILT:
            if layer(module) < CALLER:
                out.append(f"{module}:{line} imports {BUILT}: its layer cannot be checked")
            continue
        # ``from grpo.x import y`` may name the submodule grpo.x.y
        targets = [target] + [f"{target}.{n}" for n in names]
        mine = layer(module)
        theirs = max(layer(t) for t in targets)
        if theirs > mine:
            out.append(f"{module}:{line} {verb} {target} from a layer above it")
        for t in targets:
            if mine == 3 and layer(t) == 3 and chapter(t) and chapter(t) != chapter(module):
                out.append(f"{module}:{line} {verb} another chapter's experiment {t}")
        for n in names:
            if n.startswith("_") and not n.startswith("__") and target != module:
                out.append(f"{module}:{line} imports the private name {target}.{n}")
        if mine == 0 and theirs == 0:
            out += library_rules(module, targets, line, verb)
    for path, attr, line in private_attrs:
        out.append(f"{module}:{line} uses the private name {path}.{attr}")
    return list(dict.fromkeys(out))


def library_rules(module: str, targets: list[str], line: int, verb: str = "imports") -> list[str]:
    """The house rules inside the library (``lib/grpo/__init__.py`` states them) that one import,
    or one attribute chain below an imported name, can break. The model's modules (``MODEL_ONLY``)
    may use each other and the package that holds them."""
    out = []
    for t in targets:
        core = t == "grpo" or any(t == m or t.startswith(m + ".") for m in MODEL_CORE - {"grpo"})
        model_side = any(t == m or t.startswith(m + ".") for m in MODEL_ONLY) or t in MODEL_PACKAGES
        if module in MODEL_ONLY and t != module and not core and not domain(t):
            out.append(f"{module}:{line} {verb} {t}: the model knows no trainer and no task "
                       f"(of the core, only {', '.join(sorted(MODEL_CORE))})")
        if t == module or not domain(t):
            continue
        if module in ENVIRONMENTS:
            out.append(f"{module}:{line} {verb} {t}: a game knows no learner (only the core)")
        elif module in MODEL_ONLY and not model_side:
            out.append(f"{module}:{line} {verb} {t}: the model knows no trainer and no task")
        elif domain(module) != domain(t):
            out.append(f"{module}:{line} {verb} {t}: the {domain(module) or 'core'} and the "
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
    # issue 72's: a relative name a module is loaded by, a module run by name, an attribute chain
    # below ``import grpo``, a private name read through the module's namespace
    ("grpo.lm.rl", "import importlib\nimportlib.import_module('.experiments.ch10_word_problems', 'grpo')\n",
     "layer above"),
    ("grpo.lm.rl", "from importlib import import_module\nimport_module('..runstore', __package__)\n",
     "layer above"),
    ("grpo.lm.rl", "import importlib\nimportlib.import_module('.runstore', package=anchor)\n",
     "built at run time"),
    ("grpo.lm.rl", "import runpy\nrunpy.run_module('grpo.experiments.ch10_word_problems.long_runs')\n",
     "layer above"),
    ("grpo.lm.rl", "from runpy import run_module as run\nrun('grpo.runstore')\n", "layer above"),
    ("grpo.lm.rl", "import pkgutil\npkgutil.resolve_name('grpo.book.plots:COLORS')\n", "layer above"),
    ("grpo.lm.rl", "import grpo\ngrpo.experiments.ch10_word_problems.long_runs.RUNS\n", "layer above"),
    ("grpo.lm.eval", "import grpo.lm\ndef f():\n    return grpo.book.results.save_results\n",
     "layer above"),
    ("grpo.lander.trainers", "import grpo\ngrpo.lm.rl.train_lm_grpo()\n", "share only the core"),
    ("grpo.lm.model", "import grpo\ngrpo.lm.rl.train_lm_grpo\n", "no trainer and no task"),
    ("grpo.experiments.ch08_grpo_math.main_runs",
     "import grpo.experiments\ngrpo.experiments.ch10_word_problems.long_runs.RUNS\n", "another chapter"),
    ("grpo.experiments.ch08_grpo_math.main_runs", "from grpo.lm import rl\nvars(rl)['_job']\n",
     "private"),
    ("grpo.experiments.ch08_grpo_math.main_runs", "from grpo.lm import rl\nvars(rl).get('_job')\n",
     "private"),
    ("grpo.experiments.ch08_grpo_math.main_runs", "import grpo.lm.rl\ngrpo.lm.rl.__dict__['_job']\n",
     "private"),
    ("grpo.experiments.ch08_grpo_math.main_runs",
     "import importlib\nimportlib.import_module('grpo.lm.rl')._job\n", "private"),
    ("grpo.experiments.ch08_grpo_math.main_runs", "from grpo.lm.rl import RunConfig\nRunConfig._check()\n",
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
    # the model's two modules use each other; a named tuple's API is public
    ("grpo.lm.model", "from grpo.lm.tokenizer import Tokenizer\n"),
    ("grpo.lm.model",
     "from grpo.lm import tokenizer\nimport grpo.lm.tokenizer\ngrpo.lm.tokenizer.Tokenizer\n"),
    ("grpo.lm.tokenizer", "from . import model\nmodel.GPT\n"),
    ("grpo.experiments.ch08_grpo_math.main_runs",
     "from grpo.lm.rl import GroupDraws\nGroupDraws._fields\nGroupDraws._make(x)._asdict()\n"
     "getattr(GroupDraws, '_field_defaults')\nvars(GroupDraws)['_replace']\n"),
    ("grpo.lm.rl", "import importlib\nimportlib.import_module('.eval', 'grpo.lm')\n"),
    ("grpo.lm.rl", "import importlib\nimportlib.import_module('.eval', __package__)\n"),
    ("grpo.lm.rl", "import grpo\ngrpo.lm.eval.outcomes()\ngrpo.checks.check_positive\n"),
    ("grpo.experiments.ch11_pretrained.format_runs",
     "from grpo.experiments.ch11_pretrained import design as D\nD.DESIGN.arms\n"),
])
def test_an_import_down_the_layers_passes(module, source):
    assert violations(source, module) == []


# ----------------------------------------------------------------------------- the pages: callers above
# the library

PAGES = sorted([*REPO.glob("chapters/*.ipynb"), *REPO.glob("book/*.ipynb")])


def _is_ipython(line: str) -> bool:
    """A line IPython runs itself: a magic (``%time``) or a shell line (``!pip ...``)."""
    return line.lstrip().startswith(("%", "!"))


def page_source(text: str) -> tuple[str, list[tuple[int, int]], list[str]]:
    """A notebook's code cells (``text``: its JSON) as one Python source, which line of which cell
    each of its lines is (``(cell index in the notebook, line in the cell)``, from 0 and 1), and
    the cells Python cannot read. A cell that does not parse as it stands has its IPython lines
    read as ``pass`` (an indented one stays in its block); a cell magic (``%%time``) takes the
    whole cell."""
    lines, places, unreadable = [], [], []
    for index, cell in enumerate(json.loads(text)["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        cell_lines = source.splitlines()
        try:
            ast.parse(source)
        except SyntaxError:
            if source.lstrip().startswith("%%"):
                cell_lines = ["pass"] * len(cell_lines)
            else:
                cell_lines = [line[:len(line) - len(line.lstrip())] + "pass"
                              if _is_ipython(line) else line for line in cell_lines]
            try:
                ast.parse("\n".join(cell_lines))
            except SyntaxError as e:
                unreadable.append(f"cell {index} line {e.lineno} does not parse: {e.msg}")
                cell_lines = ["pass"] * len(cell_lines)
        lines += cell_lines
        places += [(index, n) for n in range(1, len(cell_lines) + 1)]
    return "\n".join(lines) + "\n", places, unreadable


def placed(findings: list[str], page: str, places: list) -> list[str]:
    """``findings`` on a page's joined source (``page:LINE ...``) with each line named by its cell
    (``page cell 12 line 3 ...``)."""
    def where(match):
        cell, line = places[int(match.group(1)) - 1]
        return f"{page} cell {cell} line {line}"
    return [re.sub(rf"^{re.escape(page)}:(\d+)", where, f) for f in findings]


def page_violations(text: str, page: str) -> list[str]:
    """What a page's code cells break of the layout, as a caller above the library: a page may
    import any layer (experiments too), and only public names (``violations``)."""
    source, places, unreadable = page_source(text)
    return [f"{page} {u}" for u in unreadable] + placed(violations(source, page), page, places)


def test_every_page_and_bench_keeps_the_layout():
    """The pages and the benches, callers above the library (the tests reach private names on
    purpose, to check and to monkeypatch them)."""
    assert PAGES, "no pages found"
    found = []
    for path in PAGES:
        found += page_violations(path.read_text(), str(path.relative_to(REPO)))
    for path in sorted(REPO.glob("bench/*.py")):
        found += violations(path.read_text(), str(path.relative_to(REPO)))
    assert not found, "\n".join(found)


def notebook(*cells: str) -> str:
    """A notebook's JSON with these code cells, a markdown cell first (so code cell k is cell k)."""
    return json.dumps({"cells": [{"cell_type": "markdown", "source": ["# a page"]}]
                       + [{"cell_type": "code", "source": c.splitlines(keepends=True)}
                          for c in cells]})


@pytest.mark.parametrize("cells, where", [
    (["from grpo.lm.rl import _check_config\n"], "cell 1 line 1"),
    (["import numpy as np\n", "from grpo.lm import rl\nx = 1\nrl._check_config(cfg)\n"],
     "cell 2 line 3"),
    (["from grpo.lm import rl\n", "%time f()\nvars(rl)['_check_config']\n"], "cell 2 line 2"),
    (["import grpo.lm.rl\ngrpo.lm.rl.__dict__.get('_check_config')\n"], "cell 1 line 2"),
    (["import importlib\nimportlib.import_module('grpo.lm.rl')._check_config\n"], "cell 1 line 2"),
    (["from grpo.lm import rl\ngetattr(rl, '_check_config')\n"], "cell 1 line 2"),
])
def test_a_page_reaching_a_private_name_fails_at_its_cell_and_line(cells, where):
    found = page_violations(notebook(*cells), "chapters/99_x.ipynb")
    assert found and all("private name grpo.lm.rl._check_config" in f for f in found), found
    assert all(f.startswith(f"chapters/99_x.ipynb {where} ") for f in found), found


def test_a_page_may_import_experiments_and_a_named_tuples_api():
    cells = ["%matplotlib inline\nfrom grpo.experiments.ch10_word_problems import long_runs\n",
             "!pip list\nimport importlib\nrun = importlib.import_module(f'grpo.experiments.{x}')\n",
             "%%time\nthis line is not Python\n",
             "from grpo.lm.rl import GroupDraws\nGroupDraws._fields, GroupDraws._field_defaults\n"
             "d = GroupDraws._make(row)\nd._replace(G=2)._asdict()\n",
             "for x in range(2):\n    %time f(x)\n",
             "y = (1\n     % 2)\n"]                  # a line that starts with % in Python
    assert page_violations(notebook(*cells), "chapters/99_x.ipynb") == []


def test_a_page_that_does_not_parse_is_named():
    found = page_violations(notebook("x = 1\n", "def f(:\n"), "book/x.ipynb")
    assert len(found) == 1 and found[0].startswith("book/x.ipynb cell 2 line 1 does not parse")


# ----------------------------------------------------------------------------- no command line, no global
# random state, one clock

# Each by the name its module gives it; an alias (``from time import perf_counter as pc``,
# ``import numpy.random as npr``) is read back to that name.
GLOBAL_SEEDS = {"torch.manual_seed", "torch.random.manual_seed", "torch.seed", "torch.random.seed",
                "torch.set_rng_state", "torch.random.set_rng_state", "torch.cuda.manual_seed",
                "torch.cuda.manual_seed_all", "random.seed", "random.setstate",
                "numpy.random.seed", "numpy.random.set_state"}
WALL_CLOCKS = {f"time.{clock}{ns}" for clock in ("time", "perf_counter", "monotonic")
               for ns in ("", "_ns")}
EXITS = {"sys.exit", "os._exit", "exit", "quit"}           # builtins' exit and quit: the site's
COMMAND_LINES = {"argparse", "getopt", "optparse"}


def references(tree, bindings: dict, shadowed: set):
    """``(qualified name, line)`` for every name ``tree`` reads (each link of an attribute chain,
    ``getattr(obj, "name")`` too) and every name it imports, each read back through the imports
    to the name its module gives it; a function's own binding (``def f(exit): exit()``) is left
    out."""
    for node in ast.walk(tree):
        if (isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load)
                and id(node) not in shadowed):
            yield qualified(node, bindings), node.lineno
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "getattr" and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and id(node.args[0]) not in shadowed and dotted(node.args[0])):
            yield f"{qualified(node.args[0], bindings)}.{node.args[1].value}", node.lineno
        elif isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield from ((f"{node.module}.{a.name}", node.lineno) for a in node.names)
            yield node.module, node.lineno


def _runs_as_main(node) -> bool:
    """``if __name__ == "__main__":``"""
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and {ast.unparse(node.test.left), *map(ast.unparse, node.test.comparators)}
            == {"__name__", "'__main__'"})


def house_rules(source: str, module: str) -> list[str]:
    """What ``source``, as ``module``, breaks of the rules a name check sees: the library (layer
    0) has no command line (no ``main``, ``if __name__ == "__main__"``, ``sys.argv``, argument
    parser, ``SystemExit``, ``sys.exit`` or ``exit``) and no global random state (it never seeds
    a global generator nor sets its state); no module of the package times with a wall clock (a
    timing means CPU seconds: ``runstore.cpu_timed``, or ``time.process_time`` inside a loop).
    Each name is read back through the imports (``from time import perf_counter as pc``)."""
    out, tree = [], ast.parse(source)
    library = layer(module) == 0
    bindings = import_bindings(tree, module.rpartition(".")[0])
    for name, line in references(tree, bindings, local_names(tree)):
        if name in GLOBAL_SEEDS and library:
            out.append(f"{module}:{line} seeds a global generator ({name}): pass a generator in "
                       "(grpo.seeding.seeded_generator)")
        if name in WALL_CLOCKS:
            out.append(f"{module}:{line} times with a wall clock ({name}): CPU seconds, through "
                       "runstore.cpu_timed")
        if library and (name in EXITS | COMMAND_LINES | {"sys.argv", "SystemExit"}):
            out.append(f"{module}:{line} is a command line ({name}): it belongs in "
                       "grpo.experiments")
    if library:
        for node in tree.body:
            if (isinstance(node, ast.FunctionDef) and node.name == "main") or _runs_as_main(node):
                out.append(f"{module}:{node.lineno} is a command line (its entry point): it "
                           "belongs in grpo.experiments")
    return list(dict.fromkeys(out))


def test_the_library_has_no_command_line_no_global_seed_and_one_clock():
    found = []
    for path in modules():
        found += house_rules(path.read_text(), module_name(path))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("module, source, rule", [
    ("grpo.lm.rl", "import torch\ndef f(cfg):\n    torch.manual_seed(cfg.seed)\n", "global generator"),
    ("grpo.lm.addition", "import torch\ntorch.random.manual_seed(0)\n", "global generator"),
    ("grpo.toy.lava", "import numpy as np\nnp.random.seed(0)\n", "global generator"),
    ("grpo.lm.hf", "def main(argv=None):\n    pass\n", "command line"),
    ("grpo.lm.hf", "def f(e):\n    raise SystemExit(f'error: {e}')\n", "command line"),
    ("grpo.lander.trainers", "import argparse\n", "command line"),
    ("grpo.lm.hf", "import time\nt0 = time.perf_counter()\n", "wall clock"),
    ("grpo.experiments.ch06_lander.gradient_noise", "import time\nt0 = time.time()\n", "wall clock"),
    # issue 72's: each name under an alias, and the command line's other doors
    ("grpo.lm.hf", "from time import perf_counter as pc\nt0 = pc()\n", "wall clock"),
    ("grpo.lm.hf", "import time as clock\nt0 = clock.perf_counter_ns()\n", "wall clock"),
    ("grpo.lm.hf", "import time\ntick = getattr(time, 'monotonic')\n", "wall clock"),
    ("grpo.lm.rl", "from torch import manual_seed as seed_all\nseed_all(0)\n", "global generator"),
    ("grpo.toy.lava", "import numpy.random as npr\nnpr.seed(0)\n", "global generator"),
    ("grpo.toy.lava", "from numpy import random\nrandom.seed(0)\n", "global generator"),
    ("grpo.lm.rl", "import random as stdlib_random\nstdlib_random.seed(1)\n", "global generator"),
    ("grpo.lm.rl", "import torch\ntorch.set_rng_state(state)\n", "global generator"),
    ("grpo.lm.hf", "import sys\ndef f():\n    sys.exit(1)\n", "command line"),
    ("grpo.lm.hf", "from sys import exit as stop\nstop(2)\n", "command line"),
    ("grpo.lm.hf", "def f():\n    exit(1)\n", "command line"),
    ("grpo.lm.hf", "import sys\npath = sys.argv[1]\n", "command line"),
    ("grpo.lm.hf", "if __name__ == '__main__':\n    run()\n", "command line"),
    ("grpo.lm.hf", "from argparse import ArgumentParser\n", "command line"),
])
def test_a_planted_house_rule_breach_fails(module, source, rule):
    found = house_rules(source, module)
    assert found and all(rule in f for f in found), found


@pytest.mark.parametrize("module, source", [
    ("grpo.lm.rl", "import torch\ng = torch.Generator().manual_seed(0)\n"),
    ("grpo.lm.rl", "import time\nt = time.process_time()\nclock = time.thread_time\n"),
    ("grpo.experiments.hf_cli", "import argparse\ndef main(argv=None):\n    raise SystemExit(1)\n"),
    ("grpo.experiments.hf_cli", "import sys\nif __name__ == '__main__':\n    sys.exit(main(sys.argv[1:]))\n"),
    ("grpo.runstore.addition_jobs", "import torch\ntorch.manual_seed(0)\n"),
    ("grpo.lm.rl", "def f(exit, perf_counter):\n    exit()\n    perf_counter()\n"),   # its own names
    ("grpo.lm.rl", "import sys\nsys.stderr.write('x')\n"),
    ("grpo.lm.rl",
     "import numpy as np\nimport random\nrng, r = np.random.default_rng(0), random.Random(0)\n"),
])
def test_the_house_rules_pass_what_they_allow(module, source):
    assert house_rules(source, module) == []


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


def test_every_name_is_imported_from_its_home():
    index, found = package_index(), []
    for path in modules():
        found += stray_imports(path.read_text(), module_name(path), index)
    for path in sorted([*REPO.glob("tests/*.py"), *REPO.glob("bench/*.py")]):
        # tests may reach a module's imported name to monkeypatch what it calls
        found += stray_imports(path.read_text(), str(path.relative_to(REPO)), index,
                               attributes=False)
    pages = [f for path in PAGES for f in page_stray_imports(path, index)]
    found += [f for f in pages if not _pending(f)]
    assert not found, "\n".join(found)


def surface(source: str, package: str) -> set[str]:
    """The names a package's ``__init__`` (``source``) imports from its own modules: its surface."""
    return {a.asname or a.name for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom)
            and is_inside(_from_target(node, package), package) for a in node.names}


def is_inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def taken_from(source: str, package: str, where: str) -> set[str]:
    """The names ``source`` (module or file ``where``) takes from ``package``: ``from package
    import n``, and ``alias.n`` where an import bound ``alias`` to the package."""
    tree = ast.parse(source)
    own = where if is_inside(where, "grpo") else ""
    bindings = import_bindings(tree, own.rpartition(".")[0])
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _from_target(node, own.rpartition(".")[0]) == package:
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.Attribute) and qualified(node.value, bindings) == package:
            out.add(node.attr)
    return out


def unused_surface(package: str, init: str, callers: dict[str, str]) -> list[str]:
    """The names of ``package``'s surface (``init``: its ``__init__``) that no caller outside the
    package takes (``callers``: where -> source)."""
    taken = set()
    for where, source in callers.items():
        if not is_inside(where, package):
            taken |= taken_from(source, package, where)
    return sorted(surface(init, package) - taken)


def callers_of_the_package() -> dict[str, str]:
    """Every source that may take a name from a package of grpo: its modules, the tests, the
    benches and the pages' code cells."""
    out = {module_name(p): p.read_text() for p in modules()}
    out |= {str(p.relative_to(REPO)): p.read_text()
            for p in sorted([*REPO.glob("tests/*.py"), *REPO.glob("bench/*.py")])}
    out |= {str(p.relative_to(REPO)): page_source(p.read_text())[0] for p in PAGES}
    return out


def test_a_packages_surface_names_only_what_its_callers_use():
    callers, found = callers_of_the_package(), []
    for path in modules():
        if path.name == "__init__.py":
            package = module_name(path)
            found += [f"{package}.{n}" for n in unused_surface(package, path.read_text(), callers)]
    assert not found, "named in a package's __init__, used by no caller outside it: " + ", ".join(found)


def test_a_surface_name_no_caller_takes_fails():
    init = "from .env import make_env, fly\nfrom .trainers import train\nfrom grpo import checks\n"
    callers = {"tests/test_x.py": "from grpo.lander import make_env\n",
               "chapters/06.ipynb": "from grpo import lander as L\nL.train(spec)\n",
               "grpo.lander.trainers": "from grpo.lander import fly\n"}       # inside: no caller
    assert unused_surface("grpo.lander", init, callers) == ["fly"]
    callers["bench/b.py"] = "import grpo.lander\ngrpo.lander.fly(actor, 0, True)\n"
    assert unused_surface("grpo.lander", init, callers) == []


def page_stray_imports(path: Path, index: dict) -> list[str]:
    """``stray_imports`` in a page's code cells, each placed at its cell and line."""
    page = str(path.relative_to(REPO))
    source, places, _ = page_source(path.read_text())
    return placed(stray_imports(source, page, index), page, places)


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
    taken = {_pending(f) for path in PAGES for f in page_stray_imports(path, index)}
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
