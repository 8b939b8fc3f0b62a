"""Re-run chapters in place, top to bottom in a fresh kernel (what `make execute` calls), then
store the prose's {eval} results from the new outputs (.ci/jupyter_route.py, grpo.book.glued).

Run through make, which pins threads and CPU kernel paths, so stored outputs are the ones nbval
re-checks. Timing metadata is not recorded, so a re-run without changes leaves no diff. Widget
state is not stored: the static book would need require.js and the widget manager from a CDN to
show controls that cannot run without a kernel anyway, so each widget cell has a static figure
beside it instead, and the built site makes no network requests.
"""
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grpo.book.glued import to_eval_prose

# The kernels inherit this process's environment: apply the book's pins even when run by hand.
for line in (Path(__file__).resolve().parent / "determinism.env").read_text().splitlines():
    if line.strip() and not line.startswith("#"):
        key, value = line.split("=", 1)
        os.environ[key] = value

for name in sys.argv[1:]:
    path = Path(name)
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=1800, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for key in ("widgets", "jupytext", "papermill"):
        nb.metadata.pop(key, None)
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        if cell.get("outputs"):           # prints split by a pause would diff between re-runs
            merged = []
            for out in cell.outputs:
                if (merged and out.output_type == "stream" and merged[-1].output_type == "stream"
                        and merged[-1].name == out.name):
                    merged[-1].text += out.text
                else:
                    merged.append(out)
            cell.outputs = merged
        cell.id = f"cell-{i:03d}"         # stable ids: a re-run leaves no diff
        for k, out in enumerate(cell.get("outputs", [])):
            view = out.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            if view:                      # random per run, and no widget state is stored
                view["model_id"] = f"{cell.id}-widget-{k}"
    to_eval_prose(nb)                     # the {eval} results JupyterLab shows before a kernel runs
    nbformat.write(nb, path)
    print(f"{path}: executed in {time.perf_counter() - start:.1f} s", flush=True)
