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

from typing import Any, Iterable, NamedTuple, Sequence

from ..journal.reader import Journal
from . import workers
from .distributions import PCT_MIN_S
from .graph import build, critical_path
from .scan import Scan, scan


def busy_integral(intervals: Sequence[tuple[float, ...]], lo: float, hi: float) -> float:
    """∫ w(t) dt over [lo, hi]: each interval's part inside, times its slots.

    An interval is ``(start, end)`` (one slot) or ``(start, end, slots)``.
    """
    return sum((int(iv[2]) if len(iv) > 2 else 1) * max(0.0, min(iv[1], hi) - max(iv[0], lo))
               for iv in intervals)


class PerTask(NamedTuple):
    """What the HTML report draws per task (not in :func:`figures`: it grows with the run)."""
    names: dict[int, str]            # task id -> name
    ran: list[dict[str, Any]]
    ready: dict[int, float]          # task id -> when its last input was there
    queued: dict[int, float]         # task id -> seconds ready but waiting for a slot
    usage: dict[int, tuple[Any, ...]]
    intervals: list[tuple[float, float, int]]

SLURM_LINES = 40     # the Slurm decisions the report shows (the journal keeps them all)


def figures(j: Journal) -> dict[str, Any]:
    """Every number the report shows, as a dict (the monitor's API serves it too).

    One streamed pass over the tasks (:mod:`.scan`): memory bounded by a few
    numbers per task, whatever the run's size."""
    return _compute(j, keep=False)[0]


def compute(j: Journal) -> tuple[dict[str, Any], PerTask]:
    """:func:`figures` and the per-task data the pictures need."""
    f, pt = _compute(j, keep=True)
    assert pt is not None
    return f, pt


def _compute(j: Journal, keep: bool) -> tuple[dict[str, Any], PerTask | None]:
    with j.snapshot():
        run = j.run()
        nodes = j.nodes()
        first, last = j.span()
        t_first = first if first is not None else (run.get("t_start") or 0.0)
        t_last = last if last is not None else t_first
        s = scan(j, t_first, t_last, PCT_MIN_S, keep)
        if not s.forward_only:      # a task read a later task's output: the whole graph
            s.L, s.path = critical_path(build(j))
        counts = j.counts()
        mem = memory_figures(j.each_memory(), nodes, t_last)
        slurm = [ln["line"] for ln in j.logs(task=0, levels=["SLURM"], limit=SLURM_LINES)]
        from . import moves     # what moving values took (none: no section)
        moved = {"totals": moves.totals(j), "longest": moves.longest(j)}
    f = _figures(s, run, nodes, counts, mem, slurm)
    f["moves"] = moved
    return f, _kept(s)


def _kept(s: Scan) -> PerTask | None:
    k = s.kept
    return None if k is None else PerTask(k.names, k.ran, k.ready, k.queued, k.usage,
                                           k.intervals)


def _figures(s: Scan, run: dict[str, Any], nodes: list[dict[str, Any]],
             counts: dict[str, int], mem: list[dict[str, Any]],
             slurm: list[str]) -> dict[str, Any]:
    t_first, t_last = s.t_first, s.t_last
    M = max(t_last - t_first, 0.0)
    C, integral = s.C, s.integral
    W = integral / M if M > 0 else 0.0
    curve = workers.held_curve(nodes, t_first, t_last)
    # P, the slots of "all P slots busy": the most held at once. Not the sum over every node
    # that ever joined, which counts a replaced pilot's slots twice.
    slots = max((w for _, w in curve), default=0) or \
        sum(int(n["slots"] or 1) for n in nodes) or 1
    for ps in s.per.values():
        n = ps.pop("nrun")
        ps["mean_run"] = ps["run"] / n if n else 0.0
        ps["mean_queued"] = ps["queued"] / n if n else 0.0
    used = _resources(s)
    held = workers.integral(curve, t_last)
    W_held = held / M if M > 0 else 0.0
    return {
        "w_curve": curve, "W_held": W_held, "C_over_W_held": C / W_held if W_held > 0 else 0.0,
        "utilisation": integral / held if held > 0 else 0.0, "jobs": workers.jobs(nodes),
        "run_id": run.get("run_id"), "state": run.get("state"), "slots": slots,
        "tasks": s.tasks, "ran": s.ran, "counts": counts,
        "C": C, "M": M, "W": W, "C_over_W": C / W if W > 0 else 0.0,
        "C_over_P": C / slots, "L": s.L, "critical_path": s.path,
        "lower_bound": max(C / slots, s.L), "efficiency": W / slots,
        "queued": s.queued, "running": s.running, "per_name": s.per,
        "longest": s.longest.result(),
        "t_first": t_first, "usage": used, "memory": mem,
        # before the first submission: the start, with the wait for a batch allocation
        "startup": max(t_first - run["t_start"], 0.0) if run.get("t_start") else None,
        # the Slurm provider's decisions (--slurm auto's first), journaled as task 0's lines
        "slurm": slurm,
    }


def _resources(s: Scan) -> dict[str, Any]:
    """CPU time and peak memory measured on the nodes, per task name and the top tasks.

    Fills ``per[name]`` with ``measured``, ``cpu``, ``cpu_pct`` (CPU time over
    run time of the measured tasks that ran at least ``PCT_MIN_S``: 100 % is
    one busy core; None when none did), ``rss_max`` and ``rss_mean`` (bytes),
    ``read`` and ``written`` (bytes; None when not known).
    """
    for name, ps in s.per.items():
        for key, none in (("measured", 0), ("cpu", 0.0), ("rss_max", None), ("rss_mean", None),
                          ("read", None), ("written", None)):
            ps.setdefault(key, none)
        ps["cpu_pct"] = None
        if ps["measured"]:
            ps["rss_mean"] /= ps["measured"]
            ps["cpu_pct"] = 100 * s.long_cpu[name] / s.wall[name] if s.wall.get(name) else None
    return {"measured": s.measured, "cpu": s.cpu, "top_cpu": s.top_cpu.result(),
            "top_rss": s.top_rss.result()}


def memory_figures(reports: Iterable[dict[str, Any]], nodes: list[dict[str, Any]],
                   t_end: float) -> list[dict[str, Any]]:
    """Per node: its memory marks, values spilled and read back, time paused, peak seen
    (``reports``: the journal's memory rows by time, read once)."""
    marks = {n["name"]: n.get("info") or {} for n in nodes}
    per: dict[str, dict[str, Any]] = {}
    for r in reports:
        s = per.setdefault(r["node"], {"node": r["node"], "spills": 0, "spilled_bytes": 0,
                                        "reads": 0, "paused_s": 0.0, "pauses": 0,
                                        "peak_rss": 0, "_since": None, "_last": r["t"]})
        s["_last"] = max(s["_last"], r["t"])
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
        last = s.pop("_last")
        if s.pop("_since") is not None:
            s["paused_s"] += max(0.0, t_end - last)
        info = marks.get(name, {})
        s["budget"] = info.get("memory_budget")
        s["pause_mark"] = info.get("memory_pause")
        out.append(s)
    return out



