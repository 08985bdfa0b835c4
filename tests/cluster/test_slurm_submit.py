"""``taskflow submit``: the master and its agents in one real Slurm allocation (no mocks)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time


WORKFLOW = """\
import os, sys
from taskflow import task, wait_on

@task(returns=1)
def where(i):
    import time
    time.sleep(0.3)
    return i * i, os.environ.get("SLURMD_NODENAME"), os.environ.get("SLURM_JOB_ID")

out = wait_on([where(i) for i in range(int(sys.argv[1]))])
assert [o[0] for o in out] == [i * i for i in range(int(sys.argv[1]))], out
print("nodes:", ",".join(sorted({o[1] for o in out})))
print("jobs:", ",".join(sorted({o[2] for o in out})))
print("master job:", os.environ.get("SLURM_JOB_ID"))
"""


def _tf(args: list, cwd, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-m", "taskflow", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _state(jid: str) -> str:
    r = subprocess.run(["squeue", "-h", "-t", "all", "-j", jid, "-o", "%T"],
                       capture_output=True, text=True, timeout=15)
    return r.stdout.strip()


def _submit_and_wait(tmp_path, args: list) -> tuple[str, str]:
    """``taskflow submit ARGS``; wait for the job to end; (job id, its output)."""
    r = _tf(["submit", *args], tmp_path)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("submitted job ")
    jid = first.split()[2]
    out_line = [ln for ln in r.stdout.splitlines() if "output:" in ln][0]
    out_file = out_line.split("output:")[1].strip()
    deadline = time.time() + 150
    while _state(jid) in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
        assert time.time() < deadline, f"job {jid} still {_state(jid)}"
        time.sleep(0.5)
    text = open(out_file).read()
    assert _state(jid) == "COMPLETED", text
    return jid, text


def test_submit_runs_master_and_agents_in_one_allocation(slurm, tmp_path):
    (tmp_path / "wf.py").write_text(WORKFLOW)
    jid, text = _submit_and_wait(tmp_path, ["--nodes", "2", "--time", "5", "--cpus", "2",
                                            "--run-dir", str(tmp_path / "runs"), "wf.py", "16"])
    got = dict(ln.split(": ", 1) for ln in text.splitlines()
               if ln.startswith(("nodes:", "jobs:", "master job:")))
    assert len(got["nodes"].split(",")) == 2               # tasks ran on both allocated nodes
    assert got["jobs"] == jid and got["master job"] == jid   # all inside the one allocation
    runs = os.listdir(tmp_path / "runs")
    assert len(runs) == 1
    st = _tf(["status", "--run-dir", str(tmp_path / "runs")], tmp_path)
    assert "finished" in st.stdout and "tasks: 16  done 16" in st.stdout


SRUN_WORKFLOW = """\
from taskflow import FILE_OUT_STDOUT, mpi, task, wait_on, wait_on_file

@mpi(runner="srun", binary="bash", processes=4, processes_per_node=2, args="-c {{cmd}}")
@task(returns=int, out=FILE_OUT_STDOUT)
def ranks(cmd, out):
    pass

rc = ranks('echo "rank $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME step $SLURM_STEP_ID"',
           "ranks.txt")
