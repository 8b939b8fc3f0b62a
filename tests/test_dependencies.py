"""``pip install -e .`` gives a package that imports: every third-party module the lib imports at
the top of a module is a dependency in pyproject.toml, every one it imports inside a function is a
dependency or an optional extra, and each pin is requirements.txt's."""
import ast
import functools
import importlib.metadata as metadata
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

REPO = Path(__file__).resolve().parents[1]


def name_of(requirement: str) -> str:
    """A requirement's distribution name, normalised (``gymnasium[box2d]==1.4.0`` -> gymnasium)."""
    return re.split(r"[\[<>=!~; ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def pins(lines) -> dict[str, str]:
    """``{name: version}`` of the ``name==version`` requirements among ``lines``."""
    out = {}
    for line in lines:
        m = re.match(r"\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;#]+)", line)
        if m:
            out[name_of(m.group(1))] = m.group(3)
    return out


def declared(pyproject: dict) -> tuple[set[str], set[str]]:
    """``(dependencies, optional)``: the distribution names pyproject.toml declares."""
    project = pyproject["project"]
    optional = {name_of(r) for extra in project.get("optional-dependencies", {}).values()
                for r in extra}
    return {name_of(r) for r in project["dependencies"]}, optional


def third_party_imports(source: str) -> tuple[set[str], set[str]]:
    """``(at the top, inside functions)``: the top-level modules ``source`` imports, neither the
    standard library's nor grpo's (a top-level ``if`` or ``try`` still runs on import)."""
    tree = ast.parse(source)
    top, body = set(), list(tree.body)
    while body:
        node = body.pop()
        if isinstance(node, (ast.If, ast.Try)):
            body += node.body + node.orelse + getattr(node, "finalbody", [])
            body += [s for h in getattr(node, "handlers", []) for s in h.body]
        top.add(id(node))
    found = ({}, {})
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        for name in (n.split(".")[0] for n in names):
            if name and name not in sys.stdlib_module_names and name not in ("grpo", "__future__"):
                found[id(node) not in top][name] = True
    return set(found[0]), set(found[1]) - set(found[0])


@functools.lru_cache(maxsize=1)
def installed() -> dict:
    return metadata.packages_distributions()


def distributions(module: str) -> set[str]:
    """The installed distributions that provide ``module`` (normalised names)."""
    return {d.lower().replace("_", "-") for d in installed().get(module, [])}


def undeclared(sources, dependencies: set[str], optional: set[str]) -> list[str]:
    out = []
    for where, source in sources:
        top, inside = third_party_imports(source)
        for module in sorted(top | inside):
            dists = distributions(module) or {module.lower()}
            allowed = dependencies if module in top else dependencies | optional
            if not dists & allowed:
                kind = "dependencies" if module in top else "dependencies or an optional extra"
                out.append(f"{where} imports {module} ({'/'.join(sorted(dists))}): not in "
                           f"pyproject.toml's {kind}")
    return out


def lib_sources():
    return [(str(p.relative_to(REPO)), p.read_text()) for p in sorted((REPO / "lib").rglob("*.py"))]


def test_every_third_party_import_of_the_lib_is_declared():
    dependencies, optional = declared(tomllib.loads((REPO / "pyproject.toml").read_text()))
    sources = lib_sources()
    assert len(sources) > 40
    problems = undeclared(sources, dependencies, optional)
    assert not problems, "\n".join(problems)


def test_the_pins_are_requirements_txt_pins():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    ours = pins([*project["dependencies"], *(r for extra in project["optional-dependencies"].values()
                                             for r in extra)])
    theirs = pins((REPO / "requirements.txt").read_text().splitlines())
    assert ours and {k: v for k, v in ours.items() if theirs.get(k) != v} == {}


@pytest.mark.parametrize("source, found", [
    ("import requests\n", "requests"),                         # a module the pyproject lacks
    ("def f():\n    import transformers\n", "transformers"),    # lazy, but no extra declares it
    ("import numpy as np\nimport matplotlib.pyplot as plt\n", None),
    ("def f():\n    import json\n    from grpo import checks\n", None),
])
def test_a_planted_undeclared_import_fails(source, found):
    problems = undeclared([("planted.py", source)], {"numpy", "matplotlib"}, {"trl"})
    assert problems == [] if found is None else (len(problems) == 1 and found in problems[0])
