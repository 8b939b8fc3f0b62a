"""Repository-wide pytest hooks: a per-notebook timing summary at the end of an nbval run, and the
browser test's per-page table (tests/browser_site.py) at the end of `make browser`.

nbval runs each notebook as one item per cell; this adds up the cells' durations per notebook
and prints them, slowest first, so a slow chapter is visible in every `make test`. The timings
are printed only, never written to the repository (a test run must leave `git status` clean).
"""
import sys
from collections import defaultdict

_notebook_seconds: dict = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] += report.duration


def pytest_terminal_summary(terminalreporter):
    browser = sys.modules.get("browser_site") or sys.modules.get("tests.browser_site")
    if browser is not None and browser.SUMMARY:
        title = "browser test, per page (screenshots in _build/screenshots/)"
        terminalreporter.write_sep("=", title)
        for line in browser.summary_lines():
            terminalreporter.write_line(line)
    if not _notebook_seconds:
        return
    tr = terminalreporter
    tr.write_sep("=", "notebook execution times (this run, not recorded)")
    width = max(len(p) for p in _notebook_seconds)
    for path, seconds in sorted(_notebook_seconds.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{path:<{width}}  {seconds:7.1f} s")
    tr.write_line(f"{'total':<{width}}  {sum(_notebook_seconds.values()):7.1f} s")
