"""One streamed pass over a run's tasks: the report's per-task sums in bounded memory.

The report's figures (:mod:`.model`) are sums, maxima and top tens over the
tasks, plus two things that follow the dependencies: when each task's last
input was there (its queue wait) and the critical path. Both only need, per
task, its end time and the length of the longest chain ending at it, so the
pass keeps three numbers per task id in flat arrays (24 bytes a task: 2.4 MB
for 100,000) and reads the task rows and the dependencies as two cursors
merged by task id; no row outlives its turn. That holds because a task only
reads the outputs of tasks submitted before it (a smaller id); a journal
where that is not so is reported by :attr:`Scan.forward_only` and the model
falls back to the whole graph.

The HTML page draws every task, so it asks for the rows to be kept
(``keep=True``); the monitor's report call does not.
"""
from __future__ import annotations

import heapq
from array import array
from typing import Any, Callable, Iterator

from ..journal.reader import Journal, slots_of

TOP = 10


class Top:
    """The ``n`` largest items by ``key`` as ``sorted(items, key=key, reverse=True)[:n]``
    says them (ties in the order they came), keeping at most ``4 n`` at a time."""

    def __init__(self, key: Callable[[Any], Any], n: int = TOP) -> None:
        self.key, self.n, self.items = key, n, []  # type: ignore[var-annotated]

    def add(self, item: Any) -> None:
        self.items.append(item)
        if len(self.items) > 4 * self.n:
            self.items = heapq.nlargest(self.n, self.items, key=self.key)

    def result(self) -> list[Any]:
        return heapq.nlargest(self.n, self.items, key=self.key)


class Kept:
    """What the HTML page draws per task (``keep=True``)."""

    def __init__(self) -> None:
        self.ran: list[dict[str, Any]] = []
        self.ready: dict[int, float] = {}
        self.queued: dict[int, float] = {}
        self.usage: dict[int, tuple[Any, ...]] = {}
        self.intervals: list[tuple[float, float, int]] = []
        self.names: dict[int, str] = {}


class Scan:
    """The sums of one pass (:func:`scan`)."""

    def __init__(self, t_first: float, t_last: float) -> None:
        self.t_first, self.t_last = t_first, t_last
        self.tasks = self.ran = 0
        self.C = self.integral = self.queued = self.running = 0.0
        self.per: dict[str, dict[str, Any]] = {}
        self.longest = Top(lambda t: t["seconds"])
        self.measured = 0
        self.cpu = 0.0
        self.top_cpu = Top(lambda r: r["cpu"])
        self.top_rss = Top(lambda r: r["rss"])
        self.wall: dict[str, float] = {}
        self.long_cpu: dict[str, float] = {}
        self.L = 0.0
        self.path: list[int] = []
        self.forward_only = True
        self.kept: Kept | None = None


def _deps(j: Journal) -> Iterator[tuple[int, list[int]]]:
    """(task id, the ids it read from), for the tasks that read any, by task id."""
    cur_id: int | None = None
    cur: list[int] = []
    for tid, dep in j.each_dep():
        if tid != cur_id:
            if cur_id is not None:
                yield cur_id, cur
            cur_id, cur = tid, []
        cur.append(dep)
    if cur_id is not None:
        yield cur_id, cur


