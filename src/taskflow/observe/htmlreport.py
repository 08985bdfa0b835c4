"""The report as one self-contained HTML page (no network: no CDN, nothing to fetch).

Summary first, as Nextflow's report: a header with the command, the times,
the exit status and the counts by state; the failed tasks with their error
and the frames of the user's code; then per task name the counts and the
spread of run time, CPU time, %CPU and peak memory (box plots); a timeline
of the slots; the graph fitted to the page width (the graph of task names
above :data:`TASK_GRAPH_MAX` tasks; a click shows it at full size); and
last, for HPC planners, the scheduling model (C, W(t), M = C / W, the
critical path, the efficiency against the bound). Plots are inline SVG
(:mod:`.svgcharts`), sized to the page, readable at 1,400 px and printable.
Large runs are aggregated before anything is drawn, and the page says where.
"""
from __future__ import annotations

import datetime
from html import escape
from pathlib import Path
from typing import Any

from ..journal.reader import Journal
from . import distributions, mdreport, svgcharts, timeline
from .graph import graph_svg
from .palette import STATE_COLOURS, colours
from .model import SLURM_LINES, PerTask
from .trace import slot_intervals

TASK_GRAPH_MAX = 50       # the report draws each task up to this many, else the task names

CSS = (Path(__file__).parent / "report.css").read_text(encoding="utf-8")

SCRIPT = """
for (const g of document.querySelectorAll('.graph')) {
  const b = document.getElementById(g.id + '-zoom');
  const flip = () => { g.classList.toggle('full');
    if (b) b.textContent = g.classList.contains('full') ? 'fit to the page' : 'full size'; };
  g.addEventListener('click', flip); if (b) b.addEventListener('click', flip);
}
"""


def _table(head: list[str], rows: list[list[Any]], num: set[int] | None = None) -> str:
    num = num or set()
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(
            f"<td{' class=num' if i in num else ''}>{escape(str(v))}</td>"
            for i, v in enumerate(r)) + "</tr>")
    return "".join(out) + "</table>"


def _header(h: dict[str, Any]) -> str:
    state = h["state"] or "unknown"
    col = {"finished": STATE_COLOURS["DONE"], "failed": STATE_COLOURS["FAILED"],
           "running": STATE_COLOURS["RUNNING"]}.get(state, STATE_COLOURS["INTERRUPTED"])
    facts = [(k, v) for k, v in mdreport.header_rows(h) if k not in ("state", "tasks")]
    chips = "".join(f'<span id="count-{s}" style="background:{STATE_COLOURS[s]}">{n} '
                    f'{s.lower()}</span>' for s, n in
                    ((s, h["counts"].get(s, 0)) for s in STATE_COLOURS) if n)
    retries = h["counts"].get("retries")
    if retries:
        chips += f'<span style="background:#dfe6ee">{retries} retried</span>'
    reason = f'<p class="reason" id="reason">{escape(h["reason"])}</p>' if h.get("reason") else ""
    return (f'<header class="run"><div class="inner"><h1>taskflow run {escape(str(h["run_id"]))}'
            f'<span class="state" id="run-state" style="background:{col};color:#000">{escape(state)}'
            f'</span></h1>{reason}<dl class="facts">'
            + "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in facts)
            + f'</dl><div class="counts" id="counts"><b>{h["counts"].get("total", 0)} tasks</b> '
            + chips + "</div></div></header>")


def _retried(fails: dict[str, Any]) -> str:
    """Why tasks ran again: each attempt that ended in a retry."""
    rows = [[t["id"], t["name"], n, node, why] for t in fails.get("retried") or []
            for n, (node, why) in enumerate(t["tries"], 1)]
    if not rows:
        return ""
    return "<h3>Ran again</h3>" + _table(["id", "name", "attempt", "node", "why it ran again"],
                                         rows)


