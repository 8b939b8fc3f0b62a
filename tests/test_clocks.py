"""One clock, named: every time key says its clock (``…_cpu_s``, ``…_wall_s``; rates
``…_per_cpu_s``), in the library, the benches, the tests, ``data/bench/``, ``data/results/`` and the
names the pages glue into their prose; and no key is fed by two clocks. The rule is shown to fail
on planted cases.

A time key is a name with a time unit among its ``_``-separated words (``s``, ``seconds``, ``ms``,
``us``, ``h``, ``hours``, ``minutes``; ``min`` is a minimum, not a unit); the word before the unit
(after ``per`` for a rate) must be a clock, ``cpu`` or ``wall``. In Python sources a key is any
identifier-like string (an f-string's constant parts with its fields read as words), and its clock
is read from what feeds it: a value computed from ``time.process_time`` or ``runstore.cpu_timed``
is CPU time, one from ``time.perf_counter``, ``time.time`` or ``time.monotonic`` wall time.

The runs stored in ``data/runs/`` before this rule carry a GRPO log's CPU seconds under
``grpo.runstore.STORED_TIME_KEYS`` (``sample_s``, ``ref_s``, ``update_s``); they are never
re-stored, so those three names are allowed there and in code that reads them, and nowhere else.
"""
import ast
import json
import re
from pathlib import Path

import pytest

from grpo.runstore import STORED_TIME_KEYS
from test_layout import dotted

REPO = Path(__file__).resolve().parents[1]
UNITS = {"s", "sec", "secs", "seconds", "ms", "us", "h", "hours", "mins", "minutes"}
CLOCKS = {"cpu", "wall"}
CPU_CLOCKS = {"time.process_time", "process_time", "cpu_timed", "runstore.cpu_timed"}
WALL_CLOCKS = {"time.perf_counter", "perf_counter", "time.time", "time.monotonic", "monotonic"}
KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def unnamed_clock(key: str) -> str:
    """Why ``key`` is a time key without its clock, or '' (not a time key, or its clock named)."""
    words = key.lower().split("_")
    for i, word in enumerate(words):
        if word in UNITS and (i > 0 or word in ("seconds", "hours", "minutes")):
            before = words[i - 1] if i else ""
            if before not in CLOCKS:
                return f"{key!r}: a time ({word}) that does not name its clock (_cpu_ or _wall_)"
    return ""


def clock_of(key: str) -> str:
    """The clock a time key names ('cpu', 'wall'), or '' for another key."""
    words = key.lower().split("_")
    named = {words[i - 1] for i, w in enumerate(words) if w in UNITS and i and words[i - 1] in CLOCKS}
    return named.pop() if len(named) == 1 else ""


def _key_text(node) -> str:
    """An identifier-like string constant, or an f-string with its fields read as 'x'."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    else:
        return ""
    return text if KEY.fullmatch(text) and ("_" in text or text in UNITS - {"s", "h"}) else ""


def _clocks_in(node, clocked: dict) -> set:
    """The clocks an expression reads: clock calls in it, and names (or attributes) a clock fed."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = dotted(sub.func)
            found |= {"cpu"} if name in CPU_CLOCKS else {"wall"} if name in WALL_CLOCKS else set()
        elif isinstance(sub, ast.Name):
            found |= clocked.get(sub.id, set())
        elif isinstance(sub, ast.Attribute):
            found |= clocked.get(sub.attr, set())
    return found


