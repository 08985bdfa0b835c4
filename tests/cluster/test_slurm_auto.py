"""--slurm auto: the SPA model's arithmetic, and the decision both ways on the real Slurm."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from taskflow.journal.reader import Journal, run_ids
from taskflow.observe.report import figures, to_markdown
from taskflow.providers.slurm.auto import QueueState, choose, expand_hosts, makespan


def test_makespan_integrates_the_slots_held_until_the_work_is_done():
    assert makespan([0, 0, 0], cpus=2, work=12) == pytest.approx(2.0)
    # one node from 0, two more from 4: 2 x 4 = 8 slot-s, then 6 slots for the last 16
    assert makespan([0, 4, 4], cpus=2, work=24) == pytest.approx(4 + 16 / 6)
    # work done before the late nodes come: they do not count
    assert makespan([0, 100, 100], cpus=2, work=10) == pytest.approx(5.0)
    assert makespan([], cpus=2, work=1) == float("inf")


def test_hostlists_expand_like_slurms():
    assert expand_hosts("n[1-3,5],gpu07") == ["n1", "n2", "n3", "n5", "gpu07"]
    assert expand_hosts("c[08-10]") == ["c08", "c09", "c10"]
    assert expand_hosts("") == []


def test_the_backlog_takes_the_first_nodes_that_come_free():
    q = QueueState(None, run=None)
    q.free = {"n1": 0.0, "n2": 30.0, "n3": 60.0}
    assert q.node_starts(3) == [0.0, 30.0, 60.0]
    q.backlog = [(1, 100.0)]          # a one-node job ahead of ours, 100 s long
    assert q.node_starts(3) == [30.0, 60.0, 100.0]


def test_auto_decides_both_ways_on_the_testbed(slurm, slurm_calls):
    # idle, pilots may all queue at once: they start no later and join sooner
    mode, line, numbers = choose(3, {"cpus": 2, "max_queued": 3}, work=12)
    assert mode == "pilot" and "chose pilot" in line
    assert numbers["idle_nodes"] == 3 and numbers["nodes_seen"] == 3
    # one pilot queued at a time and a long run: one allocation of 3 nodes is sooner
    mode, line, numbers = choose(3, {"cpus": 2, "max_queued": 1, "poll": 4}, work=120)
    assert mode == "batch", line
    assert numbers["predicted_batch_s"] < numbers["predicted_pilot_s"]
    # three Slurm calls a decision, none of them submits anything
    calls = slurm_calls()
    assert len(calls) == 6 and not [c for c in calls if c.startswith("sbatch")
                                    and "--test-only" not in c], calls


def test_taskflow_run_slurm_auto_prints_and_keeps_its_decision(slurm, tmp_path):
    script = tmp_path / "wf.py"
    script.write_text(textwrap.dedent("""
        from taskflow import task, wait_on

        @task(returns=1)
        def sq(x):
            return x * x

        print(sum(wait_on([sq(i) for i in range(20)])))
    """))
    runs = tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--slurm", "auto",
                        "--slurm-nodes", "2", "--slurm-opt", "cpus=2", "--slurm-opt", "work=8",
                        "--run-dir", str(runs), "--no-progress", str(script)],
                       capture_output=True, text=True, timeout=110, cwd=tmp_path,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(sum(i * i for i in range(20)))
    said = [ln for ln in r.stderr.splitlines() if "--slurm auto chose" in ln]
    assert len(said) == 1 and "predicted makespan batch" in said[0], r.stderr
    (rid,) = run_ids(str(runs))
    with Journal(str(runs / rid)) as j:
        kept = [ln["line"] for ln in j.logs(task=0, levels=["SLURM"])]
        report = to_markdown(figures(j))
    assert kept[0] == said[0].split("taskflow: ", 1)[-1]
    assert any(k.startswith("submitted job") for k in kept)
    assert "## Slurm decisions" in report and "--slurm auto chose" in report