def _failures(fails: dict[str, Any]) -> str:
    out = ['<section id="failures">']
    if not fails["total"]:
        extra = f" {fails['cancelled']} cancelled." if fails["cancelled"] else ""
        return (out[0] + f"<h2>Failed tasks</h2><p>No task failed.{extra}</p>"
                + _retried(fails) + "</section>")
    out.append(f"<h2>Failed tasks ({fails['total']})</h2>")
    brief = []
    for t in fails["tasks"]:
        if "frames" not in t:
            brief.append([t["id"], t["name"], t["node"] or "-", t["message"][0], t["logs"]])
            continue
        tries = f", {t['attempts']} attempts" if (t["attempts"] or 0) > 1 else ""
        frames = ""
        if t["frames"]:
            hidden = f"; {t['folded']} taskflow frame(s) hidden" if t["folded"] else ""
            frames = (f"<p class=note>in your code (most recent call last{hidden}):</p>"
                      f"<pre class=frames>{escape(chr(10).join(t['frames']))}</pre>")
        files = (f"<p>Output files: {escape(', '.join(t['files']))}</p>" if t["files"] else "")
        out.append(f'<article class="failure" data-task="{t["id"]}"><h3>task {escape(t["name"])} '
                   f'(id {t["id"]}) on {escape(t["node"] or "-")}{tries}</h3>'
                   f'<pre class="error">{escape(chr(10).join(t["message"]))}</pre>{frames}{files}'
                   f'<p>Output and full traceback: <code>{escape(t["logs"])}</code></p></article>')
    if brief:
        out.append(_table(["id", "name", "node", "error", "output"], brief))
    more = fails["total"] - len(fails["tasks"])
    if more > 0:
        out.append(f"<p class=note>... and {more} more failed tasks "
                   "(<code>taskflow status</code> lists them).</p>")
    out.append(_retried(fails))
    return "".join(out) + "</section>"


def _per_name(f: dict[str, Any]) -> str:
    items = sorted(f["per_name"].items(), key=lambda kv: (-kv[1]["run"], kv[0]))
    rows = [[n, s["count"], s["DONE"], s["FAILED"], s["CANCELLED"], f"{s['mean_run']:.4f}",
             f"{s['run']:.3f}", f"{s['mean_queued']:.4f}"]
            for n, s in items[:mdreport.NAMES_LISTED]]
    note = ""
    if len(items) > mdreport.NAMES_LISTED:
        note = (f"<p class=note>The {mdreport.NAMES_LISTED} names with the most run time; "
                f"{len(items) - mdreport.NAMES_LISTED} more are in the markdown report's last "
                "row.</p>")
    return ('<section id="names"><h2>Tasks by name</h2>'
            + _table(["name", "tasks", "done", "failed", "cancelled", "mean run (s)",
                      "total run (s)", "mean queued (s)"], rows, {1, 2, 3, 4, 5, 6, 7})
            + note + "</section>")


def _resources(f: dict[str, Any], d: dict[str, Any], col: dict[str, str]) -> str:
    out = ['<section id="resources"><h2>Resources per task name</h2>']
    u = f["usage"]
    notes = [f"Box: the middle half of the tasks, the line their median, ◇ the mean, whiskers "
             f"to the furthest task within 1.5 box lengths, circles a few beyond. "
             f"{u['measured']} of {f['ran']} tasks were measured on their node (the tasks of "
             f"functions known to take under 5 ms are not)."]
    if d["pct_short"]:
        notes.append(f"%CPU leaves out {d['pct_short']} measured tasks shorter than "
                     f"{distributions.PCT_MIN_S:g} s.")
    if d["other"]:
        notes.append(f"The {distributions.NAMES_MAX} names with the most run time each have a "
                     f"row; {d['other']} more share the last one.")
    out.append("<p class=note>" + escape(" ".join(notes)) + "</p><div class=plots>")
    for key, title, unit in distributions.METRICS:
        rows = d["metrics"][key]
        if not rows:
            continue
        fmt = distributions.FORMATS[unit]
        out.append(f'<div class=plot id="plot-{key}"><h3>{escape(title)}</h3>'
                   + svgcharts.boxplots([(n, s, col.get(n, "#cccccc")) for n, s in rows], fmt,
                                        title, whole=unit == "bytes") + "</div>")
    out.append("</div>")
    for t_, key in (("Most CPU time", "top_cpu"), ("Most memory", "top_rss")):
        if u.get(key):
            out.append(f"<details><summary>{t_}: the top ten tasks</summary>" + _table(
                ["id", "name", "node", "CPU time", "run time", "peak memory", "read", "written"],
                [[r["id"], r["name"], r["node"], distributions.fmt_time(r["cpu"]),
                  distributions.fmt_time(r["seconds"]), distributions.fmt_bytes(r["rss"]),
                  "-" if r["read"] is None else distributions.fmt_bytes(r["read"]),
                  "-" if r["written"] is None else distributions.fmt_bytes(r["written"])]
                 for r in u[key]]) + "</details>")
    return "".join(out) + "</section>"


