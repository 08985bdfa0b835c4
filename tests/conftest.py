"""Shared fixtures: a real local runtime in a scratch directory."""
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
