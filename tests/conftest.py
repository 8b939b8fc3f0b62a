"""Apply .ci/determinism.env, so a bare `pytest` pins what `make test` pins."""
import os
from pathlib import Path

for line in (Path(__file__).resolve().parents[1] / ".ci" / "determinism.env").read_text().splitlines():
    if line.strip() and not line.startswith("#"):
        key, value = line.split("=", 1)
        os.environ[key] = value
os.environ.setdefault("MPLBACKEND", "Agg")   # unit tests draw off-screen
