"""The report as markdown: the run and its failures first, the scheduling model last.

What ``taskflow report`` prints (and what a CI log keeps): the same order as
the HTML page (:mod:`.htmlreport`) without the pictures.
"""
from __future__ import annotations

import datetime
from typing import Any

from . import workers
from .model import SLURM_LINES

NAMES_LISTED = 100        # task names in the per-name table; the rest are summed in one row


def when(t: float | None) -> str:
    if not t:
        return "-"
    return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def counts_text(c: dict[str, int]) -> str:
    """``202 tasks: 201 done, 1 failed; 1 retried``."""
    parts = [f"{c[s]} {s.lower()}" for s in ("DONE", "FAILED", "CANCELLED", "INTERRUPTED",
                                               "RUNNING", "DISPATCHED", "READY", "SUBMITTED")
             if c.get(s)]
    return (f"{c.get('total', 0)} tasks" + (": " + ", ".join(parts) if parts else "")
            + (f"; {c['retries']} retried" if c.get("retries") else ""))


def header_rows(h: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, value) of the run, in the report's order."""
    dur = f"{h['duration']:.2f} s" if h.get("duration") is not None else "-"
    state = h["state"] + (f": {h['reason']}" if h.get("reason") else "")
    calls, callers = h.get("nested") or (0, 0)
    nested = [("nested calls", f"{calls} task(s) called by {callers} running task(s)")] \
        if calls else []
    return [("state", state), ("exit status", h["exit_status"]),
            ("script", h["script"] or "-"), ("arguments", " ".join(h["args"]) or "-"),
            ("command line", h["command"] or "-"), ("working directory", h["cwd"] or "-"),
            ("user", h["user"] or "-"), ("host", h["host"] or "-"),
            ("started", when(h["start"])), ("ended", when(h["end"])), ("duration", dur),
            ("tasks", counts_text(h["counts"])), *nested,
            ("nodes", f"{h['nodes']} ({h['slots']} slots)"),
            ("run directory", h["run_dir"]), ("taskflow", h.get("version") or "-")]


def _cell(v: Any) -> str:
    return str(v).replace("|", "/").replace("\n", " ")


def _head_section(h: dict[str, Any]) -> list[str]:
    out = ["| run | |", "|---|---|"]
    out += [f"| {k} | {_cell(v)} |" for k, v in header_rows(h)]
    return out + [""]


def _failures_section(fails: dict[str, Any]) -> list[str]:
    if not fails["total"]:
        return ["## Failed tasks", "", "None." + (f" ({fails['cancelled']} cancelled.)"
                                                  if fails["cancelled"] else ""), "",
                *_retried_section(fails)]
    out = [f"## Failed tasks ({fails['total']})", ""]
    for t in fails["tasks"]:
        if "frames" not in t:
            out.append(f"- task {t['name']} (id {t['id']}) on {t['node'] or '-'}: "
                       f"{t['message'][0]} (`{t['logs']}`)")
            continue
        tries = f", {t['attempts']} attempts" if (t["attempts"] or 0) > 1 else ""
        out += [f"### task {t['name']} (id {t['id']}) on {t['node'] or '-'}{tries}", "", "```"]
        out += t["message"]
        if t["frames"]:
            out.append("in your code (most recent call last):")
            out += t["frames"]
        out += ["```", ""]
        if t["files"]:
            out += ["Output files: " + ", ".join(t["files"]), ""]
        out += [f"Output and full traceback: `{t['logs']}`", ""]
    more = fails["total"] - len(fails["tasks"])
    if more > 0:
        out += [f"... and {more} more failed tasks (`taskflow status` lists them).", ""]
    return out + _retried_section(fails)


def _retried_section(fails: dict[str, Any]) -> list[str]:
    """Why tasks ran again: each attempt that ended in a retry."""
    retried = fails.get("retried") or []
    if not retried:
        return []
    out = ["### Ran again", ""]
    for t in retried:
        out.append(f"- task {t['name']} (id {t['id']}):")
        out += [f"    - on {node}: {why.replace('|', '/')}" for node, why in t["tries"]]
    return out + [""]


def _per_name_section(f: dict[str, Any]) -> list[str]:
    out = ["## Per task name", "",
           "| name | count | done | failed | cancelled | mean run (s) | total run (s) | "
           "mean queued (s) |", "|---|---|---|---|---|---|---|---|"]
    items = sorted(f["per_name"].items(), key=lambda kv: (-kv[1]["run"], kv[0]))
    shown = sorted(items[:NAMES_LISTED])
    for name, s in shown:
        out.append(f"| {name} | {s['count']} | {s['DONE']} | {s['FAILED']} | "
                   f"{s['CANCELLED']} | {s['mean_run']:.4f} | {s['run']:.3f} | "
                   f"{s['mean_queued']:.4f} |")
    rest = items[NAMES_LISTED:]
    if rest:
        out.append(f"| {len(rest)} other names | {sum(s['count'] for _, s in rest)} | "
                   f"{sum(s['DONE'] for _, s in rest)} | {sum(s['FAILED'] for _, s in rest)} | "
                   f"{sum(s['CANCELLED'] for _, s in rest)} | - | "
                   f"{sum(s['run'] for _, s in rest):.3f} | - |")
    return out + [""]


