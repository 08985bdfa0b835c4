"""The cluster file: format, and errors that name the key and the line."""
from __future__ import annotations

import os

import pytest

from taskflow.providers.cluster import ClusterConfigError, load_cluster, parse_cluster

from support.paths import ROOT

GOOD = """\
placement: least-loaded
nodes:
  - name: here
    local: true
    computing_units: 2
  - host: 10.200.0.131
    user: root
    identity_file: ~/.ssh/id_ed25519
    computing_units: 4
    memory: 7.5
    shared_fs: false
    env: {A: 1}
    setup: ["module load x"]
"""


def test_good_file_parses():
    c = parse_cluster(GOOD, "c.yaml")
    assert c.placement == "least-loaded"
    local, remote = c.nodes
    assert local.local and local.shared_fs and local.computing_units == 2
    assert remote.name == "10.200.0.131" and remote.port == 22 and not remote.shared_fs
    assert remote.memory == 7.5 and remote.env == {"A": "1"} and remote.setup == ["module load x"]
    assert remote.identity_file == os.path.expanduser("~/.ssh/id_ed25519")


def test_example_file_parses():
    c = load_cluster(os.path.join(ROOT, "examples", "cluster.example.yaml"))
    assert [n.name for n in c.nodes] == ["local", "h1", "h2"]
    nmmb = load_cluster(os.path.join(ROOT, "examples", "nmmb_monarch", "cluster.testbed.yaml"))
    assert all(n.install == ["matplotlib>=3.5", "pillow>=9"] for n in nmmb.nodes)


def test_install_is_true_false_or_requirements_and_not_for_local_nodes():
    def node(line: str) -> str:
        return f"nodes:\n  - host: h1\n    {line}\n"
    assert parse_cluster(node("install: true"), "c.yaml").nodes[0].install is True
    assert parse_cluster(node("install: [numpy]"), "c.yaml").nodes[0].install == ["numpy"]
    with pytest.raises(ClusterConfigError, match=r"c\.yaml:3: nodes\[0\]\.install must be "
                                                 r"true, false or a list of pip requirements"):
        parse_cluster(node("install: yes please"), "c.yaml")
    with pytest.raises(ClusterConfigError, match=r"install must be true, false or a list of pip "
                                                 r"requirements \(strings\)"):
        parse_cluster(node("install: [1]"), "c.yaml")
    with pytest.raises(ClusterConfigError, match=r"is local: install: true is for remote hosts"):
        parse_cluster("nodes:\n  - local: true\n    install: true\n", "c.yaml")


def test_unknown_key_names_key_and_line():
    text = GOOD.replace("    memory: 7.5\n", "    memroy: 7.5\n")
    with pytest.raises(ClusterConfigError, match=r"c\.yaml:10: unknown key 'memroy' in nodes\[1\]"):
        parse_cluster(text, "c.yaml")


def test_unknown_top_level_key():
    with pytest.raises(ClusterConfigError, match=r"c\.yaml:1: unknown key 'placment'"):
        parse_cluster("placment: fifo\nnodes: []\n", "c.yaml")


def test_wrong_type_names_key_and_line():
    text = GOOD.replace("computing_units: 4", "computing_units: four")
    with pytest.raises(ClusterConfigError,
                       match=r"c\.yaml:9: nodes\[1\]\.computing_units must be an integer, got str"):
        parse_cluster(text, "c.yaml")
    with pytest.raises(ClusterConfigError, match=r":11: nodes\[1\]\.shared_fs must be true or false"):
        parse_cluster(GOOD.replace("shared_fs: false", "shared_fs: 0"), "c.yaml")


def test_missing_host_bad_placement_duplicate_names():
    with pytest.raises(ClusterConfigError, match=r":2: nodes\[0\] has no 'host'"):
        parse_cluster("nodes:\n  - user: root\n", "c.yaml")
    with pytest.raises(ClusterConfigError, match="placement 'random' is not one of"):
        parse_cluster("placement: random\nnodes:\n  - local: true\n", "c.yaml")
    with pytest.raises(ClusterConfigError, match="'a' is used twice"):
        parse_cluster("nodes:\n  - {name: a, local: true}\n  - {name: a, host: x}\n", "c.yaml")
    with pytest.raises(ClusterConfigError, match="missing key 'nodes'"):
        parse_cluster("placement: fifo\n", "c.yaml")
