"""`make lab` must start JupyterLab, also as root (containers often run as root)."""
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lab_command() -> list[str]:
    """The command `make lab` runs, read from make's dry run (so the test follows the Makefile)."""
    dry = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True)
    line = next(ln for ln in dry.stdout.splitlines() if "jupyter lab" in ln)
    return line.split()


def test_make_lab_passes_allow_root_exactly_when_root():
    cmd = _lab_command()
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_server_answers():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env_prefix, cmd = [], _lab_command()
    while "=" in cmd[0]:                      # leading VAR= assignments from the recipe
        env_prefix.append(cmd.pop(0))
    env = dict(os.environ, **dict(a.split("=", 1) for a in env_prefix))
    cmd = [str(ROOT / cmd[0])] + cmd[1:] + [
        "--no-browser", f"--port={port}", "--ip=127.0.0.1", "--ServerApp.token=booktest",
        "--ServerApp.open_browser=False"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.time() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{proc.stdout.read()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token=booktest",
                                            timeout=2) as r:
                    assert r.status == 200
                    break
            except OSError:
                if time.time() > deadline:
                    pytest.fail("jupyter lab did not answer within 60 s")
                time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token=booktest", timeout=10) as r:
            assert r.status == 200 and b"JupyterLab" in r.read()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
