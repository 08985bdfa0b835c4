"""The Slurm client cannot hang and does not flood: on the real local Slurm (3 slurmd), with
every Slurm command the master runs counted through wrappers first on PATH.

The budget (providers/slurm/queue.py): one batched ``squeue`` per look, every ``poll``
seconds while a decision waits on the queue and every ``poll_slow`` seconds once every
job runs; no call per job, no ``sacct`` while squeue lists the jobs. At the defaults
(poll_slow 30 s) a run's steady state costs at most 3 calls a minute; the tests use a
shorter poll_slow to see several intervals in seconds and check the same rule:
at most ceil(T / poll_slow) + 1 squeue calls in a steady window of T seconds.
"""
from __future__ import annotations

import math
import os
import subprocess
import time

import pytest

import taskflow
from taskflow import task, wait_on
from taskflow.errors import TaskError
from taskflow.providers.slurm import SlurmProvider
from support.waiting import until as _until

@task(returns=1)
def nap(i, pause=1.0):
    import time
    time.sleep(pause)
    return i


def _rt(tmp_path, p):
    return taskflow.Runtime(providers=[p], run_dir=str(tmp_path / "runs"), echo_logs=False)


def test_one_batched_squeue_per_interval_never_one_per_job(slurm, tmp_path, slurm_calls):
    slow = 1.5
    p = SlurmProvider("pilot", 3, cpus=2, max_queued=3, poll=0.5, poll_slow=slow)
    with _rt(tmp_path, p) as rt:
        _until(lambda: len([n for n in rt.nodes if n.alive]) == 3, 40, "3 pilots to join")
        futs = [nap(i, 0.5) for i in range(60)]          # 6 slots busy for ~5 s
        _until(lambda: all(s == "RUNNING" for s in p.jobs.values()), 20, "every job running")
        time.sleep(slow + 0.5)           # (the look that saw them all run set the slow pace)
        t0 = time.time()
        time.sleep(3 * slow)
        steady = slurm_calls("squeue", since=t0)
        assert wait_on(futs) == list(range(60))
    # steady state: one squeue per poll_slow, for all 3 jobs at once
    window = 3 * slow
    assert 1 <= len(steady) <= math.ceil(window / slow) + 1, steady
    everything = slurm_calls()
    assert not [c for c in everything if c.startswith("squeue") and " -j " in c], everything
    assert all("-n " + p.job_name in c for c in everything if c.startswith("squeue"))
    assert not slurm_calls("sacct")                          # squeue still listed every job
    assert len(slurm_calls("sbatch")) == 3                   # one per pilot, none twice
    assert any("submitted job" in d for d in p.decisions)


def test_the_controller_away_mid_run_waits_says_so_once_and_never_submits_twice(
        slurm, tmp_path, slurm_calls):
    p = SlurmProvider("pilot", 2, cpus=2, max_queued=2, poll=0.5, poll_slow=2.0,
                      controller_wait=120)
    try:
        with _rt(tmp_path, p) as rt:
            _until(lambda: len([n for n in rt.nodes if n.alive]) == 2, 40, "2 pilots to join")
            futs = [nap(i, 1.0) for i in range(48)]       # 4 slots: ~12 s of work, more
            #                                               than the outage on 2 slots
            victim = rt.nodes[0]
            _until(lambda: victim.inflight, 20, "tasks on the first pilot")
            slurm.stop_controller()
            os.kill(victim.info["pid"], 9)                # a pilot lost while Slurm is away
            _until(lambda: not victim.alive, 20, "the lost pilot")
            # (squeue tries ~10 s before it says it cannot reach the controller)
            _until(lambda: any("does not answer" in d for d in p.decisions), 40,
                   "the manager to say the controller does not answer")
            time.sleep(2)
            assert len(slurm_calls("sbatch")) == 2            # it wants a replacement: not yet
            slurm.start_controller()
            assert wait_on(futs) == list(range(48))       # the run went on and finished
            _until(lambda: len(slurm_calls("sbatch")) >= 3, 30, "the replacement pilot")
            time.sleep(2)                                 # (a second one would come now)
    finally:
        if slurm.controller_down:
            slurm.start_controller()
    assert len(slurm_calls("sbatch")) == 3                    # the replacement, once
    said = p.decisions
    assert sum("does not answer" in d for d in said) == 1, said
    assert sum("answers again" in d for d in said) == 1, said
    assert not rt.failed and rt.tally.done == 48


def test_a_controller_that_stays_away_is_given_up_with_a_clear_error(slurm, tmp_path,
                                                                     slurm_calls):
    p = SlurmProvider("pilot", 1, cpus=2, poll=0.5, poll_slow=2.0, controller_wait=4)
    try:
        with _rt(tmp_path, p) as rt:
            assert wait_on(nap(1, 0.0)) == 1
            slurm.stop_controller()
            futs = [nap(i, 0.5) for i in range(8)]
            node = rt.nodes[0]
            os.kill(node.info["pid"], 9)                  # the only node is gone
            t0 = time.time()
            with pytest.raises(TaskError) as err:
                wait_on(futs)
            waited = time.time() - t0
            slurm.start_controller()         # (so that stop's scancel need not wait for it)
    finally:
        if slurm.controller_down:
            slurm.start_controller()
    assert "has not answered for 4 s" in str(err.value), err.value
    assert waited < 60                                    # the bound, not a hang
    assert any("giving up on Slurm" in d for d in p.decisions)


def test_a_pilot_whose_job_vanished_is_replaced(slurm, tmp_path, slurm_calls):
    blocker = subprocess.run(["sbatch", "--parsable", "-J", "tf-test-blocker", "-N", "2",
                              "--exclusive", "--wrap", "sleep 120"], capture_output=True,
                             text=True, check=True).stdout.strip()
    try:
        _until(lambda: subprocess.run(["squeue", "-h", "-j", blocker, "-o", "%T"],
                                      capture_output=True, text=True).stdout.strip()
               == "RUNNING", 30, "the blocker to hold 2 nodes")
        p = SlurmProvider("pilot", 2, cpus=2, max_queued=2, poll=0.5, poll_slow=2.0)
        with _rt(tmp_path, p):
            assert wait_on(nap(1, 0.0)) == 1
            _until(lambda: any(s == "PENDING" for s in p.jobs.values()), 20, "a pending pilot")
            pending = next(j for j, s in p.jobs.items() if s == "PENDING")
            # the job leaves the run's queue (renamed: squeue -n no longer lists it)
            subprocess.run(["scontrol", "update", f"jobid={pending}", "name=elsewhere"],
                           check=True, timeout=15)
            _until(lambda: len(p.submitted) >= 3, 30, "a pilot in its place")
            assert p.jobs[pending].startswith("VANISHED")
            subprocess.run(["scancel", pending], timeout=15)
    finally:
        subprocess.run(["scancel", blocker], timeout=15)
    assert any(f"job {pending} ended: VANISHED" in d for d in p.decisions), p.decisions
