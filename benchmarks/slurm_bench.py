"""Batch allocation against pilot jobs on the local Slurm: the SPA accounting M = C/W.

    python benchmarks/slurm_bench.py [--nodes 3] [--tasks 48] [--duration 0.5]
                                     [--busy SECONDS] [--json out.json]
    python benchmarks/slurm_bench.py --auto [--json out.json]

--auto: the scenarios of benchmarks/slurm_auto_bench.py (an idle cluster and a
busy one, blocker jobs holding nodes): in each, --slurm auto's decision
(taskflow.providers.slurm.auto.choose) from the queue as the run would see
it, then both modes run for the measurement; JSON {"auto": [{"scenario",
"chosen", "predicted_batch_s", "predicted_pilot_s", "measured_batch_s",
"measured_pilot_s"}, ...]}.

The same workflow (``--tasks`` tasks sleeping ``--duration`` s, so the
figures do not depend on the load of a shared machine) runs once with one
``sbatch`` of ``--nodes`` nodes and once with ``--nodes`` pilot jobs. For
each: M the makespan (from the provider's first submission to the last
result), w(t) the executor slots joined at time t, W = (1/M) ∫ w(t) dt,
C = sum of task run times, and C/W against M; then M_batch / M_pilot against
W_pilot / W_batch. ``--busy S`` first holds all nodes but one with an outside
job for S seconds (a busy cluster): the allocation waits for it, pilots
start on the free node. Needs SLURM_CONF, or brings up
testbed/slurm.sh itself (root).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

import taskflow  # noqa: E402
from taskflow import task, wait_on  # noqa: E402
from taskflow.providers.slurm import SlurmProvider  # noqa: E402


@task(returns=1)
def work(i: int, d: float) -> int:
    import time
    time.sleep(d)
    return i


def _busy(nodes: int, seconds: float) -> str | None:
    if seconds <= 0 or nodes < 2:
        return None
    out = subprocess.run(["sbatch", "--parsable", "-J", "tf-bench-busy", "-o", "/dev/null", "-N", str(nodes - 1),
                          "--exclusive", "--wrap", f"sleep {seconds}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    deadline = time.time() + 30
    while time.time() < deadline:       # wait until it holds its nodes
        st = subprocess.run(["squeue", "-h", "-j", out, "-o", "%T"], capture_output=True,
                            text=True).stdout.strip()
        if st == "RUNNING":
            break
        time.sleep(0.1)
    return out


def one(mode: str, nodes: int, tasks: int, duration: float, busy: float,
        **provider: object) -> dict:
    blocker = _busy(nodes, busy)
    lost: dict = {}
    p = SlurmProvider(mode, nodes, **{"cpus": 2, "max_queued": nodes, **provider})
    with tempfile.TemporaryDirectory() as tmp:
        rt = taskflow.Runtime(providers=[p], run_dir=tmp, echo_logs=False, journal=False,
                              start_timeout=180)
        rt.bus.subscribe(lambda evs: lost.update({e[4]: e[1] for e in evs
                                                  if e[0] == "node_lost"}))
        t0 = time.time()
        rt.start()
        t_first = p.submitted[0][0]
        futs = [work(i, duration) for i in range(tasks)]
        assert wait_on(futs) == list(range(tasks))
        t_end = time.time()
        nodes_seen = list(rt.nodes)
        rt.stop()
    C = tasks * duration      # each task's run time is its sleep (the executor overhead aside)
    M = t_end - t_first
    area = sum(n.slots * (min(lost.get(n.name, t_end), t_end) - max(n.joined, t_first))
               for n in nodes_seen)
    W = area / M
    join = {str(n.job_id): n.joined for n in nodes_seen}
    waits = {j: round(join[j] - ts, 2) for ts, j in p.submitted if j in join}
    if blocker:
        subprocess.run(["scancel", blocker], capture_output=True)
    return {"mode": mode, "M": M, "W": W, "C": C, "C_over_W": C / W if W else float("inf"),
            "start_s": rt.t_start - t0, "queue_wait_s": waits,
            "jobs": len(p.submitted), "nodes_joined": len(nodes_seen)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=48)
    ap.add_argument("--duration", type=float, default=0.5)
    ap.add_argument("--busy", type=float, default=0.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--auto", action="store_true", help="--slurm auto's scenarios")
    a = ap.parse_args()
    own = not os.environ.get("SLURM_CONF")
    script = ROOT / "testbed" / "slurm.sh"
    held = None
    if own:      # the tests' lock (testbed/testbed_hold.py): a test session waits
        sys.path.insert(0, str(ROOT / "testbed"))
        from testbed_hold import hold
        tb = os.environ.get("TF_SLURM_TB", "/tmp/taskflow-slurm")
        held = hold(os.path.join(os.path.dirname(tb), "taskflow-slurm.lock"), 1800)
        if held is None:
            sys.exit("the Slurm testbed stayed in use by another session")
        subprocess.run(["bash", str(script), "down"], capture_output=True)
        subprocess.run(["bash", str(script), "up", str(a.nodes)], check=True)
        os.environ["SLURM_CONF"] = os.path.join(os.environ.get("TF_SLURM_TB", "/tmp/taskflow-slurm"),
                                                "slurm", "slurm.conf")
    try:
        if a.auto:
            import slurm_auto_bench
            slurm_auto_bench.main(a.json)
            return
        rows = [one(m, a.nodes, a.tasks, a.duration, a.busy) for m in ("batch", "pilot")]
    finally:
        if own:
            subprocess.run(["bash", str(script), "down"])
        if held is not None:
            held.close()
    b, p = rows
    print("| mode | M (s) | W (slots) | C (slot-s) | C/W (s) | jobs | queue wait per job (s) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['M']:.2f} | {r['W']:.2f} | {r['C']:.1f} | {r['C_over_W']:.2f} "
              f"| {r['jobs']} | {' '.join(f'{v:g}' for v in r['queue_wait_s'].values())} |")
    print(f"\nM_batch / M_pilot = {b['M'] / p['M']:.3f}   W_pilot / W_batch = "
          f"{p['W'] / b['W']:.3f}   (equal when M = C/W holds for both)")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
