"""One word per idea: every run specification is one of the three kinds ``grpo.experiments`` names
(config, run spec, registry entry), and each class of each kind is named there; no library function
is named ``test_*`` (pytest would collect it); no library class takes a name TRL's classes use."""
import ast
import importlib
import re
from pathlib import Path

import pytest

import grpo.experiments

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "lib" / "grpo"
KINDS = ("config", "run spec", "registry entry")
TRL_NAMES = {"GRPOConfig", "GRPOTrainer", "PPOConfig", "PPOTrainer", "RLOOConfig", "DPOConfig",
             "SFTTrainer"}


def protocol(doc: str) -> dict[str, set[str]]:
    """``{kind: class names}`` from the protocol's table in ``grpo.experiments``' docstring."""
    table = doc.split("A run's specification", 1)[1]
    out, kind = {}, None
    for line in table.splitlines():
        head = line[4:20].strip() if line.startswith("    ") and not line.startswith("     ") \
            else ""
        if head in KINDS:
            kind = head
        if kind:
            out.setdefault(kind, set()).update(n.rsplit(".", 1)[-1] for n in
                                               re.findall(r"``(grpo\.[\w.]+)``", line))
    return out


def classes(pattern: str) -> dict[str, str]:
    """Every lib class whose name matches ``pattern``: ``{name: module}``."""
    found = {}
    for path in sorted(LIB.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and re.fullmatch(pattern, node.name):
                parts = path.relative_to(LIB.parent).with_suffix("").parts
                found[node.name] = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return found


def test_the_protocol_names_the_three_kinds_and_each_class_of_each():
    named = protocol(grpo.experiments.__doc__)
    assert set(named) == set(KINDS) and all(named.values()), named
    # a trainer's settings: every *Config class but the model's shape (GPTConfig is a network's)
    configs = set(classes(r"\w+Config")) - {"GPTConfig"}
    assert configs == named["config"], configs ^ named["config"]
    assert {"RunSpec", "Job"} == named["run spec"]


def test_every_registry_holds_one_kind_of_entry_named_by_the_protocol():
    entries = protocol(grpo.experiments.__doc__)["registry entry"]
    seen = set()
    for path in sorted((LIB / "experiments").rglob("*.py")):
        if re.search(r"^RUNS\b", path.read_text(), re.M):
            parts = path.relative_to(LIB.parent).with_suffix("").parts
            module = importlib.import_module(".".join(parts))
            kinds = {type(spec).__name__ for spec in module.RUNS.values()}
            assert len(kinds) == 1 and kinds <= entries, (module.__name__, kinds)
            seen |= kinds
    assert seen == entries


def library_test_functions(source: str) -> list[str]:
    return [n.name for n in ast.walk(ast.parse(source))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]


def test_no_library_function_is_named_like_a_test():
    found = [f"{p.relative_to(REPO)}: {name}" for p in sorted(LIB.rglob("*.py"))
             for name in library_test_functions(p.read_text())]
    assert not found, found


def test_no_library_class_takes_a_trl_name():
    clash = {name: module for name, module in classes(r"\w+").items() if name in TRL_NAMES}
    assert not clash, clash


@pytest.mark.parametrize("source, found", [("def test_floors():\n    pass\n", ["test_floors"]),
                                           ("def held_out_floors():\n    pass\n", [])])
def test_a_planted_test_named_function_is_found(source, found):
    assert library_test_functions(source) == found


def test_a_class_missing_from_the_protocol_is_found():
    doc = grpo.experiments.__doc__.replace("``grpo.lm.rl.EIConfig``, ", "")
    assert "EIConfig" not in protocol(doc)["config"]
