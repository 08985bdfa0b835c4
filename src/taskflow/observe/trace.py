"""A Chrome / Perfetto trace (one track per node slot) and a Gantt chart.

Open ``trace.json`` in https://ui.perfetto.dev or chrome://tracing. Tasks
are placed on the lowest free slots of their node, so each track is one
executor slot's timeline; a task that held several slots (an MPI task's
ranks) is on each of them.
"""
from __future__ import annotations

import json
import os
from typing import Any

from .._version import install_hint
from ..journal.reader import Journal, slots_of
from .palette import colours

LEGEND_MAX = 60      # names in the Gantt legend; the rest are counted


def slot_intervals(j: Journal) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Tasks that ran, each with ``lanes`` [(node, slot)] set; and slots per node.

    A task that held k slots of a node (an MPI task's ranks, ``computing_units``)
    takes k lanes there, on every node it held, for its whole run. Lanes are
    given in start order, the lowest free first; where the journal shows more
    overlap than a node has slots, a lane is added.
    """
    slots = {n["name"]: int(n["slots"] or 1) for n in j.nodes()}
    held = j.placements()
    ran = [t for t in j.tasks() if t["t_start"] and t["t_end"]]
    ran.sort(key=lambda t: (t["t_start"], t["id"]))
    free_at: dict[str, list[float]] = {}
    for t in ran:
        t["held"] = slots_of(t, held)
        lanes_of: list[tuple[str, int]] = []
        for node, k in t["held"]:
            lanes = free_at.setdefault(node, [0.0] * slots.get(node, 1))
            for _ in range(k):
                lane = next((i for i, f in enumerate(lanes) if f <= t["t_start"] + 1e-6), None)
                if lane is None:            # more overlap than slots: add a lane
                    lanes.append(0.0)
                    lane = len(lanes) - 1
                lanes[lane] = t["t_end"]
                lanes_of.append((node, lane))
            slots[node] = max(slots.get(node, 1), len(lanes))
        t["lanes"] = lanes_of
        t["slot"] = lanes_of[0][1] if lanes_of else 0
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
        nslots = sum(k for _, k in t["held"])
        for node, lane in t["lanes"]:
            ev.append({"ph": "X", "name": t["name"], "cat": t["state"], "pid": pids[node],
                       "tid": lane, "ts": round((t["t_start"] - t0) * 1e6, 1),
                       "dur": round(max(0.0, t["t_end"] - t["t_start"]) * 1e6, 1),
                       "args": {"id": t["id"], "params": t["params"], "state": t["state"],
                                "slots": nslots,
                                "queued_s": round(t["t_start"] - t["t_submit"], 6)}})
    retried = j.retries()
    names = j.names_of(list(retried)) if retried else {}
    for tid, tries in retried.items():      # each retry: an instant on its node's track
        for n, (when, node, why) in enumerate(tries, 1):
            ev.append({"ph": "i", "s": "p", "name": f"retry: {names.get(tid, '?')}",
                       "pid": pids.get(node, 0), "tid": 0, "ts": round((when - t0) * 1e6, 1),
                       "args": {"id": tid, "attempt": n, "why": why}})
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
                paths["gantt_error"] = f"matplotlib is not installed ({install_hint('trace')})"
    return paths


def write_gantt(j: Journal, path: str) -> str:
    """Write :func:`gantt_figure` as a PNG at ``path``."""
    import matplotlib.pyplot as plt
    fig = gantt_figure(j)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path


def gantt_figure(j: Journal) -> Any:
    """A Gantt chart of the slots: a task is drawn on every slot it held; legend beside it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    ran, slots = slot_intervals(j)
    rows = [(n, s) for n in sorted(slots) for s in range(slots[n])]
    index = {r: i for i, r in enumerate(rows)}
    col = colours(t["name"] for t in ran)
    names = sorted(col)
    t0 = min((t["t_start"] for t in ran), default=0.0)
    shown = names[:LEGEND_MAX]
    ncol = 1 if len(shown) <= 16 else 2
    legend_w = 0.0 if not shown else ncol * (0.9 + 0.075 * max(len(n) for n in shown))
    fig, ax = plt.subplots(figsize=(10 + legend_w, max(2.4, 0.4 * len(rows) + 1.2,
                                                       0.2 * len(shown) / ncol + 0.8)))
    for t in ran:
        failed = t["state"] == "FAILED"
        for lane in t["lanes"]:
            y = index[lane]
            ax.broken_barh([(t["t_start"] - t0, max(t["t_end"] - t["t_start"], 1e-4))],
                           (y - 0.4, 0.8), facecolors=col[t["name"]],
                           edgecolors="#d00000" if failed else "#333333",
                           linewidth=1.5 if failed else 0.5)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{n}/{s}" for n, s in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first task started")
    ax.set_title(f"run {j.run().get('run_id')}")
    if shown:
        handles = [Patch(facecolor=col[n], edgecolor="#333333", label=n) for n in shown]
        if len(names) > len(shown):
            handles.append(Patch(color="white", label=f"... {len(names) - len(shown)} more"))
        # outside the axes, to the right: it never covers a bar
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0, fontsize=8, ncol=ncol, frameon=False,
                  title="task names", title_fontsize=8)
    fig.tight_layout()
    return fig
