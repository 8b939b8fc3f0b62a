"""The book's chapters as its table of contents lists them (``_toc.yml``), for the tests that
range over chapters: a chapter added to ``_toc.yml`` (the only place the build looks, under
``only_build_toc_files``) is tested without editing a count; one left out of it is not built."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST_WITH_STORED_RUNS = 6      # chapters 1-5 run in seconds; from 6 on each has its experiments


def toc_chapters() -> dict[int, Path]:
    """Chapter number -> notebook, for every ``chapters/NN_*`` the table of contents lists."""
    files = re.findall(r"^\s*-\s*file:\s*(chapters/(\d\d)_\S+)\s*$",
                       (ROOT / "_toc.yml").read_text(), re.M)
    return {int(number): ROOT / f"{path}.ipynb" for path, number in files}


def chapters_with_stored_runs() -> list[int]:
    """The chapters from ``FIRST_WITH_STORED_RUNS`` on, in order."""
    return sorted(n for n in toc_chapters() if n >= FIRST_WITH_STORED_RUNS)
