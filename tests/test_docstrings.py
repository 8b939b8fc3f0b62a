"""Every docstring points to code that runs.

1. Each dotted ``grpo.…`` name the package's sources and the README mention (an entry point, a
   function, a constant) is one that imports. A deleted entry point left in a docstring
   (``grpo.runstore.models.run_lm_configs``) fails here, as a planted case shows.

2. Each name the library's docstrings and comments write between double backquotes, where it
   looks like a name of the package, is one the package's code has. The rule:

   - a span is checked when it is a name, bare or dotted, optionally written as a call: ``X``,
     ``a.b.X``, ``X()``. Anything else is not a name and is left alone: a literal (``"token"``,
     ``1e5``), an expression (``cfg.beta > 0``, ``fn(rewards)``), a path (``data/runs/``);
   - of a dotted span the last part is checked (``design.DESIGN.arms``: ``arms``), the name it
     points at; its head is often a parameter (``cfg.seed``);
   - that name is checked when it looks like a name of the package: an UPPER_CASE constant of two
     characters or more (``SFT_BASIS``), a lower-case name with an underscore (a function, a
     field, an attribute: ``eval_every``), or any name written as a call (``draw()``). A single
     lower-case word (``model``, ``null``) is as often English or a value, and is left alone;
   - it resolves when the package's code (not its docstrings or comments) has it: a module or
     package, a name defined, assigned, read or imported, an attribute, a parameter (so an
     argument's name resolves), a keyword argument, or a string constant that is a name (a
     dictionary key, a field written as text);
   - ``NOT_CODE`` lists the names a docstring may write that are not names of the package's code,
     each with what it is; an entry that resolves, or that no docstring writes any more, fails.

   A constant that never existed (``PASS_K``, where the code has ``PASS_K_SEED``) or a setting
   renamed away (``snapshot_every``) fails here, as planted cases show."""
import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "lib" / "grpo"
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
    for path in [*sorted(LIB.rglob("*.py")), REPO / "README.md"]:
        found += [f"{path.relative_to(REPO)}: {n}" for n in dangling(path.read_text())]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("text", ["Runs are ``grpo.runstore.models.run_lm_configs``.",
                                  "see grpo.lm.rl.train_grpo", "grpo.lm.nothing_here"])
def test_a_planted_dangling_name_fails(text):
    assert dangling(text)


def test_names_that_run_pass():
    assert dangling("``grpo.lm.rl.train_lm_grpo`` and grpo.runstore.models.run_from_sft, "
                    "grpo.lm.hf, grpo.experiments.chNN_name.module, lib/grpo/lm/grpo.py.") == []


# ----------------------------------------------------------------------------- bare names

SPAN = re.compile(r"``([^`]+?)``")
NAME_SPAN = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(\(\))?")
CONSTANT = re.compile(r"[A-Z][A-Z0-9_]+")               # two characters or more
SNAKE = re.compile(r"[a-z_][a-z0-9_]*")

# Names the library's docstrings write that are not names of its code: what each one is.
NOT_CODE = {
    "RETRAIN": "a page's switch, a variable of the chapters' code cells",
    "grpo_small_task_cpu": "a key of book/references.bib",
    "pool_greedy": "a key of a run's evaluations, built as 'pool_' + the reading",
    "pool_sampled": "a key of a run's evaluations, built as 'pool_' + the reading",
    "report_to": "a field of TRL's GRPOConfig",
    "save_strategy": "a field of TRL's GRPOConfig",
}