print("exit:", wait_on(rc))
wait_on_file("ranks.txt")
"""


def test_mpi_srun_inside_the_allocation_uses_the_nodes_the_scheduler_chose(slurm, tmp_path):
    # Two allocated nodes of 2 CPUs, 4 ranks at 2 per node: one srun step over
    # both nodes (by Slurm's node names: all slurmd here share one hostname),
    # two ranks on each, although the agents' own step holds every CPU.
    (tmp_path / "wf.py").write_text(SRUN_WORKFLOW)
    jid, text = _submit_and_wait(tmp_path, ["-N", "2", "-t", "5", "--cpus", "2", "wf.py"])
    assert "exit: 0" in text
    lines = sorted((tmp_path / "ranks.txt").read_text().split("\n")[:-1])
    assert len(lines) == 4, lines
    words = [ln.split() for ln in lines]
    assert [w[1] for w in words] == ["0", "1", "2", "3"]          # each rank once
    assert {w[3] for w in words} == {"4"}                          # one step of 4 tasks
    per_node: dict = {}
    for w in words:
        per_node[w[5]] = per_node.get(w[5], 0) + 1
    assert sorted(per_node.values()) == [2, 2] and set(per_node) <= set(slurm.nodes), per_node
    assert len({w[7] for w in words}) == 1                         # one job step


def test_submit_dry_run_and_bad_partition(slurm, tmp_path):
    (tmp_path / "wf.py").write_text(WORKFLOW)
    r = _tf(["submit", "-N", "3", "-t", "10", "--worker-init", "export X=1", "--dry-run",
             "wf.py", "4"], tmp_path)
    assert r.returncode == 0
    assert "#SBATCH --nodes=3" in r.stdout and "#SBATCH --time=10" in r.stdout
    assert "export X=1" in r.stdout and "--slurm allocation --slurm-nodes 3" in r.stdout
    # resumable, and told of the walltime early enough to stop cleanly
    assert "#SBATCH --signal=B:TERM@120" in r.stdout and " --resumable " in r.stdout
    assert not (tmp_path / ".taskflow" / "submit").exists()       # nothing written or sent
    bad = _tf(["submit", "-N", "1", "-t", "5", "-p", "nosuchpartition", "wf.py", "4"], tmp_path)
    assert bad.returncode == 1
    assert "sbatch failed" in bad.stderr and "invalid partition" in bad.stderr.lower()
    assert "job script:" in bad.stderr


def test_allocation_mode_outside_an_allocation_says_what_to_do(tmp_path):
    (tmp_path / "wf.py").write_text(WORKFLOW)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_JOB")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--slurm", "allocation",
                        "wf.py", "2"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "not inside a Slurm allocation" in r.stderr
    assert "taskflow submit" in r.stderr


SLOW_WORKFLOW = """\
import os, sys, time
from taskflow import task, wait_on

@task(returns=int)
def slow(i):
    time.sleep(1.0)
    with open("ledger.txt", "a") as f:
        f.write(f"{i}\\n")
    return i * i

print("SUM", sum(wait_on([slow(i) for i in range(12)])))
"""


def _ledger(tmp_path) -> list[str]:
    p = tmp_path / "ledger.txt"
    return p.read_text().split() if p.exists() else []


def _wait_gone(jid: str, limit: float = 150) -> None:
    deadline = time.time() + limit
    while _state(jid) in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
        assert time.time() < deadline, f"job {jid} still {_state(jid)}"
        time.sleep(0.5)


def test_a_job_warned_of_its_walltime_stops_cleanly_and_is_resumed(slurm, tmp_path):
    """The walltime's warning (--signal=B:TERM@S: SIGTERM to the batch step, which is
    `taskflow run`) stops the run cleanly; the command it prints submits the rest."""
    (tmp_path / "wf.py").write_text(SLOW_WORKFLOW)
    r = _tf(["submit", "-N", "1", "-t", "5", "--cpus", "2", "wf.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    jid = r.stdout.splitlines()[0].split()[2]
    out_file = [ln for ln in r.stdout.splitlines() if "output:" in ln][0].split("output:")[1]
    deadline = time.time() + 120
    while len(_ledger(tmp_path)) < 3:        # some tasks finished, most did not
        assert time.time() < deadline and _state(jid) in ("PENDING", "RUNNING", "CONFIGURING")
        time.sleep(0.2)
    # what Slurm does at --signal=B:TERM@S before the walltime
    subprocess.run(["scancel", "--batch", "--signal=TERM", jid], check=True, timeout=30)
    _wait_gone(jid)
    text = open(out_file.strip()).read()
    assert "SIGTERM: stopping the run" in text, text
    line = [ln for ln in text.splitlines() if "continue it with:" in ln]
    assert line, text
    cmd = shlex.split(line[0].split("continue it with:")[1])
    assert cmd[:7] == ["taskflow", "submit", "-N", "1", "-t", "5", "--cpus"], cmd
    assert "--resume" in cmd
    st = _tf(["status"], tmp_path)
    assert "interrupted" in st.stdout and st.returncode == 1
    done_before = _ledger(tmp_path)
    assert 3 <= len(done_before) < 12
    (tmp_path / "ledger.txt").unlink()
    r2 = _tf(cmd[1:], tmp_path)                 # the printed command, as the user runs it
    assert r2.returncode == 0, r2.stderr
    jid2 = r2.stdout.splitlines()[0].split()[2]
    out2 = [ln for ln in r2.stdout.splitlines() if "output:" in ln][0].split("output:")[1]
    _wait_gone(jid2)
    assert _state(jid2) == "COMPLETED"
    text2 = open(out2.strip()).read()
    assert f"SUM {sum(i * i for i in range(12))}" in text2, text2
    again = _ledger(tmp_path)
    # every task that finished before the signal (its line written, its result in during
    # the grace period) is restored, not run again; the rest ran once
    assert sorted(again + done_before, key=int) == [str(i) for i in range(12)], \
        (done_before, again)
