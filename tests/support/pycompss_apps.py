"""Running the PyCOMPSs applications of tests/compat/compat_apps/ as ``taskflow run --compat
pycompss`` does, and reading what they print (``RESULT <python literal>``), the closing line
runcompss prints (``DASHES``) and their journal: the helpers of test_compat_pycompss.py and
test_compat_semantics.py."""
from __future__ import annotations

import ast
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from support.paths import TESTS

APPS = os.path.join(TESTS, "compat", "compat_apps")
DASHES = "-" * 60
needs_mpi = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed")


def run_app(app: str, *args: str, cwd, options: tuple[str, ...] = ("--workers", "2"),
            compat: bool = True, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "taskflow", "run"]
    if compat:
        cmd += ["--compat", "pycompss"]
    cmd += [*options, os.path.join(APPS, app), *args]
    return subprocess.run(cmd, cwd=str(cwd), capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def result(r: subprocess.CompletedProcess[str]) -> dict:
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            value = ast.literal_eval(line[len("RESULT "):])
            return dict(value) if isinstance(value, list) else value
    raise AssertionError(f"no RESULT line\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")


def ok(r: subprocess.CompletedProcess[str]) -> dict:
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.stdout.rstrip().endswith(DASHES), r.stdout
    assert "Error running application" not in r.stdout
    return result(r)


def journal(cwd) -> sqlite3.Connection:
    runs = os.path.join(str(cwd), ".taskflow", "runs")
    (run,) = [d for d in os.listdir(runs) if os.path.isdir(os.path.join(runs, d))]
    return sqlite3.connect(os.path.join(runs, run, "journal.db"))
