"""Shared fixtures: a real local runtime in a scratch directory, and the testbeds.

The tests are grouped by area: unit/ (no node process), core/ (the programming model on
local nodes), node/ (programs and the node agent), cluster/ (SSH, Slurm, adoption,
comebacks, dial-back), compat/ (the PyCOMPSs layer and its applications), surfaces/ (what
people see: progress, pictures, monitor, serve, docs, packaging). Their shared helpers are
the package support/ (none of them a test module), importable because tests/ is put first
on sys.path here. Test modules take no helper from one another, and their basenames stay
unique (pytest's default import mode, no __init__.py in the test folders).
"""
from __future__ import annotations

import os
import sys

import pytest

import taskflow

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# The testbeds' session fixtures live here, once: a fixture imported into several test
# modules is a separate fixture in each, so a second module would set the testbed up again
# and wait forever on the lock the first one holds.
from support.container_testbed import podman  # noqa: E402,F401
from support.slurm_testbed import slurm, slurm_calls  # noqa: E402,F401
from support.ssh_testbed import ssh_hosts  # noqa: E402,F401


@pytest.fixture
def rt(tmp_path, monkeypatch):
    """A 2-slot local runtime whose files live under tmp_path."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as r:
        yield r


@pytest.fixture
def rt4(tmp_path, monkeypatch):
    """Four slots on two local node agents."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=4, nodes=2, run_dir=str(tmp_path / "runs")) as r:
        yield r
