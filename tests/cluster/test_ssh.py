"""SSH nodes against real sshd hosts in network namespaces (no mocks).

Hosts h1/h2 come from testbed/ssh_hosts.sh (fixture in ssh_testbed.py);
every node has its own working directory and shared_fs: false, so file
staging over SFTP is exercised even though the namespaces share /tmp.
"""
from __future__ import annotations

import os
import sys
import threading
import time

import pytest

import taskflow
from taskflow import wait_on
from taskflow.errors import NodeStartError
from taskflow.errors import HostKeyError

from support import ssh_tasks as S
from support.paths import TESTS


def _rt(tb, tmp_path, provider=None, **kw):
    prov = provider or tb.provider(tb.nodes(tmp_path))
    return taskflow.Runtime(providers=[prov], run_dir=str(tmp_path / "runs"), **kw)


def test_workflow_spread_over_both_hosts(ssh_hosts, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with _rt(ssh_hosts, tmp_path) as rt:
        info = {n.name: (n.hostname, n.address, n.slots) for n in rt.nodes}
        assert info == {"h1": ("h1", ssh_hosts.hosts[0], 2), "h2": ("h2", ssh_hosts.hosts[1], 2)}
        pairs = [S.where(0.05) for _ in range(16)]
        seen = [(wait_on(h), wait_on(cwd)) for h, cwd in pairs]
        squares = wait_on([S.slow_square(i, 0.0) for i in range(50)])
    assert {h for h, _ in seen} == {"h1", "h2"}
    for h, cwd in seen:   # each agent runs in its node's own working directory
        assert cwd == str(tmp_path / f"wd-{h}")
    assert squares == [i * i for i in range(50)]


def test_a_task_whose_large_inputs_live_on_several_hosts_runs(ssh_hosts, tmp_path,
                                                                 monkeypatch):
    """Values above the inline size stay where they were made; a task reading values held
    on both hosts gets every one of them (it used to wait forever for one it was never sent)."""
    monkeypatch.chdir(tmp_path)
    with _rt(ssh_hosts, tmp_path) as rt:
        bigs = [S.big(i, 0.2) for i in range(1, 7)]
        taskflow.barrier()
        holders = [next(iter(b._holders or {"master"})) for b in bigs]
        assert {"h1", "h2"} <= set(holders), holders
        on = {h: [b for b, hh in zip(bigs, holders) if hh == h] for h in ("h1", "h2")}
        trio = [on["h1"][0], on["h2"][0], (on["h1"] + on["h2"])[-1]]
        got = wait_on(S.first_bytes(*trio))
        assert len(rt.nodes) == 2
    assert got == sum(bigs.index(b) + 1 for b in trio)


def test_file_staging_both_ways(ssh_hosts, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    srcs = []
    for i in range(4):
        p = tmp_path / f"in{i}.txt"
        p.write_text(f"line {i}\n")
        srcs.append(str(p))
    with _rt(ssh_hosts, tmp_path) as rt:
        outs = [str(tmp_path / f"out{i}.txt") for i in range(4)]
        res = [S.upper(s, o) for s, o in zip(srcs, outs)]
        for o in outs:
            S.append_host(o)
        texts = [S.read_text(o) for o in outs]
        got = wait_on(texts)
        hosts_paths = [(wait_on(h), wait_on(p)) for h, p in res]
        stagers = [n.stager for n in rt.nodes]
        assert all(st is not None for st in stagers)
        n_in = sum(st.n_in for st in stagers)
        n_out = sum(st.n_out for st in stagers)
    for i, text in enumerate(got):
        first, second = text.splitlines()
        assert first == f"LINE {i}" and second in ("+h1", "+h2")
    for host, (src, dst) in hosts_paths:   # the task saw node-local copies, not the master's
        wd = str(tmp_path / f"wd-{host}")
        assert src.startswith(wd + "/") and dst.startswith(wd + "/"), (host, src, dst)
    # the final version is at the user's path after the run
    for i, o in enumerate(outs):
        assert open(o).read().startswith(f"LINE {i}\n+h")
    assert n_in >= 4 and n_out >= 8
    # the nodes' data directories of the run are removed at the end
    for h in ("h1", "h2"):
        assert not os.listdir(tmp_path / f"wd-{h}" / "taskflow-data")


def test_large_values_stay_on_their_node(ssh_hosts, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with _rt(ssh_hosts, tmp_path):
        bigs = [S.big(i, 0.05) for i in range(6)]
        sums = wait_on([S.checksum(b, 0.02) for b in bigs])
        holders = [set(b._holders or ()) for b in bigs]
        assert all(b._payload is None for b in bigs)   # never came to the master
        assert wait_on(bigs[3]) == bytes([3]) * (1 << 20)
    assert sums == [(1 << 20) * i for i in range(6)]
    assert set().union(*holders) <= {"h1", "h2"} and all(holders)


def test_unknown_host_key_refused_then_accepted(ssh_hosts, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    prov = ssh_hosts.provider(ssh_hosts.nodes(tmp_path)[:1], known_hosts=str(kh))
    with pytest.raises(HostKeyError) as ei:
        prov.start({"run_id": "x"}, 10)
    msg = str(ei.value)
    assert ssh_hosts.hosts[0] in msg and "not in" in msg
    assert "ssh-keyscan" in msg and "accept_new_host_keys" in msg
    prov = ssh_hosts.provider(ssh_hosts.nodes(tmp_path)[:1], known_hosts=str(kh),
                              accept_new_host_keys=True)
    handles = prov.start({"run_id": "x"}, 10)
    try:
        assert handles[0].hostname == "h1"
    finally:
        prov.stop()
    assert ssh_hosts.hosts[0] in kh.read_text()


def test_changed_host_key_refused(ssh_hosts, tmp_path):
    other_pub = open(ssh_hosts.other_key + ".pub").read().split()[:2]
    kh = tmp_path / "known_hosts"
    kh.write_text(f"{ssh_hosts.hosts[0]} {' '.join(other_pub)}\n")
    prov = ssh_hosts.provider(ssh_hosts.nodes(tmp_path)[:1], known_hosts=str(kh),
                              accept_new_host_keys=True)   # never overrides a changed key
    with pytest.raises(HostKeyError, match="CHANGED"):
        prov.start({"run_id": "x"}, 10)


def test_wrong_user_key_refused(ssh_hosts, tmp_path):
    nodes = ssh_hosts.nodes(tmp_path)[:1]
    nodes[0].identity_file = ssh_hosts.other_key
    with pytest.raises(NodeStartError) as ei:
        ssh_hosts.provider(nodes).start({"run_id": "x"}, 10)
    msg = str(ei.value)
    assert "authentication failed" in msg and ssh_hosts.other_key in msg
    assert f"root@{ssh_hosts.hosts[0]}:22" in msg and "authorized_keys" in msg


def test_missing_python_reported_with_remote_stderr(ssh_hosts, tmp_path):
    nodes = ssh_hosts.nodes(tmp_path)[1:]
    nodes[0].python = "/nonexistent/bin/python3"
    t0 = time.time()
    with pytest.raises(NodeStartError) as ei:
        ssh_hosts.provider(nodes).start({"run_id": "x"}, 10)
    msg = str(ei.value)
    assert "was not found" in msg and ssh_hosts.hosts[1] in msg
    assert "command:" in msg and "remote stderr:" in msg and "/nonexistent/bin/python3" in msg
    assert time.time() - t0 < 10


def test_missing_taskflow_reported(ssh_hosts, tmp_path):
    nodes = ssh_hosts.nodes(tmp_path)[:1]
    nodes[0].python = f"{sys.executable} -S"     # no site-packages: taskflow not importable
    with pytest.raises(NodeStartError) as ei:
        taskflow.Runtime(providers=[ssh_hosts.provider(nodes)],
                         run_dir=str(tmp_path / "runs")).start()
    msg = str(ei.value)
    assert "taskflow is not importable" in msg and "pip install" in msg
    assert "ModuleNotFoundError" in msg     # the remote stderr is shown


def test_setup_command_failure_reported(ssh_hosts, tmp_path):
    nodes = ssh_hosts.nodes(tmp_path)[:1]
    nodes[0].setup = ["echo preparing >&2", "false"]
    with pytest.raises(NodeStartError, match="set-up command failed") as ei:
        ssh_hosts.provider(nodes).start({"run_id": "x"}, 10)
    assert "preparing" in str(ei.value)


def _later(delay, fn):
    t = threading.Timer(delay, fn)
    t.start()
    return t


def test_node_killed_mid_run(ssh_hosts, tmp_path, monkeypatch, capfd):
    """Every process of h2's namespace is SIGKILLed while tasks run and values live there."""
    monkeypatch.chdir(tmp_path)
    try:
        with _rt(ssh_hosts, tmp_path, retries=0) as rt:
            # delays keep the agent from queueing 1 MiB tasks behind a running one (see report)
            bigs = [S.big(i, 0.02) for i in range(6)]
            taskflow.barrier()
            on_h2 = [i for i, b in enumerate(bigs) if b._holders == {"h2"}]
            assert on_h2, "placement put nothing on h2"
            squares = [S.slow_square(i, 0.3) for i in range(12)]
            timer = _later(0.4, lambda: ssh_hosts.kill(2))
            got = wait_on(squares)
            sums = wait_on([S.checksum(b, 0.02) for b in bigs])   # h2's: recomputed on h1
            timer.join()
            lost = [n for n in rt.nodes if not n.alive]
            assert [n.name for n in lost] == ["h2"]
            assert rt.tally.retries >= 1
    finally:
        ssh_hosts.restart(2)
    assert got == [i * i for i in range(12)]
    assert sums == [(1 << 20) * i for i in range(6)]
    err = capfd.readouterr().err
    assert "node h2 lost" in err


def test_node_cut_off(ssh_hosts, tmp_path, monkeypatch, capfd):
    """h1's link goes down mid-run: the heartbeat notices, its tasks rerun on h2."""
    monkeypatch.chdir(tmp_path)
    try:
        with _rt(ssh_hosts, tmp_path, retries=0) as rt:
            squares = [S.slow_square(i, 0.3) for i in range(12)]
            timer = _later(0.4, lambda: ssh_hosts.cut(1))
            t0 = time.time()
            got = wait_on(squares)
            timer.join()
            assert time.time() - t0 < 20
            assert [n.name for n in rt.nodes if not n.alive] == ["h1"]
            assert "no data from" in rt.nodes[0].lost_reason
    finally:
        ssh_hosts.restart(1)
    assert got == [i * i for i in range(12)]
    assert "node h1 lost" in capfd.readouterr().err


def test_cli_run_with_cluster_file(ssh_hosts, tmp_path):
    import subprocess
    hosts = ssh_hosts.hosts
    (tmp_path / "cluster.yaml").write_text(f"""\
known_hosts: {ssh_hosts.known_hosts}
placement: fifo
nodes:
  - name: here
    local: true
    computing_units: 1
""" + "".join(f"""\
  - name: h{i}
    host: {h}
    user: root
    identity_file: {ssh_hosts.key}
    computing_units: 1
    python: {sys.executable}
    working_dir: {tmp_path}/wd-h{i}
    shared_fs: false
""" for i, h in enumerate(hosts, 1)))
    (tmp_path / "script.py").write_text("""\
from support import ssh_tasks as S
from taskflow import wait_on
names = wait_on([S.where(0.1)[0] for _ in range(9)])
print("HOSTS", sorted(set(names)))
""")
    env = dict(os.environ, PYTHONPATH=TESTS)
    r = subprocess.run([sys.executable, "-m", "taskflow.cli", "run", "--cluster", "cluster.yaml",
                        "--run-dir", str(tmp_path / "runs"), "script.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    import socket
    assert f"HOSTS {sorted({'h1', 'h2', socket.gethostname()})}" in r.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  - host: x\n    prot: 22\n")
    r = subprocess.run([sys.executable, "-m", "taskflow.cli", "run", "--cluster", str(bad),
                        "script.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "bad.yaml:3: unknown key 'prot'" in r.stderr


def test_resources_declared_in_the_cluster_file(ssh_hosts, tmp_path, monkeypatch):
    """h1 declares a license, h2 two GPUs (cluster file): license tasks run on h1, half-GPU
    tasks on h2, both on device 0 (a fraction fills the fullest device first); a name
    neither node declares is refused when the task is called, naming both nodes'."""
    from taskflow.providers.cluster import runtime_options
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cluster.yaml").write_text(f"known_hosts: {ssh_hosts.known_hosts}\nnodes:\n"
                                           + "".join(f"""\
  - name: h{i}
    host: {h}
    user: root
    identity_file: {ssh_hosts.key}
    computing_units: 2
    python: {sys.executable}
    working_dir: {tmp_path}/wd-h{i}
    resources: {res}
""" for i, (h, res) in enumerate(zip(ssh_hosts.hosts, ["{license: 1}", "{gpu: [0, 1]}"]), 1)))
    with taskflow.Runtime(**runtime_options(str(tmp_path / "cluster.yaml"), "locality"),
                          run_dir=str(tmp_path / "runs")):
        lic = wait_on([S.licensed() for _ in range(3)])
        gpu = wait_on([S.half_gpu() for _ in range(2)])
        with pytest.raises(taskflow.UsageError, match=r"'socket'.*h1: 2 cores.*license 1.*"
                                                       r"h2: 2 cores.*gpu \[0, 1\]"):
            taskflow.constraint(resources={"socket": 1})(taskflow.task()(lambda: None))()
    assert lic == [("h1", '{"license": {"amount": 1}}')] * 3
    assert gpu == [("h2", "0")] * 2


@pytest.mark.skipif(S._mpi is None, reason="@mpi is not available")
def test_mpi_allreduce_over_both_hosts(ssh_hosts, tmp_path, monkeypatch):
    import shutil
    if not shutil.which("mpirun"):
        pytest.skip("mpirun (Open MPI) is not installed: bash testbed/install.sh openmpi-bin")
    pytest.importorskip("mpi4py")
    monkeypatch.chdir(tmp_path)
    with _rt(ssh_hosts, tmp_path):
        total, hosts = wait_on(S.mpi_allreduce(10))
    assert total == 10 * (1 + 2 + 3 + 4)
    assert hosts == ["h1", "h1", "h2", "h2"]


def test_directories_staged_both_ways(ssh_hosts, tmp_path, monkeypatch):
    from support import tasks_lib as L
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "given"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("a")
    (src / "sub" / "b.txt").write_text("b")
    with _rt(ssh_hosts, tmp_path):
        listed = L.list_dir(str(src))
        L.make_dir(str(tmp_path / "made"), 3)
        made = L.list_dir(str(tmp_path / "made"))
        assert wait_on(listed) == ["a.txt", "sub"]
        assert wait_on(made) == ["part0.txt", "part1.txt", "part2.txt"]
    assert sorted(os.listdir(tmp_path / "made")) == ["part0.txt", "part1.txt", "part2.txt"]
    assert (tmp_path / "made" / "part2.txt").read_text() == "2"


def test_a_task_calls_tasks_that_run_on_the_other_host(ssh_hosts, tmp_path, monkeypatch):
    """A parent on one host, its children on both (it lends its slot while it waits); the
    children's 1 MiB values stay on their node until the parent's wait_on asks for them."""
    from support import nested_tasks as N
    monkeypatch.chdir(tmp_path)
    with _rt(ssh_hosts, tmp_path):
        home, kids = wait_on(N.spreads(8, 0.3))
    assert {h for h, _ in kids} - {home}, (home, kids)      # some child ran on the other host
    assert [s for _, s in kids] == [i * (1 << 20) for i in range(8)]


def test_wait_on_file_in_a_task_on_a_staged_host_says_why_it_cannot(ssh_hosts, tmp_path,
                                                                    monkeypatch):
    """The hosts do not share the master's filesystem (their files are staged): the file
    would be put where the parent cannot read it, and its error says so."""
    from taskflow.errors import TaskError
    from support import nested_tasks as N
    monkeypatch.chdir(tmp_path)
    with _rt(ssh_hosts, tmp_path):
        with pytest.raises(TaskError, match="does not share the master's filesystem"):
            wait_on(N.reads_what_its_children_wrote(str(tmp_path / "out.txt")))


def test_a_stream_across_hosts(ssh_hosts, tmp_path, monkeypatch):
    """Three consumers and a producer fill both hosts' four slots: the items cross from the
    producer's host to consumers on the other one, each delivered once, in order."""
    from support import stream_tasks as T
    monkeypatch.chdir(tmp_path)
    with _rt(ssh_hosts, tmp_path):
        s = taskflow.Stream()
        consumers = [T.consume_where(s) for _ in range(3)]
        where = T.produce_where(s, 3000)
        got = wait_on(consumers)
        home = wait_on(where)
    assert sorted(x for _, items in got for x in items) == list(range(3000))
    assert all(items == sorted(items) for _, items in got)
    assert {h for h, _ in got} - {home}, (home, [h for h, _ in got])
