"""The book re-executes to the same results whichever kernels a CPU picks (README, "Reproducible on
any x86-64 CPU"). A sample of it (``portability_probe.py``: a GRPO run's and an SFT run's first
iterations, a PPO and a GRPO lander run's first updates) and one short chapter are re-run under the
book's pins and under two other sets of kernel paths, and must give the same result
(``grpo.book.results.mismatches``: equal counts and returns, floats within 1e-9):

- ``generic``: the slowest, most portable paths: ATen's default (no AVX) kernels, MKL's
  COMPATIBLE branch, oneDNN at SSE4.1, NumPy's baseline loops only, OpenBLAS's Nehalem kernels;
- ``native``: no pins at all, so each library takes the widest path this CPU has (AVX-512 where
  present) and OpenBLAS its own detected core.

On another CPU the kernels differ the way they differ between these pin sets, so a result that
survives them survives a reader's machine. The last test shows the comparison is not blind: a
learning rate changed by one part in a million is caught.
"""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from filelock import FileLock

from grpo.book.results import mismatches

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "portability_probe.py"
CHAPTER = ROOT / "chapters" / "04_grpo.ipynb"          # a short chapter: GRPO traced to the decimal
UNPINNED = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "NPY_DISABLE_CPU_FEATURES",
            "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def _numpy_dispatch() -> str:
    """Every NumPy SIMD target this CPU supports above the baseline (disabling them all is legal)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f))


PIN_SETS = {
    "generic": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41",
                "NPY_DISABLE_CPU_FEATURES": _numpy_dispatch(), "OPENBLAS_CORETYPE": "Nehalem"},
    "native": {key: None for key in UNPINNED},
}


def _env(pins: dict) -> dict:
    env = dict(os.environ)                 # the book's pins (conftest.py applied .ci/determinism.env)
    env.pop("MPLBACKEND", None)            # the unit tests' off-screen backend: kernels draw inline
    for key, value in pins.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "lib"), env.get("PYTHONPATH", "")])
    return env


def _probe(name: str, tmp: Path) -> dict:
    out = tmp / f"{name}.json"
    pins = PIN_SETS.get(name, {})
    run = subprocess.run([sys.executable, str(PROBE), str(out)], env=_env(pins), capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, f"the probe failed under the {name} pins:\n{run.stderr[-3000:]}"
    return json.loads(out.read_text())


def _run_probes(tmp: Path) -> dict:
    names = ["book", *PIN_SETS]
    with ThreadPoolExecutor(2) as pool:    # the book's 2 cores
        return dict(zip(names, pool.map(lambda n: _probe(n, tmp), names)))


@pytest.fixture(scope="module")
def probes(tmp_path_factory, worker_id):
    """The three probe runs, once per test session: under pytest-xdist each worker may build this
    module's fixtures, so the first one runs the probes and the others wait and read its file."""
    if worker_id == "master":                                   # no xdist
        return _run_probes(tmp_path_factory.mktemp("portability"))
    shared = tmp_path_factory.getbasetemp().parent              # this session's, shared by the workers
    with FileLock(str(shared / "portability_probes.lock")):
        done = shared / "portability_probes.json"
        if not done.is_file():
            done.write_text(json.dumps(_run_probes(tmp_path_factory.mktemp("portability"))))
        return json.loads(done.read_text())


@pytest.mark.parametrize("pins", list(PIN_SETS))
def test_the_results_do_not_depend_on_the_kernel_paths(probes, pins):
    found = mismatches(probes["book"]["results"], probes[pins]["results"])
    assert not found, f"under the {pins} pins: " + "; ".join(found[:10])


def test_the_pin_sets_really_change_the_kernels(probes):
    """The perturbations took effect: torch's capability and OpenBLAS's core differ from the book's."""
    book, generic = probes["book"]["machine"], probes["generic"]["machine"]
    assert generic["torch_capability"] == "DEFAULT" != book["torch_capability"]
    assert generic["openblas_core"] == "Nehalem"
    assert probes["native"]["machine"]["pins"].keys().isdisjoint(UNPINNED)


@pytest.mark.parametrize("pins", list(PIN_SETS))
def test_a_short_chapter_re_executes_unchanged_under_other_kernel_paths(pins):
    sanitize = str(ROOT / "tests" / "nbval_sanitize.cfg")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
                          "--nbval-current-env", "--nbval-sanitize-with", sanitize, str(CHAPTER)],
                         env=_env(PIN_SETS[pins]), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{CHAPTER.name} under the {pins} pins:\n{run.stdout[-3000:]}"


def test_the_comparison_catches_a_code_change(probes):
    """A PPO learning rate one part in a million higher is another result, not CPU noise."""
    sys.path.insert(0, str(PROBE.parent))
    from portability_probe import lander_probe
    changed = lander_probe("ppo", lr_scale=1 + 1e-6)
    assert mismatches(probes["book"]["results"]["lander ppo"], changed)
    assert not mismatches(probes["book"]["results"]["lander ppo"], lander_probe("ppo"))


def test_no_stored_output_names_an_absolute_path():
    """A clone elsewhere re-executes to a different absolute path, so nbval would fail there."""
    offenders = []
    for path in sorted([*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("book/*.ipynb")]):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            for out in cell.get("outputs", []):
                text = "".join(out.get("text", [])) + "".join(out.get("data", {}).get("text/plain", []))
                if str(ROOT) in text or "PosixPath('/" in text:
                    offenders.append(f"{path.name} cell {i}")
    assert not offenders, f"absolute paths in stored outputs: {offenders}"
