"""Named, fractional and alternative resources (issue 39): nodes declare them, tasks ask.

Real local agents and executor processes; what ran at once is read from the order of
the lines the tasks append to one file (O_APPEND), never from a time window.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest

import taskflow
from taskflow import FILE_OUT_STDOUT, UsageError, binary, constraint, task, wait_on
from taskflow.graph.resources import FRACTION, from_text
from taskflow.providers.cluster import ClusterConfigError, parse_cluster
from taskflow.providers.local import LocalProvider
from taskflow.runtime.scheduling.resources import Pool

DEADLINE = 90.0      # s: generous for a loaded 2-core machine; only a hang reaches it


def _wait_for(path: str) -> None:
    end = time.time() + DEADLINE
    while not os.path.exists(path):
        if time.time() > end:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.01)


def _log(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


@constraint(resources={"gpu": 0.25})
@task(returns=dict)
def quarter_gpu(i, log, go):
    seen = os.environ.get("CUDA_VISIBLE_DEVICES")
    given = json.loads(os.environ["TASKFLOW_RESOURCES"])
    _log(log, f"start {i} {seen}")
    _wait_for(go)
    _log(log, f"end {i} {seen}")
    return {"cuda": seen, "given": given, "api": taskflow.task_resources().given}


def _journal_given(run_dir: str) -> dict[int, dict]:
    db = sqlite3.connect(os.path.join(run_dir, "journal.db"))
    try:
        rows = db.execute("SELECT task_id, info FROM transitions WHERE state='RESOURCES'")
        return {tid: json.loads(info) for tid, info in rows}
    finally:
        db.close()


def test_quarter_gpus_share_two_devices_at_most_four_each(tmp_path, monkeypatch):
    """10 tasks of gpu 0.25 on a node of 9 slots declaring GPUs 0 and 1: 8 run at once (4 on
    each device; the slots would allow 9), each sees the device it was given, the journal
    records it, and replaying the start / end lines never finds 5 on one device."""
    monkeypatch.chdir(tmp_path)
    log, go = str(tmp_path / "events.log"), str(tmp_path / "go")
    with taskflow.Runtime(providers=[LocalProvider(9, resources={"gpu": [0, 1]})],
                          run_dir=str(tmp_path / "runs")) as rt:
        futs = [quarter_gpu(i, log, go) for i in range(10)]
        ids = [f._producer.id for f in futs]     # (running: none can end before "go")
        end = time.time() + DEADLINE
        while not (os.path.exists(log) and open(log).read().count("start") >= 8):
            assert time.time() < end, "8 quarter-GPU tasks never ran at once"
            time.sleep(0.02)
        open(go, "w").close()
        got = wait_on(futs)
    running: dict[str, int] = {"0": 0, "1": 0}
    most = {"0": 0, "1": 0}
    for line in open(log).read().split("\n"):
        if not line:
            continue
        what, _, dev = line.split()
        running[dev] += 1 if what == "start" else -1
        most[dev] = max(most[dev], running[dev])
    assert most == {"0": 4, "1": 4}
    recorded = _journal_given(rt.run_dir)
    for tid, g in zip(ids, got):
        (idx,) = g["given"]["gpu"]["indices"]
        assert g["cuda"] == str(idx) and g["given"]["gpu"]["amount"] == 0.25
        assert g["api"] == g["given"]
        assert recorded[tid]["resources"] == g["given"] and recorded[tid]["variant"] is None


@constraint(computing_units=2)
@task(returns=int)
def hold_cores(gate):
    _wait_for(gate)
    return 2


@constraint(resources={"license": 1})
@task(returns=int)
def hold_license(gate):
    _wait_for(gate)
    return 1


@constraint(variants=[{"cores": 2}, {"cores": 1, "license": 1}])
@task(returns=tuple)
def two_cores_or_a_license():
    r = taskflow.task_resources()
    return r.variant, r.cores, r.given, os.environ.get("TASKFLOW_VARIANT")


def test_variants_take_what_is_free_first(tmp_path, monkeypatch):
    """"2 cores or 1 license" on a node of 3 cores and 1 license: with 2 cores held it runs
    on the license (variant 1), with the license held on 2 cores (variant 0)."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(providers=[LocalProvider(3, resources={"license": 1})],
                          run_dir=str(tmp_path / "runs")) as rt:
        gate = str(tmp_path / "cores-free")
        held = hold_cores(gate)
        by_license = wait_on(two_cores_or_a_license())
        open(gate, "w").close()
        assert wait_on(held) == 2
        gate = str(tmp_path / "license-free")
        held = hold_license(gate)
        by_cores = two_cores_or_a_license()
        got = wait_on(by_cores)
        open(gate, "w").close()
        assert wait_on(held) == 1
    assert by_license == (1, 1, {"license": {"amount": 1}}, "1")
    assert got == (0, 2, {}, "0")
    given = _journal_given(rt.run_dir)
    assert [given[t] for t in sorted(given) if t not in _ids(rt.run_dir, "hold_license")] == [
        {"variant": 1, "cores": 1, "resources": {"license": {"amount": 1}}},
        {"variant": 0, "cores": 2, "resources": {}}]