def _own_nodes(scope):
    """The nodes of ``scope`` outside the functions (and classes) defined in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo += ast.iter_child_nodes(node)


def _clocked(scope, known: dict, names: bool = True) -> dict:
    """Names (``names``) and attributes assigned in ``scope`` itself from an expression that
    reads a clock, with the clocks they hold, on top of ``known`` (the enclosing scopes')."""
    clocked = {k: set(v) for k, v in known.items()}
    assigns = [n for n in _own_nodes(scope) if isinstance(n, (ast.Assign, ast.AugAssign,
                                                              ast.AnnAssign)) and n.value]
    for _ in range(3):                  # a name fed by a name fed by a clock, and so on
        for node in assigns:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                        and len(target.elts) == len(node.value.elts):
                    pairs = list(zip(target.elts, node.value.elts))   # a, b = f(), g()
                else:
                    pairs = [(target, node.value)]
                for t, value in pairs:
                    clocks = _clocks_in(value, clocked)
                    for n in ast.walk(t):
                        if isinstance(n, ast.Attribute) or (names and isinstance(n, ast.Name)):
                            name = n.attr if isinstance(n, ast.Attribute) else n.id
                            if clocks:
                                clocked[name] = clocked.get(name, set()) | clocks
    return clocked


def _pairs(scope) -> list:
    """(key node, value node) of every dict entry, item store and ``dict(k=v)`` in ``scope``
    itself (not in the functions it defines)."""
    pairs = []
    for node in _own_nodes(scope):
        if isinstance(node, ast.Dict):
            pairs += [(k, v) for k, v in zip(node.keys, node.values) if k is not None]
        elif isinstance(node, ast.Assign):
            pairs += [(t.slice, node.value) for t in node.targets if isinstance(t, ast.Subscript)]
        elif isinstance(node, ast.Call) and dotted(node.func) == "dict":
            pairs += [(ast.Constant(k.arg, lineno=node.lineno), k.value) for k in node.keywords
                      if k.arg]
    return pairs


def _scopes(node, known: dict, attributes: dict):
    """Every scope under ``node`` (the module, each function, lambda and class) with the clocked
    names it sees: its own and its enclosing functions', and every clocked attribute of the file."""
    clocked = _clocked(node, {**known, **attributes})
    yield node, clocked
    for child in _own_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            inherited = known if isinstance(child, ast.ClassDef) else clocked
            yield from _scopes(child, inherited, attributes)


def source_problems(source: str, where: str, allowed: frozenset = frozenset()) -> tuple[list, dict]:
    """``(problems, fed)``: every key in ``source`` that does not name its clock or is fed by the
    other clock, and ``{key: clocks that feed it}`` for the cross-file check. ``allowed``: keys
    this source may name without a clock (``STORED_TIME_KEYS``, where stored runs are read)."""
    tree, problems, fed = ast.parse(source), [], {}
    for node in ast.walk(tree):
        text = _key_text(node)
        if text and text not in allowed and unnamed_clock(text):
            problems.append(f"{where}:{node.lineno} {unnamed_clock(text)}")
    attributes: dict = {}               # self.start: an attribute is clocked file-wide
    for scope in ast.walk(tree):
        if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            for name, clocks in _clocked(scope, {}, names=False).items():
                attributes[name] = attributes.get(name, set()) | clocks
    for scope, clocked in _scopes(tree, {}, attributes):
        for key, value in _pairs(scope):
            text = _key_text(key)
            if not text:
                continue
            clocks = _clocks_in(value, clocked)
            if clocks:
                fed.setdefault(text, set()).update(clocks)
            named = clock_of(text)
            if named and clocks - {named}:
                problems.append(f"{where}:{getattr(key, 'lineno', 0)} {text!r} names the {named} "
                                f"clock but is fed by {' and '.join(sorted(clocks))} time")
    return problems, fed


def json_keys(value, path=""):
    """Every key of a JSON value, with where it sits."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield k, f"{path}/{k}"
            yield from json_keys(v, f"{path}/{k}")
    elif isinstance(value, list):
        for v in value:
            yield from json_keys(v, f"{path}[]")


def json_problems(path: Path) -> list:
    return [f"{path.relative_to(REPO)}:{where} {unnamed_clock(k)}"
            for k, where in json_keys(json.loads(path.read_text())) if unnamed_clock(k)]


GLUE = re.compile(r"""glue\(\s*(f?)(?:"([^"]+)"|'([^']+)')""")
GLUED = re.compile(r"""glue(?:\[\s*|:\w*\}`)["']?([A-Za-z][\w{}]*)""")


