"""Benchmarks write data/bench/ one way (bench/benchfile.py): each file carries the fingerprint of
the machine that measured it, and no bench script writes a file around it."""
import json
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
from benchfile import write_bench  # noqa: E402


def test_a_bench_file_carries_the_machine_and_merges_only_when_asked(tmp_path):
    path = write_bench(tmp_path / "x.json", {"a": 1.5})
    record = json.loads(path.read_text())
    assert record["a"] == 1.5 and {"cpu", "flags", "numpy_simd", "openblas_core",
                                   "torch_capability"} <= set(record["fingerprint"])
    write_bench(path, {"b": 2}, merge=True)
    assert set(json.loads(path.read_text())) >= {"a", "b", "fingerprint"}
    write_bench(path, {"b": 3})
    assert "a" not in json.loads(path.read_text())
    with pytest.raises(ValueError, match="fingerprint"):
        write_bench(path, {"fingerprint": {}})
    with pytest.raises(ValueError, match="json"):
        write_bench(tmp_path / "x.txt", {"a": 1})


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py") if p.name != "benchfile.py"))
def test_no_bench_script_writes_around_write_bench(script):
    source = (BENCH / script).read_text()
    assert not re.search(r"\.write_text\(|json\.dump\(|open\([^)]*['\"]w", source), \
        f"{script} writes a file itself: data/bench/ files go through benchfile.write_bench"
    if "data\" / \"bench\"" in source or "data/bench" in source.split('"""', 2)[-1]:
        assert "write_bench" in source or "write_trainer_bench" in source, script
