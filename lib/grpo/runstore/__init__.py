"""The one run store: where the experiments' stored runs live, how they are written and read back,
timed, and launched from the command line.

Every module in ``grpo.experiments`` writes through it, so every stored file is replaced
atomically (``grpo.files``: a notebook running beside ``make full`` never reads half a file) and
every missing file names the command that makes it.

    data/runs/<chapter>/   one folder per chapter (``run_dir``): JSON records and float64 weights
    scratch/runs/<chapter>/  where a run that a chapter computes because a reader changed it goes
                           (``writable``): a reader's edit never overwrites a stored run
    data/models/           checkpoints that chapters load as models (``grpo.runstore.models``)

Per-problem outcomes are stored as strings of 0/1 characters (``bits``, read back by ``unbits``):
2,000 problems x 8 samples take 16 kB, and a diff shows which problems changed.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Callable

import numpy as np

from grpo.files import write_atomically, write_text_atomically


def _repo_root() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "lib" / "grpo").is_dir():
            return parent
    raise RuntimeError(f"cannot find the repository root above {here} (no pyproject.toml beside "
                       "lib/grpo): the stored runs live in the repository's data/ folder")


DATA_DIR = _repo_root() / "data"
RUNS_DIR = DATA_DIR / "runs"
SCRATCH_DIR = _repo_root() / "scratch"   # git ignores it
STORE_ENV = "GRPO_STORE"                  # =1: a maintainer re-stores runs into data/runs/


def run_dir(chapter: str) -> Path:
    """The folder of one chapter's stored runs, ``data/runs/<chapter>``."""
    if not isinstance(chapter, str) or not chapter or "/" in chapter or chapter.startswith("."):
        raise ValueError(f"chapter is a folder name such as '08_grpo_math', got {chapter!r}")
    return RUNS_DIR / chapter


def writable(path) -> Path:
    """Where a run computed now may be written in place of ``path``: ``path`` itself when it lies
    outside ``data/runs/`` or when ``GRPO_STORE=1`` (a maintainer re-storing); otherwise its twin
    under ``scratch/runs/``, so that a chapter a reader has edited never overwrites a stored run."""
    path = Path(path).resolve()
    try:
        inside = path.relative_to(RUNS_DIR.resolve())
    except ValueError:
        return path
    return path if os.environ.get(STORE_ENV) == "1" else SCRATCH_DIR / "runs" / inside


