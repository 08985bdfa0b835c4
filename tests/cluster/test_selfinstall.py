"""``install: true``: the master installs its own taskflow on an SSH host (a venv of its own
there, once per code), then runs tasks with it (real sshd hosts in network namespaces:
tests/support/ssh_testbed.py). The host's package index is a wheelhouse the test fills
from the master's (``pip download``), given to the host's pip through the node's env."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import taskflow
from taskflow import task, wait_on
from taskflow.errors import NodeStartError
from taskflow.providers import selfinstall

WHEELHOUSE = "/tmp/taskflow-tb/wheelhouse"


@task(returns=1)
def interpreter(i):
    import sys
    return sys.executable


def _wheelhouse() -> str:
    """taskflow's dependencies as wheels (the hosts reach no index of their own)."""
    reqs = [r.split(";")[0] for r in __import__("importlib.metadata").metadata.requires(
        "taskflow-hpc") or [] if "extra ==" not in r]
    os.makedirs(WHEELHOUSE, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", WHEELHOUSE, *reqs],
                   check=True, capture_output=True, timeout=600)
    return WHEELHOUSE


def _host_nodes(ssh_hosts, tmp_path, **env):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    nodes = ssh_hosts.nodes(tmp_path)[:1]
    n = nodes[0]
    n.python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    n.install = True
    n.env = {"HOME": str(home), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": _wheelhouse(),
             "PIP_CONFIG_FILE": os.devnull, **env}
    return nodes, home


@pytest.mark.timeout(900)
def test_a_host_gets_the_masters_taskflow_once_and_runs_tasks_with_it(ssh_hosts, tmp_path):
    nodes, home = _host_nodes(ssh_hosts, tmp_path)
    wheel = selfinstall.master_wheel()
    venv = home / ".taskflow" / "venvs" / wheel.venv([])
    with taskflow.Runtime(providers=[ssh_hosts.provider(nodes)], run_dir=str(tmp_path / "r1"),
                          echo_logs=False):
        got = set(wait_on([interpreter(i) for i in range(4)]))
    assert got == {str(venv / "bin" / "python")}, got
    assert (venv / ".taskflow-complete").exists()
    assert oct(os.stat(home / ".taskflow" / "venvs").st_mode & 0o777) == "0o700"
    mark = os.stat(venv / ".taskflow-complete").st_mtime_ns
    # a second run finds it: nothing copied or installed again
    (home / ".taskflow" / "wheels").rename(home / "wheels-moved")
    with taskflow.Runtime(providers=[ssh_hosts.provider(nodes)], run_dir=str(tmp_path / "r2"),
                          echo_logs=False):
        assert wait_on(interpreter(0)) == str(venv / "bin" / "python")
    assert os.stat(venv / ".taskflow-complete").st_mtime_ns == mark
    assert not (home / ".taskflow" / "wheels").exists()


def test_a_host_whose_python_cannot_make_a_venv_fails_the_start_with_the_fix(ssh_hosts,
                                                                            tmp_path):
    nodes, home = _host_nodes(ssh_hosts, tmp_path)
    nodes[0].python = "/bin/false"          # (as a Python without its venv module ends)
    with pytest.raises(NodeStartError) as ei:
        ssh_hosts.provider(nodes).start({"run_id": "x"}, 20)
    msg = str(ei.value)
    assert "install: true: `/bin/false -m venv` failed" in msg and "python3-venv" in msg, msg
    assert "h1" in msg
    assert not (home / ".taskflow" / "venvs" / selfinstall.master_wheel().venv([]) /
                ".taskflow-complete").exists()
