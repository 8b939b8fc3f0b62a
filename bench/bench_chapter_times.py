"""Time each notebook's execution, top to bottom in a fresh kernel (run by `make bench`).

Writes data/bench/chapter_times.json, which the landing page's time-and-hardware table reads.
Afterwards every page that reads a file of data/bench/ (the landing page and the reproduction
report for these timings; chapters 6, 7, 8 and 11 and their lab notes for the other benchmarks,
which `make bench` runs before this one) is re-executed in place, so the built book shows the new
numbers and nbval checks them. Each notebook runs in its own
child process (so the kernel's peak memory can be read from
``getrusage``), under the Makefile's determinism settings; the notebooks on disk are not
rewritten. Times depend on the machine and on what else it is doing: the file records both.

    python bench/bench_chapter_times.py [NOTEBOOK ...]    # default: every chapter and book page
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from benchfile import write_bench
from grpo.book.machine import fingerprint

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "bench" / "chapter_times.json"


def run_one(path: str) -> dict:
    """Execute one notebook in a fresh kernel: wall seconds, the kernel's CPU seconds (with any
    worker processes it ran), its peak RSS, and the wall seconds of its cells tagged ``live-run``
    (the training a reader watches)."""
    import resource

    import nbformat
    import torch  # noqa: F401  (import cost is the kernel's, not ours: warm the page cache)
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=3600, kernel_name="python3", record_timing=True,
                   resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)       # the kernel, now exited
    row = {"wall_s": round(seconds, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
           "peak_memory_mb": round(usage.ru_maxrss / 1024)}
    live = [cell_seconds(c) for c in nb.cells if "live-run" in c.metadata.get("tags", [])]
    if live:
        row["live_run_wall_s"] = round(sum(live), 1)
    return row


def cell_seconds(cell) -> float:
    """Wall seconds a cell ran, from the timestamps nbclient records (``record_timing``)."""
    t = cell.metadata["execution"]
    start = datetime.datetime.fromisoformat(t["iopub.execute_input"].replace("Z", "+00:00"))
    end = datetime.datetime.fromisoformat(t["shell.execute_reply"].replace("Z", "+00:00"))
    return (end - start).total_seconds()


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(run_one(argv[1])))
        return
    notebooks = argv or notebooks_of(ROOT)
    old = json.loads(OUT.read_text()) if OUT.exists() else {"notebooks": {}}
    load_before = load_average()
    # rows measured on different machines say so: each new row names this machine's fingerprint
    machine = fingerprint()
    machine_id = hashlib.sha1(json.dumps(machine, sort_keys=True).encode()).hexdigest()[:8]
    fingerprints = {**old.get("fingerprints", {}), machine_id: machine}
    # each row keeps the time it was measured (rows from before rows had one: the file's time)
    times = {nb: {"measured": old.get("measured"), **t} for nb, t in old["notebooks"].items()}
    for nb in notebooks:
        proc = subprocess.run([sys.executable, __file__, "--one", nb], cwd=ROOT, check=True,
                              capture_output=True, text=True)
        times[nb] = {"measured": now(), "fingerprint_id": machine_id,
                     **json.loads(proc.stdout.strip().splitlines()[-1])}
        print(f"{nb}: {times[nb]['wall_s']:.1f} s ({times[nb]['cpu_s']:.1f} CPU-s), "
              f"kernel peak {times[nb]['peak_memory_mb']} MB", flush=True)
    record = {
        "measured": now(),                  # this run; each notebook's row has its own time
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "gpu": "none",
                    "python": platform.python_version(),
                    "threads": os.environ.get("OMP_NUM_THREADS", "unset")},
        "load_average_1min_at_start": load_before,
        "load_average_1min_at_end": load_average(),
        "notebooks": dict(sorted(times.items())),
        "fingerprints": dict(sorted(fingerprints.items())),
    }
    write_bench(OUT, record, sort_keys=False)
    print(f"wrote {OUT.relative_to(ROOT)}")
    if not argv:                     # a full run: refresh every page that shows a bench figure
        readers = [nb for nb in notebooks if reads_bench(ROOT / nb)]
    else:                            # one notebook timed: the pages that show the timings
        readers = [nb for nb in notebooks_of(ROOT) if "chapter_times.json" in (ROOT / nb).read_text()]
    if readers:
        subprocess.run([sys.executable, str(ROOT / ".ci" / "execute_notebooks.py"), *sorted(readers)],
                       cwd=ROOT, check=True)


def notebooks_of(root: Path) -> list[str]:
    """Every chapter and book page, as paths relative to ``root``."""
    return sorted(str(p.relative_to(root)) for p in
                  [*root.glob("book/*.ipynb"), *root.glob("chapters/[0-9][0-9]_*.ipynb")])


def reads_bench(path: Path) -> bool:
    """Whether a notebook's code reads a file of data/bench/ (a ``bench`` folder and a .json name
    in one code cell)."""
    cells = json.loads(path.read_text())["cells"]
    return any(c["cell_type"] == "code" and "bench" in "".join(c["source"])
               and ".json" in "".join(c["source"]) for c in cells)


if __name__ == "__main__":
    main(sys.argv[1:])
