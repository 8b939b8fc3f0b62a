"""The per-notebook timing summary printed at the end of an nbval run (root conftest.py)."""
import importlib.util
from pathlib import Path
from types import SimpleNamespace

spec = importlib.util.spec_from_file_location("root_conftest",
                                              Path(__file__).resolve().parents[1] / "conftest.py")
root_conftest = importlib.util.module_from_spec(spec)
spec.loader.exec_module(root_conftest)


class Reporter:
    def __init__(self):
        self.lines = []

    def write_sep(self, sep, title):
        self.lines.append(title)

    def write_line(self, line):
        self.lines.append(line)


def test_cells_add_up_per_notebook_slowest_first(monkeypatch):
    monkeypatch.setattr(root_conftest, "_notebook_seconds", type(root_conftest._notebook_seconds)(float))
    for nodeid, seconds in [("chapters/01_a.ipynb::Cell 0", 1.0), ("chapters/02_b.ipynb::Cell 0", 2.5),
                            ("chapters/01_a.ipynb::Cell 1", 0.5), ("tests/test_x.py::test_y", 9.0)]:
        root_conftest.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=seconds))
    reporter = Reporter()
    root_conftest.pytest_terminal_summary(reporter)
    assert reporter.lines[0].startswith("notebook execution times")
    assert [line.split()[0] for line in reporter.lines[1:]] == ["chapters/02_b.ipynb",
                                                                "chapters/01_a.ipynb", "total"]
    assert reporter.lines[2].endswith("1.5 s") and reporter.lines[3].endswith("4.0 s")


def test_nothing_printed_without_notebooks(monkeypatch):
    monkeypatch.setattr(root_conftest, "_notebook_seconds", type(root_conftest._notebook_seconds)(float))
    reporter = Reporter()
    root_conftest.pytest_terminal_summary(reporter)
    assert reporter.lines == []
