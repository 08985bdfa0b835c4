"""The SSH testbed for the chaos driver's scenario (c): sshd hosts in network namespaces.

Brings testbed/ssh_hosts.sh up under the lock the tests use (testbed.py)
(one user of the fixed namespaces and addresses at a time), writes a cluster
file for its hosts, cuts and heals a host's link (its veth down / up) and
finds the taskflow processes left on a host afterwards.
"""
from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import testbed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "testbed", "ssh_hosts.sh")
TB = os.environ.get("TF_TB", "/tmp/taskflow-tb")


class TestbedUnavailable(RuntimeError):
    pass


class SSHTestbed:
    """``with SSHTestbed(2) as tb:`` hosts h1..hN up (and down again at the end)."""

    def __init__(self, hosts: int = 2, lock_wait: float = 900.0) -> None:
        self.n = hosts
        self.lock_wait = lock_wait
        self._lock: testbed.Lock | None = None
        self.env: dict[str, str] = {}

    def __enter__(self) -> "SSHTestbed":
        why = why_not()
        if why:
            raise TestbedUnavailable(why)
        try:
            self._lock = testbed.lock(self.lock_wait)
        except testbed.Busy as exc:
            raise TestbedUnavailable(str(exc)) from None
        r = self._sh("up", str(self.n))
        if r.returncode != 0:
            self.__exit__()
            raise TestbedUnavailable(f"ssh_hosts.sh up failed: {r.stderr.strip()}")
        self.env = testbed.hosts_env(TB)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            for i in range(1, self.n + 1):
                self._sh("heal", str(i))
            self._sh("down")
        finally:
            if self._lock is not None:
                self._lock.close()
                self._lock = None

    def _sh(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", SCRIPT, *args], env=dict(os.environ, TF_TB=TB),
                              capture_output=True, text=True, timeout=120)

    @property
    def hosts(self) -> list[str]:
        return self.env["TF_TB_HOSTS"].split()

    def cluster_file(self, workdir: str, python: str, slots: int, shared_fs: bool) -> str:
        """A cluster file with every host (short heartbeat: a cut is noticed in 3 s)."""
        lines = [f"known_hosts: {self.env['TF_TB_KNOWN_HOSTS']}", "heartbeat_timeout: 3",
                 "sample_interval: 0.5", "connect_timeout: 5", "nodes:"]
        for i, host in enumerate(self.hosts, 1):
            lines += [f"  - name: h{i}", f"    host: {host}", "    user: root",
                      f"    identity_file: {self.env['TF_TB_KEY']}",
                      f"    computing_units: {slots}", f"    python: {python}",
                      f"    working_dir: {os.path.join(workdir, f'wd-h{i}')}",
                      f"    shared_fs: {'true' if shared_fs else 'false'}"]
        return "\n".join(lines) + "\n"

    def cut(self, i: int) -> None:
        self._sh("cut", str(i))

    def heal(self, i: int) -> None:
        self._sh("heal", str(i))

    def leftovers(self, i: int, wait: float) -> list[str]:
        """taskflow's processes (agents, executors, the programs of the chaos workflow's
        tasks) still alive on host i after ``wait`` seconds at most."""
        deadline = time.time() + wait
        while True:
            r = subprocess.run(["ip", "netns", "pids", f"tfh{i}"], capture_output=True,
                               text=True)
            found = []
            for pid in r.stdout.split():
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if ("taskflow.node" in cmd or "taskflow-chaos" in cmd) and "sshd" not in cmd:
                    found.append(f"{pid} {cmd[:80]}")
            if not found or time.time() > deadline:
                return found
            time.sleep(0.2)


def why_not() -> str | None:
    """Why the testbed cannot run here (None: it can)."""
    import shutil
    if os.geteuid() != 0:
        return "the SSH testbed needs root (network namespaces, sshd)"
    if shutil.which("ip") is None:
        return "iproute2 is not installed: bash testbed/install.sh iproute2"
    if not os.path.exists("/usr/sbin/sshd"):
        return "openssh-server is not installed: bash testbed/install.sh openssh-server"
    try:
        import paramiko  # noqa: F401
    except ImportError:
        return "paramiko is not installed: pip install -e '.[ssh]'"
    return None
