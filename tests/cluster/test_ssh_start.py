"""SSH start-up at the floor: one remote interpreter per host, and the agent's READY is the
version check (real sshd hosts in network namespaces: tests/support/ssh_testbed.py)."""
from __future__ import annotations

import os
import shutil
import sys

import pytest

import taskflow
from taskflow import task, wait_on
from taskflow.errors import VersionMismatch


@task(returns=1)
def host_of(i):
    import socket
    return socket.gethostname()


def _python(tmp_path, name: str, pythonpath: str = "") -> str:
    """An interpreter that writes one line per start to ``starts.log`` first."""
    log = tmp_path / "starts.log"
    w = tmp_path / name
    env = f"PYTHONPATH={pythonpath} " if pythonpath else ""
    w.write_text(f'#!/bin/sh\necho "$(hostname) $*" >> {log}\n{env}exec {sys.executable} "$@"\n')
    w.chmod(0o755)
    return str(w)


def test_one_remote_interpreter_per_host_and_it_is_the_agent(ssh_hosts, tmp_path):
    nodes = ssh_hosts.nodes(tmp_path, shared_fs=True)
    py = _python(tmp_path, "python-counted")
    for n in nodes:
        n.python = py
    rt = taskflow.Runtime(providers=[ssh_hosts.provider(nodes, max_starting=1)],
                          run_dir=str(tmp_path / "runs"), echo_logs=False)
    with rt:
        got = wait_on([host_of(i) for i in range(8)])
    starts = (tmp_path / "starts.log").read_text().splitlines()
    assert len(starts) == len(nodes), starts             # no probe: the agent alone
    assert all("-m taskflow.node --stdio" in s for s in starts)
    assert {s.split()[0] for s in starts} == {f"h{i}" for i in range(1, len(nodes) + 1)}
    assert set(got) == {f"h{i}" for i in range(1, len(nodes) + 1)}


def test_a_host_with_another_taskflow_is_refused_by_its_agents_answer(ssh_hosts, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(os.path.dirname(taskflow.__file__), old / "taskflow",
                    ignore=shutil.ignore_patterns("__pycache__"))
    ver = old / "taskflow" / "_version.py"
    ver.write_text(ver.read_text().replace('__version__ = "0.1.0"', '__version__ = "0.0.1"'))
    nodes = ssh_hosts.nodes(tmp_path)[:1]
    nodes[0].python = _python(tmp_path, "python-old", str(old))
    with pytest.raises(VersionMismatch) as ei:
        ssh_hosts.provider(nodes).start({"run_id": "x"}, 20)
    msg = str(ei.value)
    assert "runs taskflow 0.0.1" in msg and "master runs taskflow 0.1.0" in msg, msg
    assert ssh_hosts.hosts[0] in msg and "pip install taskflow-hpc==0.1.0" in msg
    assert len((tmp_path / "starts.log").read_text().splitlines()) == 1
