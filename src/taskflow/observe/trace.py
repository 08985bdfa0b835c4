"""A Chrome / Perfetto trace (one track per node slot) and a Gantt chart.

Open ``trace.json`` in https://ui.perfetto.dev or chrome://tracing. Tasks
are placed on the lowest free slot of their node, so each track is one
executor slot's timeline.
"""
from __future__ import annotations

import json
import os
from typing import Any

from ..journal.reader import Journal


def slot_intervals(j: Journal) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Tasks that ran, each with ``slot`` set; and slots per node."""
    slots = {n["name"]: int(n["slots"] or 1) for n in j.nodes()}
    ran = [t for t in j.tasks() if t["t_start"] and t["t_end"]]
    ran.sort(key=lambda t: (t["t_start"], t["id"]))
    free_at: dict[str, list[float]] = {}
    for t in ran:
        node = t["node"] or "?"
        lanes = free_at.setdefault(node, [0.0] * slots.get(node, 1))
        lane = next((i for i, f in enumerate(lanes) if f <= t["t_start"] + 1e-6), None)
        if lane is None:                 # more overlap than slots (multi-unit tasks): add a lane
            lanes.append(0.0)
            lane = len(lanes) - 1
        lanes[lane] = t["t_end"]
        t["slot"] = lane
        slots[node] = max(slots.get(node, 1), len(lanes))
    return ran, slots


def chrome_trace(j: Journal) -> dict[str, Any]:
    ran, slots = slot_intervals(j)
    t0 = min((t["t_submit"] for t in j.tasks() if t["t_submit"]), default=0.0)
    pids = {n: i + 1 for i, n in enumerate(sorted(slots))}
    ev: list[dict[str, Any]] = []
    for node, pid in pids.items():
        ev.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                   "args": {"name": f"node {node}"}})
        for s in range(slots[node]):
            ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": s,
                       "args": {"name": f"slot {s}"}})
    for t in ran:
        ev.append({"ph": "X", "name": t["name"], "cat": t["state"], "pid": pids[t["node"] or "?"],
                   "tid": t["slot"], "ts": round((t["t_start"] - t0) * 1e6, 1),
                   "dur": round(max(0.0, t["t_end"] - t["t_start"]) * 1e6, 1),
                   "args": {"id": t["id"], "params": t["params"], "state": t["state"],
                            "queued_s": round(t["t_start"] - t["t_submit"], 6)}})
    return {"traceEvents": ev, "displayTimeUnit": "ms",
            "otherData": {"run_id": j.run().get("run_id"), "t0": t0}}


def write_trace(run_dir: str, out_dir: str | None = None, gantt: bool = True) -> dict[str, str]:
    """Write ``trace.json`` (and ``gantt.png`` when matplotlib is installed)."""
    out_dir = out_dir or run_dir
    os.makedirs(out_dir, exist_ok=True)
    paths = {"trace": os.path.join(out_dir, "trace.json")}
    with Journal(run_dir) as j:
        with open(paths["trace"], "w") as f:
            json.dump(chrome_trace(j), f)
        if gantt:
            try:
                paths["gantt"] = write_gantt(j, os.path.join(out_dir, "gantt.png"))
            except ImportError:
                paths["gantt_error"] = "matplotlib is not installed (pip install 'taskflow[trace]')"
    return paths


def write_gantt(j: Journal, path: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .graph import PALETTE
    ran, slots = slot_intervals(j)
    rows = [(n, s) for n in sorted(slots) for s in range(slots[n])]
    index = {r: i for i, r in enumerate(rows)}
    names = sorted({t["name"] for t in ran})
    col = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
    t0 = min((t["t_start"] for t in ran), default=0.0)
    fig, ax = plt.subplots(figsize=(10, max(2.0, 0.4 * len(rows) + 1.2)))
    for t in ran:
        y = index[(t["node"] or "?", t["slot"])]
        ax.broken_barh([(t["t_start"] - t0, max(t["t_end"] - t["t_start"], 1e-4))], (y - 0.4, 0.8),
                       facecolors=col[t["name"]],
                       edgecolors="#d00000" if t["state"] == "FAILED" else "#333333",
                       linewidth=0.5)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{n}/{s}" for n, s in rows])
    ax.set_xlabel("seconds since the first task started")
    ax.set_title(f"run {j.run().get('run_id')}")
    from matplotlib.patches import Patch
    if names:
        ax.legend(handles=[Patch(color=col[n], label=n) for n in names[:12]],
                  loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