def _grow(a: "array[Any]", n: int, fill: Any) -> None:
    if len(a) < n:
        a.extend([fill] * max(n - len(a), len(a) // 2))


def scan(j: Journal, t_first: float, t_last: float, pct_min_s: float,
         keep: bool = False) -> Scan:
    """The pass over ``j``'s tasks (call it inside ``j.snapshot()``); ``t_first``, ``t_last``:
    the window the busy-slot integral is taken over."""
    s = Scan(t_first, t_last)
    kept = s.kept = Kept() if keep else None
    held = j.placements()
    end = array("d")          # task id -> its end (0.0: none)
    best = array("d")         # task id -> the longest chain of run times ending with it
    prev = array("q")         # task id -> the task before it on that chain (-1: none)
    deps = _deps(j)
    pending = next(deps, None)
    top_best, top_id = -1.0, -1
    for t in j.each_task():
        tid = t["id"]
        s.tasks += 1
        preds: list[int] = []
        while pending is not None and pending[0] <= tid:
            if pending[0] == tid:
                preds = pending[1]
            pending = next(deps, None)
        _grow(end, tid + 1, 0.0)
        _grow(best, tid + 1, 0.0)
        _grow(prev, tid + 1, -1)
        a, b = t["t_start"], t["t_end"]
        end[tid] = b or 0.0
        # the chain: the predecessor with the longest one (ties: the larger id)
        pb, pp = 0.0, -1
        for p in preds:
            if p >= tid:
                s.forward_only = False
                continue
            if (best[p], p) > (pb, pp):
                pb, pp = best[p], p
        best[tid] = pb + (max(0.0, (b or 0.0) - a) if a else 0.0)
        prev[tid] = pp
        if best[tid] > top_best:
            top_best, top_id = best[tid], tid
        name = t["name"]
        if kept is not None:
            kept.names[tid] = name
        ps = s.per.get(name)
        if ps is None:
            ps = s.per[name] = {"count": 0, "DONE": 0, "FAILED": 0, "CANCELLED": 0,
                                "run": 0.0, "queued": 0.0, "nrun": 0}
        ps["count"] += 1
        if t["state"] in ps:
            ps[t["state"]] += 1
        if not (a and b):
            continue
        s.ran += 1
        ready = max([t["t_submit"] or a] + [end[p] for p in preds if p < tid])
        q = max(0.0, a - ready)
        r = b - a
        s.queued += q
        s.running += r
        ps["run"] += r
        ps["queued"] += q
        ps["nrun"] += 1
        k = sum(n for _, n in slots_of(t, held))
        s.C += r * k
        s.integral += k * max(0.0, min(b, t_last) - max(a, t_first))
        s.longest.add({"id": tid, "name": name, "node": t["node"], "seconds": r,
                       "params": t["params"]})
        if t["cpu"] is not None:
            _measured(s, t, r, pct_min_s)
        if kept is not None:
            kept.ran.append(t)
            kept.ready[tid] = ready
            kept.queued[tid] = q
            kept.intervals.append((a, b, k))
            if t["cpu"] is not None:
                kept.usage[tid] = (t["cpu"], t["rss"], t["rchar"], t["wchar"])
    if top_id >= 0:
        s.L = top_best
        cur = top_id
        while cur >= 0:
            s.path.append(cur)
            cur = prev[cur]
        s.path.reverse()
    return s


def _measured(s: Scan, t: dict[str, Any], seconds: float, pct_min_s: float) -> None:
    """A task measured on its node: the resource sums per name and the top tens."""
    row = {"id": t["id"], "name": t["name"], "node": t["node"], "cpu": t["cpu"],
           "rss": t["rss"], "seconds": seconds, "read": t["rchar"], "written": t["wchar"]}
    s.measured += 1
    s.cpu += row["cpu"]
    s.top_cpu.add(row)
    s.top_rss.add(row)
    ps = s.per[row["name"]]
    ps["measured"] = ps.get("measured", 0) + 1
    ps["cpu"] = ps.get("cpu", 0.0) + row["cpu"]
    ps["rss_max"] = max(ps.get("rss_max") or 0, row["rss"])
    ps["rss_mean"] = (ps.get("rss_mean") or 0) + row["rss"]
    if row["read"] is not None:             # bytes read and written: totals per name
        ps["read"] = (ps.get("read") or 0) + row["read"]
        ps["written"] = (ps.get("written") or 0) + (row["written"] or 0)
    if seconds >= pct_min_s:                # %CPU of tasks long enough for the ratio to mean
        s.wall[row["name"]] = s.wall.get(row["name"], 0.0) + seconds
        s.long_cpu[row["name"]] = s.long_cpu.get(row["name"], 0.0) + row["cpu"]
