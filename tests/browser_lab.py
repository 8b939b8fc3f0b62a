"""The Jupyter route in a real browser: a chapter in JupyterLab, before and after Run All.

Run by `make browser` (part of `make test`) beside tests/browser_site.py, never by `make unit` (the
file name does not match test_*.py). It starts JupyterLab as `make lab` does (its flags, read from
make's dry run, and the settings overrides `make lab` installs), offline on a free local port,
serving a temporary copy of the chapter: the notebook on disk is never opened, and the chapter's
results go to a copy of data/results (GRPO_RESULTS_DIR), so the tree stays as it was. Debian's
chromium (headless, found or installed as for the site's test) opens the chapter and

  * before any kernel runs: no dialog or pop-up over the page, and every markdown cell shows its
    prose: no MyST role or directive JupyterLab cannot render (raw role syntax in the text, or a
    role or directive jupyterlab-myst does not know, which it would show as its bare content or
    an "Unknown Directive" box), and every {eval} role shows the value stored in the notebook;
  * after Run All: no error output, every figure drawn, every widget view rendered (no "Error
    displaying widget"),
    every {eval} role shows the kernel's value, and that value is the one stored (nbval's values);
  * throughout: no JavaScript error and no request leaving localhost.

Screenshots of the chapter's first glued paragraph before and after Run All, and of its first
widget after, go to _build/screenshots/lab__NN_name-*.png. BOOK_LAB_NOTEBOOK and
BOOK_LAB_SCREENSHOTS override the chapter and the folder (tests/browser_lab_selftest.py).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import browser_site  # noqa: E402

ROOT = HERE.parent
# chapter 2: glued prose, citations, an admonition and a slider panel, and Run All in ~20 s
# (chapter 4, with four times the glued numbers, passes too and takes a minute more)
NOTEBOOK = Path(os.environ.get("BOOK_LAB_NOTEBOOK", ROOT / "chapters" / "02_reinforce.ipynb"))
SHOTS = Path(os.environ.get("BOOK_LAB_SCREENSHOTS", ROOT / "_build" / "screenshots"))
TOKEN = "booklabtest"
OPEN_TIMEOUT_S = 240             # JupyterLab's bundle on a loaded 2-core machine
RUN_ALL_TIMEOUT_S = 600

# The notebook as JupyterLab holds it: for each cell its kind, what its markdown renders to, the
# MyST nodes jupyterlab-myst did not know, its {eval} results and outputs, and widget views.
STATE_JS = r"""() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const walk = (node, out) => {
    if (!node || typeof node !== 'object') return out;
    if (node.type === 'mystRole' || node.type === 'mystDirective')
      out.push(`{${node.name}}` + (node.value ? '`' + String(node.value).slice(0, 40) + '`' : ''));
    if (node.type === 'inlineExpression') out.push('eval:' + node.value);
    for (const c of node.children || []) walk(c, out);
    return out;
  };
  return panel.content.widgets.map((cell, i) => {
    const type = cell.model.type;
    const out = {i, type};
    if (type === 'markdown') {
      const nodes = walk(cell.fragmentMDAST, []);
      out.unknown = nodes.filter(n => !n.startsWith('eval:'));
      out.evals = nodes.filter(n => n.startsWith('eval:')).map(n => n.slice(5));
      out.results = (cell.model.getMetadata('user_expressions') || []).map(e => ({
        expression: e.expression, status: e.result.status,
        text: e.result.status === 'ok' ? (e.result.data || {})['text/plain']
                                       : e.result.ename + ': ' + e.result.evalue}));
      const shown = cell.node.querySelector('.jp-RenderedMarkdown, .myst');
      out.rendered = !!shown && cell.rendered;
      // role syntax left as text: `{name}` right before a code span (or a backtick)
      out.rawRoles = shown ? (shown.innerHTML.match(/\{[\w:-]+\}(?:<code[^>]*>|`)[^<`]{0,40}/g) || [])
                               .map(m => m.replace(/<code[^>]*>/, '`')) : [];
      out.unshown = shown ? [...shown.querySelectorAll('code')].map(c => c.innerText)
                                 .filter(t => out.evals.includes(t)) : [];
      const errors = '[data-mime-type="application/vnd.jupyter.stderr"], .myst-RenderedExpressionError';
      out.errors = shown ? [...shown.querySelectorAll(errors)].map(e => e.innerText.slice(0, 80)) : [];
      out.unknownBoxes = [...cell.node.querySelectorAll('.myst-exercise-title')]
                           .map(e => e.innerText).filter(t => /Unknown Directive|Unknown Role/i.test(t));
    } else if (type === 'code') {
      const outputs = cell.model.outputs.toJSON();
      out.errorOutputs = outputs.filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`);
      out.widgets = outputs.filter(o => (o.data || {})['application/vnd.jupyter.widget-view+json']).length;
      const area = cell.node.querySelector('.jp-OutputArea');
      out.widgetViews = area ? area.querySelectorAll('.jp-OutputArea-output .jupyter-widgets').length : 0;
      out.widgetErrors = area && /Error displaying widget/.test(area.innerText) ? 1 : 0;
      out.images = outputs.filter(o => (o.data || {})['image/png']).length;
      out.drawnImages = area ? [...area.querySelectorAll('img')]
        .filter(m => m.complete && m.naturalWidth > 0 && m.getBoundingClientRect().height > 0).length : 0;
    }
    return out;
  });
}"""

def lab_command(port: int, root: Path) -> tuple[list[str], dict]:
    """`make lab`'s command (from make's dry run, as tests/test_make_lab.py reads it), serving
    ``root`` on ``port`` offline, with no browser of its own and the app exposed to the test."""
    dry = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True)
    cmd = next(ln for ln in dry.stdout.splitlines() if "jupyter lab" in ln).split()
    env_assignments = []
    while "=" in cmd[0]:
        env_assignments.append(cmd.pop(0))
    args = [str(ROOT / cmd[0])] + [a for a in cmd[1:] if a.startswith("--") and a != "lab"]
    args.insert(1, "lab")
    args += ["--no-browser", f"--port={port}", "--ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
             f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
             "--ServerApp.open_browser=False"]
    env = dict(os.environ, **dict(a.split("=", 1) for a in env_assignments))
    # the user's own settings and workspaces stay out of it, and nothing is written to ~/.jupyter
    env.update(JUPYTERLAB_SETTINGS_DIR=str(root.parent / "user-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(root.parent / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(root.parent / "runtime"),
               GRPO_RESULTS_DIR=str(root.parent / "results"))
    return args, env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cell_failures(state: list[dict], stored: dict, when: str) -> list[str]:
    """What is wrong in the notebook's cells, ``when`` ('before' or 'after' Run All)."""
    out = []
    for c in state:
        where = f"[{when}] cell {c['i']}"
        if c["type"] == "markdown":
            if not c["rendered"]:
                out.append(f"{where}: markdown not rendered")
            out += [f"{where}: a role or directive JupyterLab does not render: {u}" for u in c["unknown"]]
            out += [f"{where}: raw role syntax in the rendered text: {m}" for m in c["rawRoles"]]
            out += [f"{where}: an {{eval}} shows no value: {u}" for u in c["unshown"]]
            out += [f"{where}: an {{eval}} shows an error: {e}" for e in c["errors"]]
            out += [f"{where}: {b}" for b in c["unknownBoxes"]]
            got = [r["expression"] for r in c["results"]]
            if sorted(got) != sorted(c["evals"]):
                out.append(f"{where}: {{eval}} roles without a result: "
                           f"{sorted(set(c['evals']) - set(got))}")
            for r in c["results"]:
                want = stored.get(c["i"], {}).get(r["expression"])
                if r["status"] != "ok":
                    out.append(f"{where}: {{eval}}`{r['expression']}` failed: {r['text']}")
                elif want is not None and r["text"] != want:
                    out.append(f"{where}: {{eval}}`{r['expression']}` shows {r['text']!r}, "
                               f"the notebook stored {want!r}")
        elif c["type"] == "code" and when == "after":
            out += [f"{where}: error output: {e}" for e in c["errorOutputs"]]
            if c["drawnImages"] < c["images"]:
                out.append(f"{where}: {c['images'] - c['drawnImages']} of {c['images']} figures "
                           f"not drawn")
            if c["widgetErrors"] or c["widgetViews"] < c["widgets"]:
                out.append(f"{where}: a widget failed to render ({c['widgetViews']} of "
                           f"{c['widgets']} views drawn)")
    return out


def stored_results(nb: dict) -> dict[int, dict[str, str]]:
    """The {eval} results the notebook stores, by cell index and expression."""
    return {i: {e["expression"]: e["result"]["data"]["text/plain"]
                for e in cell.get("metadata", {}).get("user_expressions", [])
                if e["result"].get("status") == "ok"}
            for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "markdown"}


def overlays(page) -> list[str]:
    """Dialogs and toasts over the page (the news question, a kernel or build prompt)."""
    return page.evaluate("""() => [...document.querySelectorAll(
        '.jp-Dialog, .Toastify__toast, .jp-toast-message, [role="dialog"]')]
        .filter(e => e.offsetParent !== null).map(e => e.innerText.trim().slice(0, 100))""")


def shoot(page, cell_index: int | None, path: Path):
    if cell_index is not None:
        page.evaluate("i => window.jupyterapp.shell.currentWidget.content.widgets[i].node"
                      ".scrollIntoView({block: 'start'})", cell_index)
        page.wait_for_timeout(400)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))


def test_a_chapter_reads_in_jupyterlab_before_and_after_run_all(tmp_path):
    chromium, why = browser_site.chromium_path()
    if chromium is None:
        browser_site.loud_skip(why)
    try:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_site.loud_skip("playwright is not installed (it is pinned in requirements.txt)")
    source_bytes = NOTEBOOK.read_bytes()
    nb = json.loads(source_bytes)
    stored = stored_results(nb)
    git_before = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True,
                                text=True).stdout
    served = tmp_path / "lab"
    served.mkdir()
    shutil.copy(NOTEBOOK, served / NOTEBOOK.name)
    shutil.copytree(ROOT / "data" / "results", tmp_path / "results")
    port = free_port()
    cmd, env = lab_command(port, served)
    log = open(tmp_path / "lab.log", "w")
    server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    failures, notes, timings = [], [], {}
    name = NOTEBOOK.stem
    try:
        deadline = time.time() + 90
        while True:
            if server.poll() is not None:
                pytest.fail(f"jupyter lab exited with {server.returncode}:\n"
                            f"{(tmp_path / 'lab.log').read_text()[-3000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    pytest.fail("jupyter lab did not answer within 90 s")
                time.sleep(0.5)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                         args=browser_site.CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})

            def route(r):
                if not r.request.url.startswith((f"http://127.0.0.1:{port}/", "data:", "blob:",
                                                 f"ws://127.0.0.1:{port}/")):
                    failures.append(f"request leaving localhost: {r.request.url}")
                    return r.abort()
                return r.continue_()

            page.route("**/*", route)
            page.on("pageerror", lambda e: failures.append(f"JavaScript error: {e}"))
            page.on("console", lambda m: notes.append(m.text[:160]) if m.type == "error" else None)
            start = time.time()
            page.goto(f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOK.name}?token={TOKEN}",
                      wait_until="commit", timeout=OPEN_TIMEOUT_S * 1000)
            page.wait_for_function(
                "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                " const k = w && w.sessionContext && w.sessionContext.session"
                " && w.sessionContext.session.kernel; return k && k.status === 'idle'"
                " && w.content.widgets.length > 0; }", timeout=OPEN_TIMEOUT_S * 1000)
            try:                                 # every markdown cell rendered (slow when loaded)
                page.wait_for_function(f"() => ({STATE_JS})().every(c => c.type !== 'markdown'"
                                       " || c.rendered)", timeout=OPEN_TIMEOUT_S * 1000)
            except PlaywrightTimeout:
                pass                             # cell_failures names the cells
            page.wait_for_timeout(2500)          # toasts would show by now
            timings["open_wall_s"] = time.time() - start
            failures += [f"[before] a dialog or pop-up over the page: {o}" for o in overlays(page)]
            state = page.evaluate(STATE_JS)
            failures += cell_failures(state, stored, "before")
            glued = [c for c in state if c["type"] == "markdown" and c["evals"]]
            glued_cell = max(glued, key=lambda c: len(c["evals"]))["i"] if glued else None
            widget_cell = next((c["i"] for c in state if c["type"] == "code" and c["widgets"]), None)
            shoot(page, glued_cell, SHOTS / f"lab__{name}-before.png")

            start = time.time()
            ran = page.evaluate("async () => await window.jupyterapp.commands.execute("
                                "'notebook:run-all-cells')")
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"
                " === 'idle'", timeout=RUN_ALL_TIMEOUT_S * 1000)
            page.wait_for_timeout(2500)          # the last {eval} replies and widget views
            try:                                 # figures drawn (a loaded machine is slow)
                page.wait_for_function(f"() => ({STATE_JS})().every(c => c.type !== 'code'"
                                       " || c.drawnImages >= c.images)", timeout=60_000)
            except PlaywrightTimeout:
                pass                             # cell_failures names the cells
            timings["run_all_wall_s"] = time.time() - start
            if ran is False:
                failures.append("Run All stopped before the last cell")
            state = page.evaluate(STATE_JS)
            failures += cell_failures(state, stored, "after")
            failures += [f"[after] a dialog or pop-up over the page: {o}" for o in overlays(page)]
            shoot(page, glued_cell, SHOTS / f"lab__{name}-after.png")
            if widget_cell is not None:
                shoot(page, widget_cell, SHOTS / f"lab__{name}-after-widget.png")
            browser.close()
    except Exception:
        print((tmp_path / "lab.log").read_text()[-4000:], file=sys.stderr)   # why it did not open
        raise
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    if NOTEBOOK.read_bytes() != source_bytes:
        failures.append(f"{NOTEBOOK} changed on disk")
    git_after = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True,
                               text=True).stdout
    if git_after != git_before:
        failures.append(f"git status changed:\n{git_before}\n->\n{git_after}")
    n_evals = sum(len(c.get("evals", [])) for c in state)
    print(f"\n{NOTEBOOK.name} in JupyterLab: {len(state)} cells, {n_evals} {{eval}} roles, "
          f"{sum(c.get('widgets', 0) for c in state)} widget views; opened in "
          f"{timings.get('open_wall_s', 0):.1f} s, Run All in {timings.get('run_all_wall_s', 0):.1f} s; "
          f"{len(notes)} console errors (reported, not failed): {notes[:3]}")
    assert not failures, f"{NOTEBOOK.name}:\n  " + "\n  ".join(failures[:40])