def prose(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring (module, class, function) and comment in ``source``."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if ast.get_docstring(node, clean=False) is not None:
                out.append((node.body[0].lineno, node.body[0].value.value))
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    out += [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    return out


def code_names(source: str) -> set[str]:
    """Every name ``source``'s code has (its docstrings left out): names defined, assigned, read
    or imported, attributes, parameters, keyword arguments, and string constants that are names."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and ast.get_docstring(node, clean=False) is not None}
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
        elif isinstance(node, ast.alias):
            out |= set(node.name.split(".")) | {node.asname or ""}
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value.isidentifier() and id(node) not in docstrings):
            out.add(node.value)
    return out


def checked_name(span: str) -> str:
    """The name a backquoted ``span`` points at, when the rule checks it (the module docstring),
    else ''."""
    match = NAME_SPAN.fullmatch(span)
    if not match:
        return ""
    name = span.removesuffix("()").rpartition(".")[2]
    looks = CONSTANT.fullmatch(name) or (SNAKE.fullmatch(name) and "_" in name)
    return name if match.group(1) or looks else ""


def unresolved_names(sources: dict[str, str], not_code=NOT_CODE) -> list[str]:
    """``path:line: name`` for every name the docstrings and comments of ``sources`` (a path ->
    source, the package's modules) write that looks like a name of the package and is none of
    its code's (``code_names``), the modules' own names counted; ``not_code`` excepted."""
    known = set(not_code)
    for path, source in sources.items():
        known |= set(Path(path).with_suffix("").parts) | code_names(source)
    out = []
    for path, source in sources.items():
        for line, text in prose(source):
            for match in SPAN.finditer(text):
                name = checked_name(match.group(1))
                if name and name not in known:
                    at = line + text[:match.start()].count("\n")
                    out.append(f"{path}:{at}: ``{match.group(1)}``")
    return out


def library_sources() -> dict[str, str]:
    return {str(p.relative_to(REPO)): p.read_text() for p in sorted(LIB.rglob("*.py"))}


def test_every_name_the_librarys_docstrings_write_is_in_its_code():
    found = unresolved_names(library_sources())
    assert not found, "\n".join(found)


def test_each_name_not_in_the_code_is_still_written_and_still_not_code():
    sources = library_sources()
    written = {checked_name(span) for source in sources.values() for _, text in prose(source)
               for span in SPAN.findall(text)}
    code = set().union(*map(code_names, sources.values()))
    assert set(NOT_CODE) <= written, f"no docstring writes {set(NOT_CODE) - written}: drop them"
    assert not set(NOT_CODE) & code, f"{set(NOT_CODE) & code} are names of the code: drop them"


MODULE = '''"""The decided runs: ``PASS_K_SEED`` seeds the pass@k samples, every ``EVAL_EVERY`` steps."""
PASS_K_SEED, EVAL_EVERY = 4321, 100


def run(spec, max_new_tokens=64):
    """Run ``spec`` (``spec.seed``) with ``max_new_tokens``; logs ``cpu_s`` and ``"token"``
    counts; ``cfg.beta > 0`` adds the KL; ``fn(rewards)``; ``model``, ``data/runs/``, ``1e5``,
    ``NAME.json``, ``run()``, ``PASS_K_SEED``."""
    return {"cpu_s": 0.0}   # the row's ``cpu_s``, read by ``run``
'''


@pytest.mark.parametrize("planted", [
    '"""For the training prompt, ``PASS_K`` samples of each pass@k problem."""\n',
    "x = 1   # (env steps, actor state_dict), every ``snapshot_every``\n",
    '"""How many: ``design.DESIGN.pass_at_k_sample``."""\n',
    '"""Its samples come from ``draw()``."""\n',
    '"""A knob no code has: ``learning_rate``."""\n',
    '"""Settings: ``RETRAIN``."""\n',                 # NOT_CODE is the library's, not this one's
])
def test_a_planted_name_no_code_has_fails(planted):
    found = unresolved_names({"lib/grpo/x/runs.py": MODULE, "lib/grpo/x/more.py": planted},
                             not_code={})
    assert len(found) == 1 and found[0].startswith("lib/grpo/x/more.py:1: "), found


def test_argument_names_literals_expressions_and_words_pass():
    assert unresolved_names({"lib/grpo/x/runs.py": MODULE}, not_code={}) == []
    # a module's name resolves, and so does a name from another module of the package
    assert unresolved_names({"lib/grpo/x/four_way.py": MODULE,
                             "lib/grpo/x/design.py": '"""Read by ``four_way`` (``EVAL_EVERY``)."""\n'},
                            not_code={}) == []