def _timeline(j: Journal, f: dict[str, Any], pt: PerTask, col: dict[str, str]) -> str:
    ran, slots = slot_intervals(j)
    t0, t1 = f["t_first"], f["t_first"] + max(f["M"], 1e-6)
    svg, note = timeline.timeline_svg(ran, slots, pt.usage, pt.queued, col, t0, t1)
    names = sorted({t["name"] for t in ran})
    legend = "".join(f'<span><i style="background:{col.get(n, "#ccc")}"></i>{escape(n)}</span>'
                     for n in names[:40])
    if len(names) > 40:
        legend += f"<span>... {len(names) - 40} more names</span>"
    starts = {t["id"]: t["t_start"] for t in pt.ran}
    return ('<section id="timeline"><h2>Timeline</h2><p class=note>Each row is one slot of a '
            "node; each bar a task (a task that held several slots is on each), coloured by "
            "task name and outlined red when it failed; hover for its queue wait, run time, CPU "
            "time and peak memory. Above it: the tasks ready but waiting for a slot.</p>"
            + (f"<p class=note>{escape(note)}</p>" if note else "")
            + _moved_note(f)
            + timeline.queue_svg(pt.ready, starts, t0, t1)
            + f'<div class="legend">{legend}</div>' + svg + "</section>")


def _graph(j: Journal, tasks: list[dict[str, Any]]) -> str:
    kind, svg, _ = graph_svg(j, "auto", TASK_GRAPH_MAX, tasks)   # Graphviz's, else Python's
    what = (f"One box per task ({len(tasks)})" if kind == "tasks" else
            f"{len(tasks)} tasks: one box per task name with its counts by state, arrows with "
            f"the number of dependencies (<code>taskflow graph --tasks</code> draws every task)")
    return (f'<section id="graph"><h2>Graph<button id="graph-box-zoom" type="button">full size'
            f'</button></h2><p class=note>{what}; fill: state, outline: task name. Click to '
            f'zoom to full size.</p><div class="graph" id="graph-box" data-kind="{kind}">'
            + svg + "</div></section>")


def _moved_note(f: dict[str, Any]) -> str:
    """Moving values takes time no bar shows (a task's bar ends when it made its value)."""
    m = f.get("moves") or {}
    if not m.get("totals"):
        return ""
    return (f"<p class=note>{escape(m['totals'][0].upper() + m['totals'][1:])}: time outside "
            "the bars (a task's bar ends when it made its value); "
            '<a href="#moves">the longest moves</a>.</p>')


def _moves(f: dict[str, Any]) -> str:
    m = f.get("moves") or {}
    if not m.get("totals"):
        return ""
    return ('<section id="moves"><h2>Moving values</h2><p class=note>Values over the inline '
            "limit stay on the node that made them and move when the master or a task on "
            f"another node needs them. {escape(m['totals'])}.</p><ul>"
            + "".join(f"<li>{escape(ln)}</li>" for ln in m["longest"]) + "</ul></section>")


def _memory(f: dict[str, Any]) -> str:
    rows = f.get("memory") or []
    if not rows:
        return ""

    def mb(v: Any) -> str:
        return f"{v / 1e6:,.0f}" if v else "-"
    return ('<section id="memory"><h2>Memory budget of the nodes</h2><p class=note>Above the '
            "budget held values spill to the node's disk; above the pause mark it takes no new "
            "task that only makes values.</p>" + _table(
                ["node", "budget (MB)", "pause mark (MB)", "peak seen (MB)", "values spilled",
                 "spilled (MB)", "read back", "pauses", "paused (s)"],
                [[s["node"], mb(s["budget"]), mb(s["pause_mark"]), mb(s["peak_rss"]), s["spills"],
                  mb(s["spilled_bytes"]), s["reads"], s["pauses"], f"{s['paused_s']:.2f}"]
                 for s in rows], {1, 2, 3, 4, 5, 6, 7, 8}) + "</section>")