def model_rows(f: dict[str, Any]) -> list[tuple[str, str]]:
    """The scheduling model's figures, (what, value)."""
    return [
        ("C, slot-seconds the tasks held (run time x slots)", f"{f['C']:.3f} s"),
        ("M, makespan (first submission to last end)", f"{f['M']:.3f} s"),
        ("W = (1/M) ∫ w(t) dt, w(t) the busy slots", f"{f['W']:.3f} of {f['slots']}"),
        ("C / W", f"{f['C_over_W']:.3f} s"),
        (f"C / P, all P = {f['slots']} slots busy (most held at once)", f"{f['C_over_P']:.3f} s"),
        (f"L, critical path ({len(f['critical_path'])} tasks)", f"{f['L']:.3f} s"),
        ("lower bound max(C/P, L)", f"{f['lower_bound']:.3f} s"),
        ("M / lower bound", f"{f['M'] / f['lower_bound']:.2f}" if f["lower_bound"] > 0 else "-"),
        ("W / P, slot utilisation", f"{100 * f['efficiency']:.1f} %"),
    ]


def to_markdown(f: dict[str, Any], head: dict[str, Any] | None = None,
                fails: dict[str, Any] | None = None) -> str:
    """The report; without ``head`` and ``fails`` only the figures."""
    lines = [f"# taskflow run {f['run_id']} ({f['state']})", ""]
    if head is not None:
        lines += _head_section(head)
    else:
        lines += [f"{counts_text(f['counts'])}; {f['slots']} slots.", ""]
    if fails is not None:
        lines += _failures_section(fails)
    if head is not None and head.get("resumed"):
        lines += ["## Resumed: calls reused and why the others ran again", "",
                  *[f"- {ln}" for ln in head["resumed"]],
                  "", "Each call's reason: `taskflow explain RUN`.", ""]
    lines += _per_name_section(f)
    lines += _usage_section(f)
    lines += ["## Longest tasks", "", "| id | name | node | seconds | parameters |",
              "|---|---|---|---|---|"]
    for t in f["longest"]:
        lines.append(f"| {t['id']} | {t['name']} | {t['node']} | {t['seconds']:.4f} | "
                     f"{(t['params'] or '').replace('|', '/')[:80]} |")
    lines += ["", *_memory_section(f), *_moves_section(f),
              "## Time queued vs running", "",
              f"Ready but waiting for a slot: {f['queued']:.3f} s in total; running: "
              f"{f['running']:.3f} s.", "",
              "## Scheduling model: makespan against M = C / W", "",
              "| figure | value |", "|---|---|",
              *[f"| {k} | {v} |" for k, v in model_rows(f)], ""]
    if f["critical_path"]:
        cp = " -> ".join(str(i) for i in f["critical_path"][:30])
        lines += [f"Critical path (task ids): {cp}"
                  + (" ..." if len(f["critical_path"]) > 30 else ""), ""]
    lines += _held_section(f)
    lines += _slurm_section(f)
    return "\n".join(lines).rstrip("\n") + "\n"


def _moves_section(f: dict[str, Any]) -> list[str]:
    """What moving values over the inline limit took (observe.moves)."""
    m = f.get("moves") or {}
    if not m.get("totals"):
        return []
    return ["## Moving values", "", m["totals"][0].upper() + m["totals"][1:] + ".", "",
            *[f"- {ln}" for ln in m["longest"]], ""]


def _slurm_section(f: dict[str, Any]) -> list[str]:
    lines = f.get("slurm") or []
    if not lines:
        return []
    return ["## Slurm decisions", "", *[f"- {ln}" for ln in lines],
            *(["- ... (all of them: taskflow logs RUN --level SLURM)"]
              if len(lines) >= SLURM_LINES else []), ""]


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
            "resident set while a Python task ran. Bytes read and written: what the task's "
            "processes passed through read and write calls (files, pipes, sockets), in all.",
            "", "| name | measured | CPU time (s) | mean CPU (s) | %CPU | peak RSS max (MiB) | "
            "peak RSS mean (MiB) | read (MiB) | written (MiB) |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, s in sorted(f["per_name"].items()):
        if not s.get("measured"):
            continue
        pct = f"{s['cpu_pct']:.0f}" if s["cpu_pct"] is not None else "-"
        out.append(f"| {name} | {s['measured']} | {s['cpu']:.3f} | {s['cpu'] / s['measured']:.4f} "
                   f"| {pct} | {_mib(s['rss_max'])} | {_mib(s['rss_mean'])} | "
                   f"{_mib(s.get('read'))} | {_mib(s.get('written'))} |")
    for title, key in (("Most CPU time", "top_cpu"), ("Most memory", "top_rss")):
        out += ["", f"### {title}", "", "| id | name | node | CPU time (s) | run time (s) | "
                "peak RSS (MiB) |", "|---|---|---|---|---|---|"]
        for r in u[key]:
            out.append(f"| {r['id']} | {r['name']} | {r['node']} | {r['cpu']:.3f} | "
                       f"{r['seconds']:.3f} | {_mib(r['rss'])} |")
    return out + [""]


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
