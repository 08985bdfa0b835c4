"""``slurm_bench.py --auto``: does --slurm auto pick the mode that finishes first?

Scenarios on the 3-node testbed (2 CPUs each), an idle cluster and a busy one
(blocker jobs holding nodes: ``sbatch --exclusive --time=1 --wrap 'sleep S'``, so
the queue sees their one-minute limit and not when they really end). In each:
the blockers start, --slurm auto decides from the queue as a run would see it
(taskflow.providers.slurm.auto.choose, with the workload's work), then the
workload runs in batch mode and, after the same blockers again, in pilot mode
(the order alternates between scenarios); M is from the first submission to the
last result (slurm_bench.one). Target: the faster mode chosen in at least 90 %
of the scenarios.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from taskflow.providers.slurm.auto import choose

import slurm_bench

NODES = 3
# name, blockers [(nodes, seconds)], tasks, seconds each, max_queued, poll
SCENARIOS = [
    ("idle-1", [], 24, 0.5, 3, 2.0),
    ("idle-2", [], 60, 2.0, 1, 4.0),     # pilots throttled: one queued at a time
    ("busy-1", [(2, 20)], 24, 1.0, 3, 2.0),
    ("busy-2", [(3, 12)], 60, 2.0, 1, 4.0),
    ("busy-3", [(1, 15)], 24, 2.0, 3, 2.0),
]


def _sh(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()


def _block(blockers: list[tuple[int, float]]) -> list[str]:
    jids = [_sh("sbatch", "--parsable", "-J", "tf-bench-busy", "-o", "/dev/null", "-N", str(n), "--exclusive",
                "--time=1", "--wrap", f"sleep {s}") for n, s in blockers]
    deadline = time.time() + 30
    while jids and time.time() < deadline:
        states = [_sh("squeue", "-h", "-j", j, "-o", "%T") for j in jids]
        if all(s == "RUNNING" for s in states):
            break
        time.sleep(0.1)
    return jids


def _idle() -> None:
    """Every node idle again (the blockers and the run's jobs gone)."""
    deadline = time.time() + 60
    while time.time() < deadline:
        states = _sh("sinfo", "-h", "-N", "-o", "%T").split()
        if states and all(s == "idle" for s in states) and not _sh("squeue", "-h", "-o", "%i"):
            return
        time.sleep(0.2)


def scenario(name: str, blockers: list[tuple[int, float]], tasks: int, seconds: float,
             max_queued: int, poll: float, first: str) -> dict:
    _idle()
    jids = _block(blockers)
    kw = {"cpus": 2, "max_queued": max_queued, "poll": poll}
    mode, line, numbers = choose(NODES, kw, work=tasks * seconds)
    print(f"[{name}] {line}", file=sys.stderr, flush=True)
    measured = {}
    for i, m in enumerate((first, "pilot" if first == "batch" else "batch")):
        if i:
            _idle()
            jids = _block(blockers)
        r = slurm_bench.one(m, NODES, tasks, seconds, 0.0, max_queued=max_queued, poll=poll)
        measured[m] = r["M"]
        print(f"[{name}] {m}: M {r['M']:.2f} s, W {r['W']:.2f} slots, queue waits "
              f"{r['queue_wait_s']}", file=sys.stderr, flush=True)
        for j in jids:
            subprocess.run(["scancel", j], capture_output=True)
    return {"scenario": name, "chosen": mode, "predicted_batch_s": numbers["predicted_batch_s"],
            "predicted_pilot_s": numbers["predicted_pilot_s"],
            "measured_batch_s": measured["batch"], "measured_pilot_s": measured["pilot"],
            "work_slot_s": tasks * seconds, "max_queued": max_queued, "poll": poll,
            "blockers": blockers, "decision": line}


def main(json_path: str | None) -> None:
    rows = []
    for i, sc in enumerate(SCENARIOS):
        rows.append(scenario(*sc, first="batch" if i % 2 == 0 else "pilot"))
    right = [r for r in rows if r["chosen"] == ("batch" if r["measured_batch_s"]
                                                < r["measured_pilot_s"] else "pilot")]
    print("| scenario | chosen | predicted batch / pilot (s) | measured batch / pilot (s) | "
          "right |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['scenario']} | {r['chosen']} | {r['predicted_batch_s']:.1f} / "
              f"{r['predicted_pilot_s']:.1f} | {r['measured_batch_s']:.1f} / "
              f"{r['measured_pilot_s']:.1f} | {'yes' if r in right else 'NO'} |")
    print(f"\nthe faster mode chosen in {len(right)} of {len(rows)} scenarios "
          f"({100 * len(right) / len(rows):.0f} %; target: 90 %)")
    if json_path:
        Path(json_path).write_text(json.dumps({"auto": rows}, indent=1))
