"""A task that calls tasks on a node a real Slurm allocated (nested submission over the
agent's wire from a Slurm node), against the local Slurm testbed (slurm_testbed.py)."""
from __future__ import annotations

import taskflow
from taskflow import task, wait_on
from taskflow.journal import Journal
from taskflow.providers.slurm import SlurmProvider


@task(returns=1)
def child_where(i):
    import os
    return i * i, os.environ.get("SLURM_JOB_ID")


@task(returns=1)
def parent_where(n):
    """Calls ``n`` children and waits for them: on one slot, its wait must lend it."""
    import os
    kids = [child_where(i) for i in range(n)]
    return os.environ.get("SLURM_JOB_ID"), wait_on(kids)


def test_a_task_on_a_slurm_node_calls_tasks_and_waits_for_them(slurm, tmp_path, monkeypatch):
    """The parent runs in the Slurm job on the allocation's only slot: its children run
    there too (its wait_on lends its slot: no deadlock), their values come back to it,
    and the journal has each parent -> child edge."""
    monkeypatch.chdir(tmp_path)
    p = SlurmProvider("batch", 1, cpus=1)
    with taskflow.Runtime(providers=[p], run_dir=str(tmp_path / "runs"),
                          echo_logs=False) as rt:
        job, got = wait_on(parent_where(6))
        jobs = {n.job_id for n in rt.nodes}
    assert job is not None and jobs == {job}
    assert got == [(i * i, job) for i in range(6)]
    with Journal(rt.run_dir) as j:
        tasks = {t["id"]: t for t in j.tasks()}
        (parent,) = [i for i, t in tasks.items() if t["name"] == "parent_where"]
        edges = j.children()
        assert {p for p, _ in edges} == {parent}
        kids = sorted(c for _, c in edges)
        assert kids == sorted(i for i, t in tasks.items() if t["name"] == "child_where")
        assert len(j.children(parent)) == 6 and len(kids) == 6
        assert all(t["state"] == "DONE" for t in tasks.values())
