"""The run report: C, W, M against C/W and the critical-path bound, per-name stats.

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

import html
import os
import time
from typing import Any, Sequence

from ..journal.reader import Journal, slots_of
from . import workers
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


def figures(j: Journal) -> dict[str, Any]:
    """Every number the report shows, as a dict (the monitor's API serves it too)."""
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
    used = resources(j.usage(), ran, per)
    longest = sorted(ran, key=lambda t: t["t_end"] - t["t_start"], reverse=True)[:10]
    held = workers.integral(curve, t_last)
    W_held = held / M if M > 0 else 0.0
    return {
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


def resources(usage: dict[int, tuple[float, int]], ran: list[dict[str, Any]],
              per: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """CPU time and peak memory measured on the nodes, per task name and the top tasks.

    Fills ``per[name]`` with ``measured``, ``cpu``, ``cpu_pct`` (CPU time over
    the measured tasks' run time: 100 % is one busy core), ``rss_max`` and
    ``rss_mean`` (bytes).
    """
    rows = []
    for t in ran:
        u = usage.get(t["id"])
        if u is None:
            continue
        cpu, rss = u
        rows.append({"id": t["id"], "name": t["name"], "node": t["node"], "cpu": cpu,
                     "rss": rss, "seconds": t["t_end"] - t["t_start"]})
    for s in per.values():
        s.update(measured=0, cpu=0.0, cpu_pct=None, rss_max=None, rss_mean=None)
    wall: dict[str, float] = {}
    for r in rows:
        s = per[r["name"]]
        s["measured"] += 1
        s["cpu"] += r["cpu"]
        s["rss_max"] = max(s["rss_max"] or 0, r["rss"])
        s["rss_mean"] = (s["rss_mean"] or 0) + r["rss"]
        wall[r["name"]] = wall.get(r["name"], 0.0) + r["seconds"]
    for name, s in per.items():
        if s["measured"]:
            s["rss_mean"] /= s["measured"]
            s["cpu_pct"] = 100 * s["cpu"] / wall[name] if wall[name] > 0 else None
    return {"measured": len(rows), "cpu": sum(r["cpu"] for r in rows),
            "top_cpu": sorted(rows, key=lambda r: -r["cpu"])[:10],
            "top_rss": sorted(rows, key=lambda r: -r["rss"])[:10]}


def _mib(b: float | None) -> str:
    return "-" if b is None else f"{b / 2**20:.1f}"


def _usage_section(f: dict[str, Any]) -> list[str]:
    """Nextflow's resource tables: CPU time and peak memory per task name, top tasks."""
    u = f.get("usage") or {}
    out = ["## CPU time and memory, measured on the nodes", ""]
    if not u.get("measured"):
        return out + ["No task was measured (a node measures the tasks of functions not "
                      "known to take under 5 ms).", ""]
    out += [f"{u['measured']} of {f['ran']} tasks measured (tasks of functions known to take "
            f"under 5 ms are not); CPU time {u['cpu']:.3f} s in all, against C = "
            f"{f['C']:.3f} slot-seconds held. %CPU is CPU time over run time: 100 % is one "
            "busy core; a task with several processes or threads (an MPI task's ranks) can "
            "go above. Peak memory: the largest process of a program task, the executor's "
            "resident set while a Python task ran.", "",
            "| name | measured | CPU time (s) | mean CPU (s) | %CPU | peak RSS max (MiB) | "
            "peak RSS mean (MiB) |", "|---|---|---|---|---|---|---|"]
    for name, s in sorted(f["per_name"].items()):
        if not s.get("measured"):
            continue
        pct = f"{s['cpu_pct']:.0f}" if s["cpu_pct"] is not None else "-"
        out.append(f"| {name} | {s['measured']} | {s['cpu']:.3f} | {s['cpu'] / s['measured']:.4f} "
                   f"| {pct} | {_mib(s['rss_max'])} | {_mib(s['rss_mean'])} |")
    for title, key in (("Most CPU time", "top_cpu"), ("Most memory", "top_rss")):
        out += ["", f"### {title}", "", "| id | name | node | CPU time (s) | run time (s) | "
                "peak RSS (MiB) |", "|---|---|---|---|---|---|"]
        for r in u[key]:
            out.append(f"| {r['id']} | {r['name']} | {r['node']} | {r['cpu']:.3f} | "
                       f"{r['seconds']:.3f} | {_mib(r['rss'])} |")
    return out + [""]


def to_markdown(f: dict[str, Any]) -> str:
    c = f["counts"]
    lines = [f"# taskflow run {f['run_id']} ({f['state']})", "",
             f"{f['tasks']} tasks: " + ", ".join(f"{c[s]} {s.lower()}" for s in
                                                 ("DONE", "FAILED", "CANCELLED") if c.get(s))
             + (f"; {c['retries']} retried" if c.get("retries") else "") +
             f"; {f['slots']} slots.", "",
             "## Makespan against the model (M = C / W)", "",
             "| figure | value |", "|---|---|",
             f"| C, slot-seconds the tasks held (run time x slots) | {f['C']:.3f} s |",
             f"| M, makespan (first submission to last end) | {f['M']:.3f} s |",
             f"| W = (1/M) ∫ w(t) dt, w(t) the busy slots | {f['W']:.3f} of {f['slots']} |",
             f"| C / W | {f['C_over_W']:.3f} s |",
             f"| C / P, all P = {f['slots']} slots busy (most held at once) | "
             f"{f['C_over_P']:.3f} s |",
             f"| L, critical path ({len(f['critical_path'])} tasks) | {f['L']:.3f} s |",
             f"| lower bound max(C/P, L) | {f['lower_bound']:.3f} s |",
             f"| M / lower bound | {f['M'] / f['lower_bound']:.2f} |" if f["lower_bound"] > 0
             else "| M / lower bound | - |",
             f"| W / P, slot utilisation | {100 * f['efficiency']:.1f} % |", "",
             *_held_section(f),
             *_slurm_section(f),
             *_memory_section(f),
             "## Time queued vs running", "",
             f"Ready but waiting for a slot: {f['queued']:.3f} s in total; running: "
             f"{f['running']:.3f} s.", "",
             "## Per task name", "",
             "| name | count | done | failed | cancelled | mean run (s) | total run (s) | "
             "mean queued (s) |", "|---|---|---|---|---|---|---|---|"]
    for name, s in sorted(f["per_name"].items()):
        lines.append(f"| {name} | {s['count']} | {s['DONE']} | {s['FAILED']} | "
                     f"{s['CANCELLED']} | {s['mean_run']:.4f} | {s['run']:.3f} | "
                     f"{s['mean_queued']:.4f} |")
    lines += ["", *_usage_section(f)]
    lines += ["## Longest tasks", "", "| id | name | node | seconds | parameters |",
              "|---|---|---|---|---|"]
    for t in f["longest"]:
        lines.append(f"| {t['id']} | {t['name']} | {t['node']} | {t['seconds']:.4f} | "
                     f"{(t['params'] or '').replace('|', '/')[:80]} |")
    if f["critical_path"]:
        cp = " -> ".join(str(i) for i in f["critical_path"][:30])
        lines += ["", f"Critical path (task ids): {cp}"
                  + (" ..." if len(f["critical_path"]) > 30 else "")]
    return "\n".join(lines) + "\n"


SLURM_LINES = 40     # the Slurm decisions the report shows (the journal keeps them all)


def _slurm_section(f: dict[str, Any]) -> list[str]:
    lines = f.get("slurm") or []
    if not lines:
        return []
    return ["## Slurm decisions", "", *[f"- {ln}" for ln in lines],
            *(["- ... (all of them: taskflow logs RUN --level SLURM)"]
              if len(lines) >= SLURM_LINES else []), ""]


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


def _memory_section(f: dict[str, Any]) -> list[str]:
    """Nodes whose memory budget acted: values spilled to disk, read back, pauses."""
    rows = f.get("memory") or []
    if not rows:
        return []

    def mb(v: Any) -> str:
        return f"{v / 1e6:,.0f}" if v else "-"
    out = ["## Memory", "",
           "What each node's memory budget did (resident memory of its agent and executors; "
           "above the budget held values spill to its disk, above the pause mark it takes "
           "no new task that only makes values).", "",
           "| node | budget (MB) | pause mark (MB) | peak seen (MB) | values spilled | "
           "spilled (MB) | read back | pauses | paused (s) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for s in rows:
        out.append(f"| {s['node']} | {mb(s['budget'])} | {mb(s['pause_mark'])} | "
                   f"{mb(s['peak_rss'])} | {s['spills']} | {mb(s['spilled_bytes'])} | "
                   f"{s['reads']} | {s['pauses']} | {s['paused_s']:.2f} |")
    return out + [""]


def _held_section(f: dict[str, Any]) -> list[str]:
    """The SPA view: w(t) the slots held (joins and leaves), W its mean, C/W against M."""
    t0 = f["t_first"]
    out = ["## Workers held (the SPA model, M = C / W)", "",
           "Here w(t) is the number of slots the run holds at time t (nodes that joined and "
           "have not left, busy or not), as in the SPA model; the table above is the same "
           "with w(t) the busy slots.", "",
           "| figure | value |", "|---|---|",
           f"| W_held = (1/M) ∫ w(t) dt, mean slots held | {f['W_held']:.3f} |",
           f"| C / W | {f['C_over_W_held']:.3f} s |",
           f"| M | {f['M']:.3f} s |",
           (f"| M / (C / W) | {f['M'] / f['C_over_W_held']:.2f} |" if f["C_over_W_held"] > 0
            else "| M / (C / W) | - |"),
           f"| busy / held slot-seconds, C / ∫ w(t) dt | {100 * f['utilisation']:.1f} % |",
           (f"| run start to first submission (not in M) | {f['startup']:.3f} s |"
            if f.get("startup") is not None else "| run start to first submission | - |"),
           "",
           "| t (s since first submission) | w(t), slots held |", "|---|---|",
           *workers.step_table(f["w_curve"], t0)]
    if f["jobs"]:
        def rel(v: Any) -> str:
            return f"{v - t0:.2f}" if v else "-"
        out += ["", "### Slurm jobs", "",
                "Times in s since the first submission (negative: before it). Queue wait = "
                "started - submitted, with the join time when Slurm's start is not known; "
                "joined - started is the worker's registration delay.", "",
                "| job | nodes | submitted | started | joined | queue wait (s) | left | "
                "how it ended |", "|---|---|---|---|---|---|---|---|"]
        for jb in f["jobs"]:
            wait = f"{jb['queue_wait']:.2f}" if jb["queue_wait"] is not None else "-"
            out.append(f"| {jb['job_id']} | {', '.join(jb['nodes'])} | {rel(jb['submitted'])} | "
                       f"{rel(jb['started'])} | {rel(jb['joined'])} | {wait} | "
                       f"{rel(jb['left'])} | {(jb['reason'] or '-').replace('|', '/')} |")
    return out + [""]


def to_html(md: str, pictures: list[str]) -> str:
    """The markdown as HTML (headings, tables, paragraphs) with pictures inlined."""
    out = ["<!doctype html><meta charset='utf-8'><title>taskflow report</title>",
           "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
           "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}</style>"]
    rows: list[str] = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            if not set(line) <= set("|-"):
                cells = [html.escape(c.strip()) for c in line.strip("|").split("|")]
                tag = "th" if not rows else "td"
                rows.append("<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>")
            continue
        if rows:
            out.append("<table>" + "".join(rows) + "</table>")
            rows = []
        if line.startswith("### "):
            out.append(f"<h3>{html.escape(line[4:])}</h3>")
        elif line.startswith("## "):
            out.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("# "):
            out.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line:
            out.append(f"<p>{html.escape(line)}</p>")
    for p in pictures:
        if p.endswith(".svg"):
            with open(p) as fh:
                out.append("<h2>Task graph</h2>" + fh.read())
        elif p.endswith(".png"):
            import base64
            with open(p, "rb") as fh:
                b64 = base64.b64encode(fh.read()).decode()
            title = "Workers held, w(t)" if "workers" in os.path.basename(p) else "Gantt chart"
            out.append(f"<h2>{title}</h2><img src='data:image/png;base64,{b64}'>")
    out.append(f"<p><small>made {time.strftime('%Y-%m-%d %H:%M:%S')}</small></p>")
    return "\n".join(out)


def report(run_dir: str, html_path: str | None = None) -> str:
    """The report as markdown; with ``html_path`` also an HTML file with the pictures."""
    with Journal(run_dir) as j:
        f = figures(j)
        md = to_markdown(f)
        intervals = run_intervals(j, j.tasks()) if html_path else []
    if html_path:
        from .graph import write_graph
        from .trace import write_trace
        out = os.path.dirname(os.path.abspath(html_path))
        pics = []
        g = write_graph(run_dir, out)
        if "svg" in g:
            pics.append(g["svg"])
        try:
            tr = write_trace(run_dir, out)
            if "gantt" in tr:
                pics.append(tr["gantt"])
        except Exception:  # noqa: BLE001 - pictures are optional in a report
            pass
        try:
            w = workers.plot(f["w_curve"], workers.busy_curve(intervals), f["t_first"],
                             f["t_first"] + f["M"], os.path.join(out, "workers.png"))
            if w:
                pics.append(w)
        except Exception:  # noqa: BLE001
            pass
        with open(html_path, "w") as fh:
            fh.write(to_html(md, pics))
    return md