def config_from_json(cls, fields: dict):
    """A stored config back as its frozen dataclass ``cls``, from ``dataclasses.asdict``'s dict as
    JSON kept it: lists back to tuples, and a field whose default is itself a dataclass (such as
    ``RunConfig.evaluation``) rebuilt from its dict. Unknown or missing fields are ``cls``'s own
    ``TypeError``; a ``fields`` that is not a dict is a ``ValueError``."""
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise ValueError(f"cls must be a dataclass, got {cls!r}")
    if not isinstance(fields, dict):
        raise ValueError(f"fields must be a dict (asdict of a {cls.__name__}), got "
                         f"{type(fields).__name__}")
    nested = {f.name: type(f.default) for f in dataclasses.fields(cls)
              if dataclasses.is_dataclass(f.default)}
    return cls(**{k: config_from_json(nested[k], v) if k in nested and isinstance(v, dict)
                  else tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def runs_to_write(names, registry: dict, directory: Path, again: bool = False) -> list:
    """A ``RETRAIN`` switch's work list: ``names`` (default every entry of ``registry``) less those
    already written to ``directory``, unless ``again``. A name not in ``registry`` is refused."""
    names = list(registry) if names is None else list(names)
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(f"runs: unknown {unknown}; the runs are {list(registry)}")
    return [n for n in names if again or not (Path(directory) / f"{n}.json").is_file()]


def write_json(path, payload, *, indent: int | None = 1, sort_keys: bool = False) -> Path:
    """``payload`` as JSON text at ``path`` (with a final newline), atomically; a file that already
    holds the same text is left untouched."""
    return write_text_atomically(path, json.dumps(payload, indent=indent, sort_keys=sort_keys)
                                 + "\n")


def write_json_rows(path, sections: dict, compact=()) -> Path:
    """A record of long lists, one item a line (a diff then shows which run changed): ``sections``
    maps each key to its list, in order; the items of the keys in ``compact`` are written without
    spaces."""
    def section(key, items):
        dump = ((lambda x: json.dumps(x, separators=(",", ":"))) if key in compact
                else json.dumps)
        return f"{json.dumps(key)}: [\n" + ",\n".join(dump(item) for item in items) + "]"
    return write_text_atomically(path, "{" + ",\n".join(section(k, v) for k, v in sections.items())
                                 + "}\n")


def write_weights(path, state: dict) -> Path:
    """A state dict as safetensors at ``path``, atomically, each tensor exactly as it is (float64
    stays float64)."""
    from safetensors.torch import save_file

    state = {k: v.detach().contiguous() for k, v in state.items()}
    return write_atomically(path, lambda tmp: save_file(state, str(tmp)))


def read_weights(path) -> dict:
    """The state dict stored at ``path`` by ``write_weights``."""
    from safetensors.torch import load_file

    return load_file(str(path))


def write_arrays(path, arrays: dict) -> Path:
    """NumPy arrays by name as a compressed ``.npz`` at ``path``, atomically."""
    def write(tmp):
        with open(tmp, "wb") as f:    # a file object: savez would add ".npz" to a path
            np.savez_compressed(f, **arrays)
    return write_atomically(path, write)


def read_arrays(path) -> dict:
    """The arrays stored at ``path`` by ``write_arrays``, by name."""
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files}


def read_json(path, command: str) -> dict:
    """The JSON record at ``path``; a ``FileNotFoundError`` naming ``command`` (the ``python -m``
    module that writes it) when it was never stored."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no stored run at {path}: run `python -m {command}`")
    return json.loads(path.read_text())


def bits(outcomes) -> str:
    """0/1 outcomes (any shape, read row by row) as a string of '0' and '1' characters."""
    return "".join("1" if x else "0" for x in np.asarray(outcomes).ravel())


def unbits(text: str, samples: int = 1) -> np.ndarray:
    """A ``bits`` string back to a float array: ``(problems,)``, or ``(problems, samples)``."""
    a = np.frombuffer(text.encode(), dtype=np.uint8) - ord("0")
    return a.astype(float) if samples == 1 else a.reshape(-1, samples).astype(float)


def cpu_timed(fn: Callable, *args) -> tuple:
    """``(fn(*args), CPU seconds it took in this process)``: the stored runs' cost, as each chapter
    states it (CPU time, not wall time, so a busy machine does not inflate it)."""
    cpu0 = time.process_time()
    result = fn(*args)
    return result, time.process_time() - cpu0


# A GRPO log's timings are CPU seconds under names that say so (``sample_cpu_s``, ``ref_cpu_s``,
# ``update_cpu_s``; a run's ``cpu_s``). The runs stored in data/runs/ before every time key named
# its clock carry the first three as these names, and are never re-stored: read them as CPU seconds.
STORED_TIME_KEYS = ("sample_s", "ref_s", "update_s")


def is_timing(key: str) -> bool:
    """Whether a log's ``key`` is a timing (``…_cpu_s``, ``…_wall_s``, or ``STORED_TIME_KEYS``):
    what a replay leaves out, since no two runs take the same time."""
    return key in STORED_TIME_KEYS or key in ("cpu_s", "wall_s") or key.endswith(("_cpu_s",
                                                                                  "_wall_s"))


def without_timings(log: dict) -> dict:
    """``log`` (a row, or columns) without its timings (``is_timing``)."""
    return {k: v for k, v in log.items() if not is_timing(k)}


def cpu_split(row: dict) -> dict:
    """A GRPO log row's CPU-seconds of sampling, the reference and the update, whichever names it
    was stored under: ``{"sample_cpu_s": ..., "ref_cpu_s": ..., "update_cpu_s": ...}``."""
    return {f"{part}_cpu_s": row[f"{part}_cpu_s"] if f"{part}_cpu_s" in row else row[old]
            for part, old in zip(("sample", "ref", "update"), STORED_TIME_KEYS)}


def command_line(module: str, doc: str, store: Callable, argv=None, *,
                 registry: dict | None = None, workers: int | None = None) -> None:
    """The experiments' one command line: ``python -m <module> [NAMES | --all | --list]
    [--workers N]``.

    ``store(**kwargs)`` runs and stores, returning the path(s) written; it receives ``names`` when a
    ``registry`` (name -> spec, whose ``note`` is listed) is given, and ``workers`` when a default
    worker count is."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.split("\n\n")[0])
    if registry is not None:
        parser.add_argument("names", nargs="*", help="registry entries to run (see --list)")
        parser.add_argument("--all", action="store_true", help="run every entry")
        parser.add_argument("--list", action="store_true", help="list the registry and exit")
    if workers is not None:
        parser.add_argument("--workers", type=int, default=workers,
                            help=f"worker processes (default {workers})")
    args = parser.parse_args(argv)
    kwargs = {}
    if registry is not None:
        if args.list:
            for name, spec in registry.items():
                print(f"{name:24s} {getattr(spec, 'note', '')}")
            return
        names = list(registry) if args.all else args.names
        unknown = [n for n in names if n not in registry]
        if unknown or not names:
            parser.error(f"unknown runs {unknown}; choose from {list(registry)}" if unknown
                         else "name runs or --all")
        kwargs["names"] = names
    if workers is not None:
        kwargs["workers"] = args.workers
    written = store(**kwargs)
    for path in written if isinstance(written, (list, tuple)) else [written]:
        print("wrote", path)


__all__ = ["DATA_DIR", "RUNS_DIR", "SCRATCH_DIR", "STORE_ENV", "run_dir", "writable",
           "config_from_json", "runs_to_write", "write_json",
           "write_json_rows", "write_weights",
           "read_weights", "write_arrays", "read_arrays", "read_json", "bits", "unbits",
           "cpu_timed", "STORED_TIME_KEYS", "is_timing", "without_timings", "cpu_split",
           "command_line"]
