"""``make full``'s commands, in the Makefile's order: the chapter, what each writes, the test that
replays it, and the CPU time its stored runs recorded (each run's own ``cpu_s``).

One row is partly an estimate, and says so in the README: chapter 12's addition grids store no CPU
time (its switch states about 12 CPU-minutes).
``tests/test_readme.py`` holds README.md's ``make full`` table to these figures and to the Makefile.

    python tests/full_runs.py        # the figures, in CPU-minutes
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "data" / "runs"
CORES = 2


def _read(path: str) -> dict:
    return json.loads((RUNS / path).read_text())


def _each(pattern: str) -> float:
    return sum(json.loads(p.read_text())["cpu_s"] for p in sorted(RUNS.glob(pattern)))


def _credit() -> float:
    return sum(r["cpu_s"] for arm in _read("06_lander/credit.json")["arms"].values()
               for r in arm["runs"].values())


def _noise() -> float:
    return sum(m["train_cpu_s"] + sum(c["cpu_s"] for c in m["checkpoints"])
               for m in _read("06_lander/gradient_noise.json")["methods"].values())


GRIDS_12_MIN = 12          # chapter 12's addition grids: no CPU stored (its RETRAIN switch's figure)


@dataclass(frozen=True)
class FullRun:
    command: str                      # as the Makefile runs it, after $(BIN)/
    chapter: int
    test: str                         # the test that replays it
    workers: int                      # processes on the 2 cores (1: runs alone)
    cpu_minutes: Callable[[], float]  # recorded by its stored runs (plus a stated estimate)


FULL = [
    FullRun("python -m grpo.experiments.ch07_small_lm.sft_run", 7, "tests/test_lm_sft_run.py", 1,
            lambda: _read("07_small_lm/sft.json")["cpu_s"] / 60),
    FullRun("python -m grpo.experiments.ch10_word_problems.long_runs --all --workers 2", 10,
            "tests/test_stored_runs.py", 2, lambda: _each("10_word_problems/*.json") / 60),
    FullRun("python -m grpo.experiments.ch08_grpo_math.main_runs", 8, "tests/test_lm_main_runs.py",
            2, lambda: sum(r["cpu_s"] for r in _read("08_grpo_math/main/runs.json")["runs"]) / 60),
    FullRun("python -m grpo.experiments.ch07_small_lm.answer_only", 7,
            "tests/test_lm_answer_only.py", 1,
            lambda: _read("07_small_lm/answer_only.json")["cpu_s"] / 60),
    FullRun("python -m grpo.experiments.ch11_pretrained.smollm2_runs --all --workers 2", 11,
            "tests/test_pretrained_runs.py", 2, lambda: _each("11_pretrained/*.json") / 60),
    FullRun("python -m grpo.experiments.ch11_pretrained.format_runs --all --workers 2", 11,
            "tests/test_ch11_design.py", 2, lambda: _each("11_pretrained/decided/*.json") / 60),
    FullRun("python -m grpo.experiments.ch11_pretrained.four_way_runs --all --workers 2", 11,
            "tests/test_ch11_four_way_runs.py", 2,
            lambda: _each("11_pretrained/four_way/*.json") / 60),
    FullRun("python -m grpo.experiments.ch06_lander.main_runs --workers 2", 6,
            "tests/test_lander_main_runs.py", 2,
            lambda: sum(r["cpu_s"] for r in _read("06_lander/main/runs.json")["runs"]) / 60),
    FullRun("python -m grpo.experiments.ch06_lander.credit_study --all --workers 2", 6,
            "tests/test_stored_lander.py", 2, lambda: _credit() / 60),
    FullRun("python -m grpo.experiments.ch06_lander.gradient_noise --all --workers 2", 6,
            "tests/test_lander_noise.py", 2, lambda: _noise() / 60),
    FullRun("python -m grpo.experiments.ch12_practice.failure_runs --workers 2", 12,
            "tests/test_practice_12.py", 2,
            lambda: sum(r.get("cpu_s", 0) for r in _read("12_practice/aggregation.json")["runs"])
            / 60 + GRIDS_12_MIN),
]


def makefile_commands(makefile: str) -> list[str]:
    """The commands of the Makefile's ``full`` target, ``$(BIN)/`` dropped."""
    body = re.search(r"^full:.*\n((?:\t.*\n)+)", makefile, re.M)
    if body is None:
        raise ValueError("the Makefile has no 'full' target")
    return [line.strip().replace("$(BIN)/", "") for line in body.group(1).splitlines()]


def totals(minutes: list[float], workers: list[int]) -> tuple[float, float]:
    """(CPU-hours, wall hours on 2 cores): a command with workers runs on both cores, one without
    on one, and the commands run one after another."""
    return sum(minutes) / 60, sum(m / min(w, CORES) for m, w in zip(minutes, workers)) / 60


def main() -> None:
    rows = [(f.command, round(f.cpu_minutes())) for f in FULL]
    for command, minutes in rows:
        print(f"{minutes:6d}  {command}")
    cpu_h, wall_h = totals([m for _, m in rows], [f.workers for f in FULL])
    print(f"{sum(m for _, m in rows):6d}  CPU-minutes: {cpu_h:.1f} CPU-hours, {wall_h:.1f} hours "
          f"on {CORES} cores")


if __name__ == "__main__":
    main()
