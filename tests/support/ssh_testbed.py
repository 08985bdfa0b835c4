"""Session fixture: two real sshd hosts in network namespaces (testbed/ssh_hosts.sh).

tests/conftest.py registers it for every module (never import it into one). The
hosts come up once per session and go down at its end. Tests are skipped,
with the reason, only when the machine cannot host them: not root, no
``ip netns``, no sshd or no paramiko. A lock (tests/support/testbed_lock.py) serialises sessions that
run at the same time, since the namespaces and addresses are fixed.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from typing import Iterator

import pytest

from support import testbed_lock

from support.paths import ROOT
SCRIPT = os.path.join(ROOT, "testbed", "ssh_hosts.sh")
TB = os.environ.get("TF_TB", "/tmp/taskflow-tb")


class Testbed:
    def __init__(self, env: dict) -> None:
        self.env = env
        self.hosts = env["TF_TB_HOSTS"].split()
        self.key = env["TF_TB_KEY"]
        self.other_key = env["TF_TB_OTHER_KEY"]
        self.known_hosts = env["TF_TB_KNOWN_HOSTS"]
        self.ssh_wrap = env["TF_TB_SSH_WRAP"]
        self.bridge = env["TF_TB_BRIDGE"]

    def sh(self, *args: str) -> None:
        subprocess.run(["bash", SCRIPT, *args], check=True, env=dict(os.environ, TF_TB=TB),
                       capture_output=True, timeout=60)

    def nodes(self, tmp_path, shared_fs: bool = False, **kw):
        from taskflow.providers.cluster import NodeConfig
        out = []
        for i, host in enumerate(self.hosts, 1):
            wd = os.path.join(str(tmp_path), f"wd-h{i}")
            out.append(NodeConfig(name=f"h{i}", host=host, user="root", identity_file=self.key,
                                  computing_units=2, python=sys.executable, working_dir=wd,
                                  shared_fs=shared_fs, **kw))
        return out

    def provider(self, nodes, **kw):
        from taskflow.providers.ssh import SSHProvider
        kw.setdefault("known_hosts", self.known_hosts)
        kw.setdefault("heartbeat_timeout", 3.0)
        kw.setdefault("sample_interval", 0.5)
        kw.setdefault("connect_timeout", 5.0)
        return SSHProvider(nodes, **kw)

    def kill(self, i: int) -> None:
        """SIGKILL every process of host i's namespace (a crash; its sshd too: ``restart``
        brings it back)."""
        self.sh("kill", str(i))

    def restart(self, i: int) -> None:
        self.sh("heal", str(i))
        self.sh("sshd", str(i))

    def cut(self, i: int) -> None:
        self.sh("cut", str(i))

    @contextlib.contextmanager
    def flap(self, i: int, seconds: float, after: float = 0.0) -> Iterator[threading.Event]:
        """Host i's link cut ``after`` s from now for ``seconds`` (timer threads); the event
        is set once it is back. At the block's end it is back in any case (waited for, then
        restored by force)."""
        healed = threading.Event()

        def heal() -> None:
            self.restart(i)
            healed.set()
        if after:
            threading.Timer(after, lambda: self.cut(i)).start()
        else:
            self.cut(i)
        threading.Timer(after + seconds, heal).start()
        try:
            yield healed
        finally:
            if not healed.wait(after + seconds + 30):
                self.restart(i)


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the SSH testbed needs root (network namespaces, sshd)"
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed: bash testbed/install.sh iproute2"
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"`ip netns` is not available here: {r.stderr.strip()}"
    if not os.path.exists("/usr/sbin/sshd"):
        return "openssh-server is not installed: bash testbed/install.sh openssh-server"
    try:
        import paramiko  # noqa: F401
    except ImportError:
        return "paramiko is not installed: pip install -e '.[test]'"
    return None


@pytest.fixture(scope="session")
def ssh_hosts():
    why = _why_not()
    if why:
        pytest.skip(why)
    os.makedirs(TB, exist_ok=True)
    lock = testbed_lock.acquire(os.path.join(TB, "..", "taskflow-tb.lock"), "SSH")
    tb = None
    try:
        r = subprocess.run(["bash", SCRIPT, "up", "2"], env=dict(os.environ, TF_TB=TB),
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            pytest.fail(f"ssh_hosts.sh up failed:\n{r.stderr}")
        env = {}
        with open(os.path.join(TB, "hosts.env")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                env[k] = v.strip('"')
        tb = Testbed(env)
        yield tb
    finally:
        subprocess.run(["bash", SCRIPT, "down"], env=dict(os.environ, TF_TB=TB),
                       capture_output=True, timeout=60)
        lock.close()
