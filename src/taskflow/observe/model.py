"""The run report's figures: per task name, resources, and the scheduling model.

The report (:func:`.report.report`) is summary first, as Nextflow's: the run and its
failures (:mod:`.runinfo`), per task name the counts, times and resources
(:mod:`.distributions`), the timeline and the graph, and last the
scheduling model for HPC planners, computed here. Markdown on stdout
(:mod:`.mdreport`), one self-contained HTML page (:mod:`.htmlreport`).

Model (the SPA seed): with w(t) the number of busy slots at time t and M the
makespan, W = (1/M) ∫ w(t) dt is the time-averaged parallelism and the total
CPU time is C = ∫ w(t) dt, so M = C / W. The report sets M against C/W (the
identity, a check of the journal's times), against C/P (all P slots busy)
and against the critical path L (the longest chain of dependent run times);
max(C/P, L) is the lower bound no scheduler can beat.

Two W's. ``W`` (``figures()["W"]``) averages the *busy* slots, so M = C / W is
an identity. In the SPA study w(t) is the number of workers the run *holds*
(joined, busy or not): that is ``W_held`` here, from the journal's node joins
and leaves (:mod:`.workers`); C / W_held against M shows what idle held
slots cost, and busy / held slot-seconds (``utilisation``) the same as a
ratio. P is the most slots held at once.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import networkx as nx

from ..journal.reader import Journal, slots_of
from . import workers
from .distributions import PCT_MIN_S
from .graph import build, critical_path


def busy_integral(intervals: Sequence[tuple[float, ...]], lo: float, hi: float) -> float:
    """∫ w(t) dt over [lo, hi] by a sweep over the run intervals.

    An interval is ``(start, end)`` (one slot) or ``(start, end, slots)``.
    """
    pts: list[tuple[float, int]] = []
    for iv in intervals:
        a, b = max(iv[0], lo), min(iv[1], hi)
        k = int(iv[2]) if len(iv) > 2 else 1
        if b > a:
            pts.append((a, k))
            pts.append((b, -k))
    pts.sort()
    total, w, last = 0.0, 0, lo
    for t, d in pts:
        total += w * (t - last)
        w += d
        last = t
    return total


def run_intervals(j: Journal, tasks: list[dict[str, Any]]) -> list[tuple[float, float, int]]:
    """(start, end, slots held) of every task that ran."""
    held = j.placements()
    return [(t["t_start"], t["t_end"], sum(k for _, k in slots_of(t, held)))
            for t in tasks if t.get("t_start") and t.get("t_end")]


class PerTask(NamedTuple):
    """What the HTML report draws per task (not in :func:`figures`: it grows with the run)."""
    graph: nx.DiGraph
    ran: list[dict[str, Any]]
    ready: dict[int, float]          # task id -> when its last input was there
    queued: dict[int, float]         # task id -> seconds ready but waiting for a slot
    usage: dict[int, tuple[Any, ...]]
    intervals: list[tuple[float, float, int]]

SLURM_LINES = 40     # the Slurm decisions the report shows (the journal keeps them all)


def figures(j: Journal) -> dict[str, Any]:
    """Every number the report shows, as a dict (the monitor's API serves it too)."""
    return compute(j)[0]


def compute(j: Journal) -> tuple[dict[str, Any], PerTask]:
    """:func:`figures` and the per-task data the pictures need."""
    g = build(j)
    tasks = [d for _, d in g.nodes(data=True)]
    ran = [t for t in tasks if t.get("t_start") and t.get("t_end")]
    nodes = j.nodes()
    run = j.run()
    subs = [t["t_submit"] for t in tasks if t.get("t_submit")]
    t_first = min(subs) if subs else (run.get("t_start") or 0.0)
    t_last = max((t["t_end"] for t in tasks if t.get("t_end")), default=t_first)
    M = max(t_last - t_first, 0.0)
    intervals = run_intervals(j, ran)
    # C in slot-seconds: a task that held k slots (an MPI task's ranks) counts k times
    C = sum((b - a) * k for a, b, k in intervals)
    integral = busy_integral(intervals, t_first, t_last)
    W = integral / M if M > 0 else 0.0
    curve = workers.held_curve(nodes, t_first, t_last)
    # P, the slots of "all P slots busy": the most held at once. Not the sum over every node
    # that ever joined, which counts a replaced pilot's slots twice.
    slots = max((w for _, w in curve), default=0) or \
        sum(int(n["slots"] or 1) for n in nodes) or 1
    L, path = critical_path(g)
    queued = running = 0.0
    ready_at: dict[int, float] = {}
    waits: dict[int, float] = {}
    per: dict[str, dict[str, Any]] = {}
    for t in tasks:
        s = per.setdefault(t["name"], {"count": 0, "DONE": 0, "FAILED": 0, "CANCELLED": 0,
                                       "run": 0.0, "queued": 0.0, "nrun": 0})
        s["count"] += 1
        if t["state"] in s:
            s[t["state"]] += 1
        if t.get("t_start") and t.get("t_end"):
            ready = max([t["t_submit"] or t["t_start"]] +
                        [g.nodes[p].get("t_end") or 0.0 for p in g.predecessors(t["id"])])
            q = max(0.0, t["t_start"] - ready)
            ready_at[t["id"]] = ready
            waits[t["id"]] = q
            r = t["t_end"] - t["t_start"]
            queued += q
            running += r
            s["run"] += r
            s["queued"] += q
            s["nrun"] += 1
    for s in per.values():
        n = s.pop("nrun")
        s["mean_run"] = s["run"] / n if n else 0.0
        s["mean_queued"] = s["queued"] / n if n else 0.0
    usage = j.usage()
    used = resources(usage, ran, per)
    longest = sorted(ran, key=lambda t: t["t_end"] - t["t_start"], reverse=True)[:10]
    held = workers.integral(curve, t_last)
    W_held = held / M if M > 0 else 0.0
    out = {
        "w_curve": curve, "W_held": W_held, "C_over_W_held": C / W_held if W_held > 0 else 0.0,
        "utilisation": integral / held if held > 0 else 0.0, "jobs": workers.jobs(nodes),
        "run_id": run.get("run_id"), "state": run.get("state"), "slots": slots,
        "tasks": len(tasks), "ran": len(ran), "counts": j.counts(),
        "C": C, "M": M, "W": W, "C_over_W": C / W if W > 0 else 0.0,
        "C_over_P": C / slots, "L": L, "critical_path": path,
        "lower_bound": max(C / slots, L), "efficiency": W / slots,
        "queued": queued, "running": running, "per_name": per,
        "longest": [{"id": t["id"], "name": t["name"], "node": t["node"],
                     "seconds": t["t_end"] - t["t_start"], "params": t["params"]}
                    for t in longest],
        "t_first": t_first, "usage": used,
        "memory": memory_figures(j.memory(), nodes, t_last),
        # before the first submission: the start, with the wait for a batch allocation
        "startup": max(t_first - run["t_start"], 0.0) if run.get("t_start") else None,
        # the Slurm provider's decisions (--slurm auto's first), journaled as task 0's lines
        "slurm": [ln["line"] for ln in j.logs(task=0, levels=["SLURM"], limit=SLURM_LINES)],
    }
    return out, PerTask(g, ran, ready_at, waits, usage, intervals)


def resources(usage: dict[int, tuple[Any, ...]], ran: list[dict[str, Any]],
              per: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """CPU time and peak memory measured on the nodes, per task name and the top tasks.

    Fills ``per[name]`` with ``measured``, ``cpu``, ``cpu_pct`` (CPU time over
    run time of the measured tasks that ran at least ``PCT_MIN_S``: 100 % is
    one busy core; None when none did), ``rss_max`` and ``rss_mean`` (bytes).
    """
    rows = []
    for t in ran:
        u = usage.get(t["id"])
        if u is None:
            continue
        cpu, rss = u[0], u[1]
        rows.append({"id": t["id"], "name": t["name"], "node": t["node"], "cpu": cpu,
                     "rss": rss, "seconds": t["t_end"] - t["t_start"],
                     "read": u[2] if len(u) > 2 else None,
                     "written": u[3] if len(u) > 3 else None})
    for s in per.values():
        s.update(measured=0, cpu=0.0, cpu_pct=None, rss_max=None, rss_mean=None, read=None,
                 written=None)
    wall: dict[str, float] = {}
    long_cpu: dict[str, float] = {}
    for r in rows:
        s = per[r["name"]]
        s["measured"] += 1
        s["cpu"] += r["cpu"]
        s["rss_max"] = max(s["rss_max"] or 0, r["rss"])
        s["rss_mean"] = (s["rss_mean"] or 0) + r["rss"]
        if r["read"] is not None:               # bytes read and written: totals per name
            s["read"] = (s["read"] or 0) + r["read"]
            s["written"] = (s["written"] or 0) + (r["written"] or 0)
        if r["seconds"] >= PCT_MIN_S:        # %CPU of tasks long enough for the ratio to mean
            wall[r["name"]] = wall.get(r["name"], 0.0) + r["seconds"]
            long_cpu[r["name"]] = long_cpu.get(r["name"], 0.0) + r["cpu"]
    for name, s in per.items():
        if s["measured"]:
            s["rss_mean"] /= s["measured"]
            s["cpu_pct"] = 100 * long_cpu[name] / wall[name] if wall.get(name) else None
    return {"measured": len(rows), "cpu": sum(r["cpu"] for r in rows),
            "top_cpu": sorted(rows, key=lambda r: -r["cpu"])[:10],
            "top_rss": sorted(rows, key=lambda r: -r["rss"])[:10]}


def memory_figures(reports: list[dict[str, Any]], nodes: list[dict[str, Any]],
                   t_end: float) -> list[dict[str, Any]]:
    """Per node: its memory marks, values spilled and read back, time paused, peak seen."""
    marks = {n["name"]: n.get("info") or {} for n in nodes}
    per: dict[str, dict[str, Any]] = {}
    for r in reports:
        s = per.setdefault(r["node"], {"node": r["node"], "spills": 0, "spilled_bytes": 0,
                                        "reads": 0, "paused_s": 0.0, "pauses": 0,
                                        "peak_rss": 0, "_since": None})
        s["spills"] += r["spills"] or 0
        s["spilled_bytes"] += r["spilled_bytes"] or 0
        s["reads"] += r["reads"] or 0
        s["peak_rss"] = max(s["peak_rss"], r["rss"] or 0)
        if r["paused"] and s["_since"] is None:
            s["_since"] = r["t"]
            s["pauses"] += 1
        elif not r["paused"] and s["_since"] is not None:
            s["paused_s"] += r["t"] - s["_since"]
            s["_since"] = None
    out = []
    for name, s in per.items():
        if s.pop("_since") is not None:
            s["paused_s"] += max(0.0, t_end - max(r["t"] for r in reports if r["node"] == name))
        info = marks.get(name, {})
        s["budget"] = info.get("memory_budget")
        s["pause_mark"] = info.get("memory_pause")
        out.append(s)
    return out