def _ids(run_dir: str, name: str) -> set[int]:
    db = sqlite3.connect(os.path.join(run_dir, "journal.db"))
    try:
        return {i for (i,) in db.execute("SELECT id FROM tasks WHERE name=?", (name,))}
    finally:
        db.close()


@pytest.fixture
def small(tmp_path, monkeypatch):
    """One 2-slot node with 2 licenses and GPU 0."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(providers=[LocalProvider(2, resources={"license": 2, "gpu": [0]})],
                          run_dir=str(tmp_path / "runs")) as r:
        yield r


@constraint(resources={"license": 1, "gpu": 0.5})
@binary(binary="sh", args="-c {{script}}")
@task(out=FILE_OUT_STDOUT)
def program_sees(script, out):
    pass


def _asking(**kw):
    return constraint(**kw)(task()(lambda: None))


def test_requests_no_node_can_meet_fail_at_call_time(small):
    with pytest.raises(UsageError, match=r"asks for resource 'licence'.*Did you mean "
                                         r"'license'.*local: 2 cores.*license 2, gpu \[0\]"):
        _asking(resources={"licence": 1})()
    with pytest.raises(UsageError, match=r"license 0.5, a fraction, but license is a count"):
        _asking(resources={"license": 0.5})()
    with pytest.raises(UsageError, match=r"needs \(1 core, license 3\) but|never give"):
        _asking(resources={"license": 3})()
    with pytest.raises(UsageError, match=r"\(16 cores\) or \(1 core, gpu 2\).*never give"):
        _asking(variants=[{"cores": 16}, {"gpus": 2}])()
    assert wait_on(_asking(resources={"gpu": 0.5, "license": 2})()) is None
    program_sees('echo "$CUDA_VISIBLE_DEVICES $TASKFLOW_RESOURCES"', "seen.txt")
    taskflow.barrier()
    assert open("seen.txt").read() == \
        '0 {"gpu": {"amount": 0.5, "indices": [0]}, "license": {"amount": 1}}\n'


def test_bad_amounts_and_keys_are_refused_when_declared():
    for bad, msg in [({"gpu": 0}, "amount > 0"), ({"gpu": -1}, "amount > 0"),
                     ({"gpu": 1.5}, "must be whole"), ({"gpu": "1"}, "must be a number"),
                     ({"gpu": 0.33333}, "4 decimal places"), ({"a b": 1}, "must be a word"),
                     ({"gpu": 1, "gpus": 1}, "twice")]:
        with pytest.raises(UsageError, match=msg):
            _asking(resources=bad)
    with pytest.raises(UsageError, match="non-empty list"):
        _asking(variants=[])
    with pytest.raises(UsageError, match="memory_size is the task's own"):
        _asking(variants=[{"memory_size": 2}])
    with pytest.raises(UsageError, match="resources= asks for already"):
        _asking(resources={"gpu": 1}, variants=[{"gpu": 1}])
    with pytest.raises(UsageError, match="cores must be an int >= 1"):
        _asking(variants=[{"cores": 0}])


def test_resources_from_a_command_line():
    assert from_text(["gpu=0.25", "license=1"], "--resource") == {"gpu": 0.25, "license": 1}
    for bad, msg in [("gpu", "not NAME=AMOUNT"), ("gpu=x", "is not a number"),
                     ("gpu=0", "amount > 0"), ("=1", "not NAME=AMOUNT")]:
        with pytest.raises(UsageError, match=msg):
            from_text([bad], "--resource")


def test_fractions_pack_onto_the_fullest_device_and_never_pass_one():
    pool = Pool(None, {"gpu": [0, 1], "license": 2})  # type: ignore[arg-type]
    q = FRACTION // 4
    half = pool.take((("gpu", 2 * q),))
    quarters = [pool.take((("gpu", q),)) for _ in range(2)]
    assert [g.indexed for g in [half, *quarters]] == [(("gpu", ((0, 2 * q),)),)] * 1 + \
        [(("gpu", ((0, q),)),)] * 2           # device 0 filled before device 1 is touched
    whole = pool.take((("gpu", FRACTION),))
    assert whole is not None and whole.indexed == (("gpu", ((1, FRACTION),)),)
    assert pool.take((("gpu", q),)) is None   # both devices at 1.0
    assert pool.take((("license", FRACTION), ("gpu", q))) is None
    assert pool.used["license"] == 0          # all or nothing
    pool.give(half)
    assert pool.take((("gpu", FRACTION),)) is None and pool.take((("gpu", 2 * q),))


def test_cluster_file_resources():
    cfg = parse_cluster("nodes:\n  - name: a\n    local: true\n    gpus: 2\n"
                        "    resources: {license: 4, socket: [0, 1]}\n")
    assert cfg.nodes[0].resources == {"license": 4, "socket": [0, 1], "gpu": [0, 1]}
    (prov,) = cfg.providers()
    assert prov.resources == cfg.nodes[0].resources
    for text, msg in [("resources: {license: 0}", "license is 0"),
                      ("resources: {gpu: [0, 0]}", "an index twice"),
                      ("resources: {gpu: 1.5}", "a count .* or a list"),
                      ("resources: [license]", "must be a mapping"),
                      ("gpus: 2\n    resources: {gpu: [0]}", "disagree")]:
        with pytest.raises(ClusterConfigError, match=f"<cluster>:[23]: nodes\\[0\\].*{msg}"):
            parse_cluster(f"nodes:\n  - local: true\n    {text}\n")


def test_resource_tasks_fail_when_the_only_node_with_it_is_lost(tmp_path, monkeypatch):
    """Node a has the only license; it is killed while one license task runs there and
    another waits: both fail naming the license (no wait for a node that cannot come)."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(providers=[LocalProvider(1, name="a", resources={"license": 1}),
                                     LocalProvider(1, name="b")],
                          run_dir=str(tmp_path / "runs")) as rt:
        running = hold_license(str(tmp_path / "never"))
        waiting = hold_license(str(tmp_path / "never"))
        (a,) = [n for n in rt.nodes if n.name == "a"]
        end = time.time() + DEADLINE
        while running._producer is not None and running._producer.state != "RUNNING":
            assert time.time() < end
            time.sleep(0.01)
        a.proc.kill()
        for fut in (running, waiting):
            with pytest.raises(taskflow.TaskError, match=r"needs \(1 core, license 1\), "
                                                         r"which the remaining nodes can never"):
                wait_on(fut)
