"""Session fixture: a real rootful podman with taskflow's test images (testbed/containers.sh).

tests/conftest.py registers it for every module (never import it into one). The
images are built once (cached under $TF_CTR across sessions, rebuilt when
missing); the engine's configuration comes through CONTAINERS_CONF and
CONTAINERS_STORAGE_CONF, which the fixture puts into this process's
environment so local node agents (and their podman) see them. Tests are
skipped, with the install command, only when podman is missing or the
machine cannot run a container.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from support import testbed_lock

from support.paths import ROOT
SCRIPT = os.path.join(ROOT, "testbed", "containers.sh")
TF_CTR = os.environ.get("TF_CTR", "/var/tmp/taskflow-containers")
INSTALL = "bash testbed/install.sh podman runc catatonit debootstrap busybox-static"


class Podman:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.bb = env["TF_CTR_BB"]
        self.bb_user = env["TF_CTR_BB_USER"]
        self.py = env["TF_CTR_PY"]

    def podman(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, **self.env), check=check)


@pytest.fixture(scope="session")
def podman():
    if os.geteuid() != 0:
        pytest.skip("the container tests use a rootful podman: run them as root")
    for tool in ("podman", "runc", "debootstrap", "busybox"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is missing: {INSTALL}")
    os.makedirs(TF_CTR, mode=0o700, exist_ok=True)
    lock = testbed_lock.acquire(os.path.join(TF_CTR, ".build.lock"), "container", timeout=600)
    try:
        r = subprocess.run(["bash", SCRIPT, "up"], capture_output=True, text=True, timeout=900,
                           env=dict(os.environ, TF_CTR=TF_CTR))
    finally:
        lock.close()
    if r.returncode != 0:
        pytest.fail(f"containers.sh up failed:\n{r.stderr[-3000:]}")
    env = dict(line.split("=", 1) for line in open(os.path.join(TF_CTR, "env")).read().split("\n")
               if "=" in line)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    pm = Podman(env)
    probe = pm.podman("run", "--rm", pm.bb, "true", check=False)
    if probe.returncode != 0:
        pytest.skip(f"podman cannot run a container on this machine: {probe.stderr[-500:]}")
    yield pm
    subprocess.run(["bash", SCRIPT, "down"], capture_output=True, timeout=60)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
