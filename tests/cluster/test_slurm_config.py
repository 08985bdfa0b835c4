"""Slurm workers from the cluster file (``slurm:`` section) and from ``taskflow run`` flags."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from taskflow.cli.nodes import slurm_cli_provider
from taskflow.providers.cluster import ClusterConfigError, parse_cluster
from taskflow.providers.slurm import SlurmProvider

GOOD = """\
placement: least-loaded
slurm:
  mode: pilot
  nodes: 3
  cpus: 2
  partition: debug
  time: 30
  memory: 1G
  sbatch: ["--exclusive"]
  worker_init: ["export A=1"]
  max_queued: 2
  idle_timeout: 20
  drain_margin: 10
"""


def test_slurm_section_parses_into_a_provider():
    c = parse_cluster(GOOD, "c.yaml")
    assert c.nodes == [] and c.placement == "least-loaded"
    (p,) = c.providers()
    assert isinstance(p, SlurmProvider)
    assert (p.mode, p.target, p.cpus, p.partition, p.time_limit, p.memory) == \
        ("pilot", 3, 2, "debug", "30", "1G")
    assert p.sbatch_lines == ["--exclusive"] and p.worker_init == ["export A=1"]
    assert (p.max_queued, p.idle_timeout, p.drain_margin) == (2, 20, 10)


@pytest.mark.parametrize("text, where, words", [
    ("slurm:\n  mode: batch\n  nodez: 2\n", ":3:", "unknown key 'nodez' in slurm"),
    ("slurm:\n  mode: elastic\n", ":2:", "slurm.mode 'elastic' is not batch, pilot, auto or allocation"),
    ("slurm:\n  nodes: 0\n", ":2:", "slurm.nodes must be >= 1"),
    ("slurm:\n  cpus: four\n", ":2:", "slurm.cpus must be an integer"),
    ("slurm:\n  worker_init: [1, 2]\n", ":2:", "slurm.worker_init must be a list of strings"),
    ("slurm: pilot\n", ":1:", "slurm must be a mapping, got str 'pilot'"),
    ("placement: fifo\n", ":1:", "missing key 'nodes' (a list of nodes) or a 'slurm' section"),
])
def test_slurm_section_errors_name_line_and_key(text, where, words):
    with pytest.raises(ClusterConfigError) as ei:
        parse_cluster(text, "c.yaml")
    msg = str(ei.value)
    assert msg.startswith("c.yaml" + where) and words in msg


def test_run_flags_make_the_same_provider(capsys):
    p = slurm_cli_provider("batch", 2, ("cpus=2", "time=5", "worker_init=module load x",
                                        "worker_init=. venv/bin/activate", "idle_timeout=1.5"))
    assert (p.mode, p.target, p.cpus, p.time_limit, p.idle_timeout) == ("batch", 2, 2, "5", 1.5)
    assert p.worker_init == ["module load x", ". venv/bin/activate"]
    with pytest.raises(SystemExit) as ei:
        slurm_cli_provider("batch", 2, ("cpus=two",))
    assert ei.value.code == 2 and "--slurm-opt cpus must be an integer" in capsys.readouterr().err


WORKFLOW = """\
import os
from taskflow import task, wait_on

@task(returns=1)
def where(i):
    import time
    time.sleep(0.2)
    return i * i, os.environ.get("SLURMD_NODENAME")

out = wait_on([where(i) for i in range(12)])
assert [o[0] for o in out] == [i * i for i in range(12)], out
print("nodes:", ",".join(sorted({o[1] for o in out})))
"""


def test_taskflow_run_with_a_slurm_cluster_file(slurm, tmp_path):
    (tmp_path / "wf.py").write_text(WORKFLOW)
    (tmp_path / "cluster.yaml").write_text("slurm:\n  mode: batch\n  nodes: 2\n  cpus: 2\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--cluster", "cluster.yaml",
                        "--run-dir", str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("nodes:")][0]
    assert len(line.split(":")[1].split(",")) == 2          # both allocated nodes worked
