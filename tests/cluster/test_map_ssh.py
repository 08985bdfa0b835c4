"""``taskflow map`` on the SSH testbed: items spread over two sshd hosts whose nodes do
not share the master's files (inputs uploaded, outputs brought back over SFTP)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys


def test_map_each_line_over_ssh_nodes(ssh_hosts, tmp_path):
    (tmp_path / "cluster.yaml").write_text(f"known_hosts: {ssh_hosts.known_hosts}\nnodes:\n" +
                                           "".join(f"""\
  - name: h{i}
    host: {h}
    user: root
    identity_file: {ssh_hosts.key}
    computing_units: 1
    python: {sys.executable}
    working_dir: {tmp_path}/wd-h{i}
    shared_fs: false
""" for i, h in enumerate(ssh_hosts.hosts, 1)))
    names = []
    for i in range(8):
        (tmp_path / f"f{i}.dat").write_bytes(os.urandom(100) + b"%d" % i)
        names.append(f"f{i}.dat")
    (tmp_path / "list.txt").write_text("\n".join(names) + "\n")
    r = subprocess.run([sys.executable, "-m", "taskflow.cli", "map", "--no-progress",
                        "--cluster", "cluster.yaml", "--run-dir", str(tmp_path / "runs"),
                        "--each-line", "list.txt", "--in", "{}", "--stdout", "{}.sha", "--",
                        "sha256sum", "{}"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    for name in names:
        want = hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        assert (tmp_path / f"{name}.sha").read_text().split()[0] == want, name
    s = subprocess.run([sys.executable, "-m", "taskflow.cli", "status", "--run-dir",
                        str(tmp_path / "runs")], capture_output=True, text=True, timeout=60)
    assert "sha256sum: 8 done" in s.stdout and "h1" in s.stdout and "h2" in s.stdout, s.stdout
    # a program the nodes do not have (nothing on the master can tell): one error, not one
    # per item; the items not started do not run
    r = subprocess.run([sys.executable, "-m", "taskflow.cli", "map", "--no-progress",
                        "--cluster", "cluster.yaml", "--run-dir", str(tmp_path / "runs"),
                        "--range", "1-1000", "--", "no-such-program-on-the-nodes", "{}"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "'no-such-program-on-the-nodes' was not found on PATH" in r.stderr
    assert "every item would fail so; the map stops" in r.stderr
    assert "did not run" in r.stderr, r.stderr