def glued_names(path: Path) -> list:
    """The names a page glues (``glue("name", ...)``, f-string fields read as 'x') and those its
    prose reads (``glue["name"]`` in ``{eval}``, ``{glue:}`name```)."""
    names = []
    for cell in json.loads(path.read_text())["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code":
            names += [re.sub(r"\{[^}]*\}", "x", a or b) if f else a or b
                      for f, a, b in GLUE.findall(text)]
        else:
            names += GLUED.findall(text)
    return names


def page_problems(path: Path) -> list:
    return [f"{path.relative_to(REPO)}: glued {unnamed_clock(n)}"
            for n in dict.fromkeys(glued_names(path)) if unnamed_clock(n)]


def python_files():
    files = [*sorted((REPO / "lib" / "grpo").rglob("*.py")), *sorted(REPO.glob("bench/*.py")),
             *sorted(REPO.glob("tests/*.py"))]
    return [p for p in files if p.name != Path(__file__).name]


# Where the stored runs' old names may be read: the run store, which names them once, and the
# tests that plant a stored log.
READS_STORED_RUNS = {"lib/grpo/runstore/__init__.py", "tests/test_stored_jobs.py",
                     "tests/test_runstore.py"}


def test_every_key_in_the_code_names_its_clock_and_is_fed_by_it():
    problems, fed = [], {}
    for path in python_files():
        where = str(path.relative_to(REPO))
        allowed = frozenset(STORED_TIME_KEYS) if where in READS_STORED_RUNS else frozenset()
        found, feeds = source_problems(path.read_text(), where, allowed)
        problems += found
        for key, clocks in feeds.items():
            fed.setdefault(key, set()).update(clocks)
    problems += [f"{k!r} is fed by both clocks somewhere in the code" for k, c in fed.items()
                 if len(c) > 1]
    assert not problems, "\n".join(problems)


def test_every_bench_file_names_its_clocks():
    problems = [p for path in sorted(REPO.glob("data/bench/*.json")) for p in json_problems(path)]
    assert not problems, "\n".join(problems)


# Keys a page may still write or glue without its clock (none now: every page names its clocks). A
# key listed here that no longer offends fails the test, so the list only shrinks.
PAGES_TO_RENAME: dict = {}


def _offending_keys(problems: list) -> set:
    return {re.search(r"'([^']+)'", p).group(1) for p in problems}


def test_every_results_file_and_glued_name_names_its_clock():
    found = {}
    for path in sorted(REPO.glob("data/results/*.json")):
        found[str(path.relative_to(REPO))] = _offending_keys(json_problems(path))
    for path in sorted([*REPO.glob("chapters/*.ipynb"), *REPO.glob("book/*.ipynb")]):
        found[str(path.relative_to(REPO))] = _offending_keys(page_problems(path))
    new = {f: sorted(k - PAGES_TO_RENAME.get(f, set())) for f, k in found.items()}
    stale = {f: sorted(k - found.get(f, set())) for f, k in PAGES_TO_RENAME.items()}
    assert not any(new.values()), {f: k for f, k in new.items() if k}
    assert not any(stale.values()), f"renamed already, drop from PAGES_TO_RENAME: {stale}"


def test_the_stored_runs_carry_only_the_old_cpu_names():
    """data/runs/ holds no time key without its clock but ``STORED_TIME_KEYS``, which are CPU
    seconds (``grpo.lm.rl``'s log before the rule)."""
    problems = [p for path in sorted(REPO.glob("data/runs/**/*.json"))
                for p in json_problems(path)
                if re.search(r"'([^']+)'", p).group(1) not in STORED_TIME_KEYS]
    assert not problems, "\n".join(problems[:20])


# ----------------------------------------------------------------------------- planted cases

@pytest.mark.parametrize("key", ["sample_s", "trl_step_s", "ours_steps_per_s", "seconds",
                                 "live_run_seconds", "autograd_us_per_step", "run_all_s",
                                 "g4_to_16_update_s", "logprob_head_one_group_s", "budget_h"])
def test_a_time_key_without_its_clock_fails(key):
    assert unnamed_clock(key)


@pytest.mark.parametrize("key", ["sample_cpu_s", "cpu_s", "wall_s", "steps_per_cpu_s",
                                 "ours_cpu_s_to_200", "stored_cpu_hours", "budget_cpu_h",
                                 "final_score_min", "per_seed", "speedup", "n_steps", "cpu_seconds",
                                 "update_wall_us_per_step", "sampled_tokens"])
def test_a_key_with_its_clock_or_no_time_passes(key):
    assert not unnamed_clock(key)


@pytest.mark.parametrize("source", [
    "out = {'step_s': 1.0}\n",                                            # no clock named
    "row[f'{who}_split_s'] = 2\n",                                        # an f-string key
    "import time\nt0 = time.perf_counter()\nout = {'step_cpu_s': time.perf_counter() - t0}\n",
    "import time\nt0 = time.process_time()\nd = t0\nrow['x_wall_s'] = time.process_time() - d\n",
    "import time\ndef f(self):\n    self.start = time.perf_counter()\n"
    "def g(self):\n    return dict(step_cpu_s=time.process_time() - self.start)\n",
])
def test_a_planted_clock_breach_fails(source):
    assert len(source_problems(source, "planted")[0]) == 1


def test_one_key_fed_by_two_clocks_across_files_fails():
    _, a = source_problems("import time\nt = time.process_time()\nx = {'elapsed_x': t}\n", "a")
    _, b = source_problems("import time\nt = time.perf_counter()\ny = {'elapsed_x': t}\n", "b")
    assert a == {"elapsed_x": {"cpu"}} and b == {"elapsed_x": {"wall"}}


def test_the_clocks_allowed_pass():
    source = ("import time\nt0 = time.process_time()\nw0 = time.perf_counter()\n"
              "out = {'sample_cpu_s': time.process_time() - t0, 'step_wall_s': "
              "time.perf_counter() - w0, 'steps_per_cpu_s': 3 / (time.process_time() - t0)}\n")
    assert source_problems(source, "ok") == ([], {"sample_cpu_s": {"cpu"}, "step_wall_s": {"wall"},
                                                  "steps_per_cpu_s": {"cpu"}})
    assert source_problems("log = {'sample_s': [1.0]}\n", "reads stored runs",
                           frozenset(STORED_TIME_KEYS)) == ([], {})


def test_a_glued_time_without_its_clock_fails(tmp_path):
    page = tmp_path / "p.ipynb"
    page.write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ['glue("step_s", 1)\n', 'glue(f"{who}_split_wall_s", 2)\n',
                                         "glue(f\"u_{k.split('_')[0]}_us\", 3)"]},
        {"cell_type": "markdown", "source": ["takes {eval}`glue[\"ref_s\"]` and {glue:}`x_cpu_s`"]},
    ]}))
    assert glued_names(page) == ["step_s", "x_split_wall_s", "u_x_us", "ref_s", "x_cpu_s"]
    assert [n for n in glued_names(page) if unnamed_clock(n)] == ["step_s", "u_x_us", "ref_s"]


def test_the_reproduction_reports_speed_rows_name_existing_clocked_bench_keys():
    """``data/published.json``'s speed rows read ``data/bench/`` keys: each names its clock, and
    each is there (a renamed key would turn a row into 'not measured')."""
    published = json.loads((REPO / "data" / "published.json").read_text())
    problems = []
    for item in published["speed"]:
        bench = json.loads((REPO / "data" / "bench" / f"{item['file']}.json").read_text())
        for side in ("ours", "peer"):
            key = item[side]
            if unnamed_clock(key) or key not in bench:
                problems.append(f"{item['file']}: {side} {key!r} {unnamed_clock(key) or 'missing'}")
    assert not problems, "\n".join(problems)
