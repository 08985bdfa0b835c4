"""Session fixture: a real local Slurm (munged, slurmctld, 3 slurmd) from testbed/slurm.sh.

tests/conftest.py registers it for every module (never import it into one). The
cluster comes up once per session and goes down at its end; SLURM_CONF is
set for the session. Tests are skipped, with the reason, only when the
machine cannot host it: not root, or the Slurm / munge binaries are missing
(``bash testbed/install.sh slurm-wlm munge``). A lock file
serialises sessions, since the ports and the state directory are fixed.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from support import testbed_lock

from support.paths import ROOT
SCRIPT = os.path.join(ROOT, "testbed", "slurm.sh")
TB = os.environ.get("TF_SLURM_TB", "/tmp/taskflow-slurm")
NODES = 3


class SlurmTestbed:
    def __init__(self, conf: str) -> None:
        self.conf = conf
        self.nodes = [f"n{i}" for i in range(1, NODES + 1)]
        self.controller_down = False

    def stop_controller(self) -> None:
        """slurmctld stops (SIGTERM: it saves its state); the slurmd and their jobs go on."""
        r = _sh("ctld-stop", timeout=60)
        assert r.returncode == 0, r.stderr
        self.controller_down = True

    def start_controller(self) -> None:
        """slurmctld starts again on its saved state (the jobs are still there)."""
        r = _sh("ctld-start", timeout=60)
        assert r.returncode == 0, r.stderr
        self.controller_down = False

    def squeue(self, name: str) -> dict:
        """job id -> state of the jobs called ``name`` (all states)."""
        r = subprocess.run(["squeue", "-h", "-t", "all", "-n", name, "-o", "%i|%T"],
                           capture_output=True, text=True, timeout=15)
        return dict(ln.split("|", 1) for ln in r.stdout.split() if "|" in ln)


COMMANDS = ("squeue", "sacct", "sbatch", "scancel", "scontrol", "sinfo")


@pytest.fixture
def slurm_calls(tmp_path, monkeypatch):
    """Wrappers for the Slurm commands, first on PATH: each call is a line in calls.log."""
    bindir = tmp_path / "slurm-wrappers"
    bindir.mkdir()
    calls = tmp_path / "calls.log"
    for name in COMMANDS:
        real = shutil.which(name)
        if real is None:
            continue
        w = bindir / name
        w.write_text(f'#!/bin/sh\necho "$(date +%s.%N) {name} $*" >> {calls}\nexec {real} "$@"\n')
        w.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)

    def read(name: str | None = None, since: float = 0.0) -> list[str]:
        if not calls.exists():
            return []
        out = []
        for line in calls.read_text().splitlines():
            t, _, rest = line.partition(" ")
            if float(t) >= since and (name is None or rest.split()[0] == name):
                out.append(rest)
        return out
    return read


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the Slurm testbed needs root (munged, slurmctld and slurmd run as root)"
    for b in ("munged", "slurmctld", "slurmd"):
        if not os.path.exists(f"/usr/sbin/{b}"):
            return f"{b} is not installed: bash testbed/install.sh slurm-wlm munge"
    for b in ("sbatch", "squeue", "scancel", "srun", "sinfo"):
        if shutil.which(b) is None:
            return f"{b} is not installed: bash testbed/install.sh slurm-wlm munge"
    return None


def _sh(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", SCRIPT, *args], env=dict(os.environ, TF_SLURM_TB=TB),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def slurm():
    why = _why_not()
    if why:
        pytest.skip(why)
    os.makedirs(TB, exist_ok=True)
    lock = testbed_lock.acquire(os.path.join(os.path.dirname(TB), "taskflow-slurm.lock"), "Slurm")
    old = os.environ.get("SLURM_CONF")
    try:
        _sh("down")           # daemons left by a crashed session (recorded PIDs only)
        r = _sh("up", str(NODES))
        if r.returncode != 0:
            pytest.fail(f"slurm.sh up failed:\n{r.stderr}")
        conf = os.path.join(TB, "slurm", "slurm.conf")
        os.environ["SLURM_CONF"] = conf
        yield SlurmTestbed(conf)
    finally:
        _sh("down")
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        lock.close()