def _model(f: dict[str, Any], pt: PerTask) -> str:
    t0, t1 = f["t_first"], f["t_first"] + f["M"]
    busy, binned = timeline.curve(pt.intervals, t0, t1)
    held = [(t - t0, float(w)) for t, w in f["w_curve"]]
    chart = svgcharts.steps([("w(t): slots held (nodes joined, busy or not)", "#3182bd", held),
                             ("busy slots" + (" (mean per step)" if binned else ""), "#e6550d",
                              busy)], f["M"], "slots", timeline.X_TITLE)
    cp = f["critical_path"]
    names = pt.names if len(cp) <= 30 else {}
    path = " → ".join(f"{names[i]} #{i}" if i in names else f"#{i}" for i in cp[:30])
    held_rows = [["W_held = (1/M) ∫ w(t) dt, mean slots held", f"{f['W_held']:.3f}"],
                 ["C / W_held", f"{f['C_over_W_held']:.3f} s"],
                 ["busy / held slot-seconds", f"{100 * f['utilisation']:.1f} %"],
                 ["run start to first submission (not in M)",
                  f"{f['startup']:.3f} s" if f.get("startup") is not None else "-"]]
    jobs = ""
    if f["jobs"]:
        def rel(v: Any) -> str:
            return f"{v - t0:.2f}" if v else "-"
        jobs = "<h3>Slurm jobs</h3>" + _table(
            ["job", "nodes", "submitted", "started", "joined", "queue wait (s)", "left", "ended"],
            [[jb["job_id"], ", ".join(jb["nodes"]), rel(jb["submitted"]), rel(jb["started"]),
              rel(jb["joined"]),
              f"{jb['queue_wait']:.2f}" if jb["queue_wait"] is not None else "-",
              rel(jb["left"]), jb["reason"] or "-"] for jb in f["jobs"]])
    return ('<section id="model"><h2>Scheduling model (for HPC planning)</h2><p class=note>'
            "C is the slot-seconds the tasks held, M the makespan, W the mean number of busy "
            "slots, so M = C / W (the SPA model); no schedule beats max(C/P, L), with P the "
            "slots and L the critical path.</p>"
            + _table(["figure", "value"], [list(r) for r in mdreport.model_rows(f)], {1})
            + f"<p>Critical path ({len(cp)} tasks, {f['L']:.3f} s): {escape(path)}"
            + (" ..." if len(cp) > 30 else "") + "</p><h3>Slots over time, W(t)</h3>" + chart
            + "<h3>Workers held (SPA)</h3>" + _table(["figure", "value"], held_rows, {1})
            + jobs + _slurm(f) + "</section>")


def _slurm(f: dict[str, Any]) -> str:
    """The Slurm provider's decisions, one line each (--slurm auto's first)."""
    lines = f.get("slurm") or []
    if not lines:
        return ""
    more = ("<li>... (all of them: <code>taskflow logs RUN --level SLURM</code>)</li>"
            if len(lines) >= SLURM_LINES else "")
    return ('<h3 id="slurm">Slurm decisions</h3><ul class="slurm">'
            + "".join(f"<li>{escape(ln)}</li>" for ln in lines) + more + "</ul>")


def _resumed(head: dict[str, Any]) -> str:
    """A resumed run: per task name, the calls reused and why the others ran again."""
    lines = head.get("resumed")
    if not lines:
        return ""
    return ('<section id="resumed"><h2>Resumed: calls reused and why the others ran '
            'again</h2><ul>' + "".join(f"<li>{escape(ln)}</li>" for ln in lines)
            + "</ul><p class=note>Each call's reason: <code>taskflow explain RUN</code>."
            "</p></section>")


def page(j: Journal, f: dict[str, Any], pt: PerTask, head: dict[str, Any],
         fails: dict[str, Any]) -> str:
    """The whole page."""
    tasks = j.tasks()
    col = colours(list(f["per_name"]))
    d = distributions.per_name(pt.ran, pt.usage, pt.queued)
    sections = [_failures(fails), _resumed(head), _per_name(f), _resources(f, d, col),
                _timeline(j, f, pt, col), _graph(j, tasks), _moves(f), _memory(f), _model(f, pt)]
    nav = "".join(f'<a href="#{a}">{t}</a>' for a, t in (
        ("failures", "Failures"), ("names", "Tasks by name"), ("resources", "Resources"),
        ("timeline", "Timeline"), ("graph", "Graph"), ("model", "Scheduling model")))
    made = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    state = head["state"] or "unknown"
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>taskflow run {escape(str(head['run_id']))}: {escape(state)}</title>"
            f"<style>{CSS}</style></head><body data-state='{escape(state)}'>" + _header(head)
            + f"<nav>{nav}</nav><main>" + "".join(sections)
            + f"<footer>taskflow report, made {made} from {escape(j.path)}</footer></main>"
            f"<script>{SCRIPT}</script>"
            "</body></html>")
