"""Worker pools with a progress bar (lib/grpo/pool.py)."""
import os
import subprocess
import sys

import pytest

from grpo.pool import parallel_map


def test_results_come_back_in_input_order():
    assert parallel_map(abs, [-3, 1, -2, 5, -4], workers=2) == [3, 1, 2, 5, 4]


def test_bad_workers_is_a_clear_error():
    with pytest.raises(ValueError, match="workers"):
        parallel_map(abs, [1], workers=0)


BAR = "from grpo.pool import parallel_map; parallel_map(abs, [1, 2], workers=1, desc='jobs')"


@pytest.mark.parametrize("disable, shown", [("1", False), (None, True)])
def test_the_bar_is_off_under_the_books_pins_and_on_otherwise(disable, shown):
    env = {k: v for k, v in os.environ.items() if k != "TQDM_DISABLE"}
    if disable:
        env["TQDM_DISABLE"] = disable
    err = subprocess.run([sys.executable, "-c", BAR], env=env, capture_output=True, text=True,
                         check=True).stderr
    assert ("jobs: 100%" in err) == shown


@pytest.mark.parametrize("value, off", [("1", True), ("true", True), ("", False), ("0", False),
                                        (None, False)])
def test_the_notebook_bar_gets_the_setting_explicitly(monkeypatch, value, off):
    """tqdm.notebook ignores TQDM_DISABLE, so parallel_map passes disable= itself."""
    from grpo import pool
    seen = {}

    class Bar:
        def __init__(self, **kw):
            seen.update(kw)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n):
            pass

    if value is None:
        monkeypatch.delenv("TQDM_DISABLE", raising=False)
    else:
        monkeypatch.setenv("TQDM_DISABLE", value)
    monkeypatch.setattr(pool, "tqdm", Bar)
    assert pool.parallel_map(abs, [-1], workers=1) == [1]
    assert seen["disable"] is off
