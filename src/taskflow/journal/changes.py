"""One delivery of the bus as the changes it makes to the journal's tables.

Runs in the journal's writer process, which loads only this folder (the
standard library only). A delivery (``events.RowBatch``) comes
as :mod:`.wire` pickled it: the rows' specs are their :data:`~.wire.SpecInfo`
summaries, futures ``(data id, path)``, and each event is the plain tuple of
its record's fields, unpacked here in the order of
:mod:`taskflow.events` (never read by attribute: the records'
classes are not loaded in this process). :class:`Changes` gathers what the
delivery changes, table by table; :data:`HANDLERS` has one function per
event kind; ``JournalDB`` writes it all in one transaction.

A task's row (``task_rows``) stays in memory, a list in :data:`COLS` order,
until it is inserted: the rows of a task submitted and ended well within one
delivery (nearly every short task) go in whole, in one INSERT. A row already
inserted gets its changes as an UPDATE of the columns that changed.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Iterable, cast

from .text import SCALARS as _SCALARS, file_accesses, params_text, stream_paths

if TYPE_CHECKING:
    from ..events import (DoneWire, Dispatched, Ended, Event, Granted, Log, Memory, Moved,
                          NodeGone, NodeJoin, Nested, NodeNote, StreamNote, Ready, Resumed,
                          Retry, Running, Sample,
                          SubmittedWire, Usage,
                          WholeWire)
    from .wire import ErrorInfo, SpecInfo

LOG_CAP = 20000          # lines stored per task; the rest are counted, then stated in the log
# the reason of a draining node's hand-back (runtime.rules.outcomes.hand_back): the task
# had not started there, so it is no attempt
HANDED_BACK = "handed back by node"

# A task's row as the writer holds it (the ``task_rows`` table; the ``tasks`` view
# adds the name, function and constraints from ``specs``: see schema.py).
COLS = ("id", "spec", "params", "node", "state", "t_submit", "t_dispatch", "t_start",
        "t_end", "attempts", "exit_code", "error", "error_full", "traceback")
IDX = {c: i for i, c in enumerate(COLS)}
(ID, NODE, STATE, T_SUBMIT, T_DISPATCH, T_START, T_END, ATTEMPTS, EXIT, ERROR) = (
    IDX[c] for c in ("id", "node", "state", "t_submit", "t_dispatch", "t_start", "t_end",
                     "attempts", "exit_code", "error"))
# the columns a task's end sets in its row inserted already (Changes.ends; state: DONE)
END_COLS = ("state", "t_end", "attempts", "node", "t_start", "t_dispatch")
# ...and those of a task that ended well with an exit code (a program: Changes.coded_ends)
CODED_END_COLS = END_COLS + ("exit_code",)
ENDED = frozenset({"DONE", "FAILED", "CANCELLED", "INTERRUPTED"})

Row = list[Any]                             # COLS, then RECEIVED
# (a row in hand's last item: when the writer got it; JournalDB.HOLD counts from it)
RECEIVED = len(COLS)
READY_COLS = IDX["exit_code"]               # COLS up to attempts: a task that ended well


def new_row(tid: int, sid: int, params: str, t_submit: float, received: float) -> Row:
    return [tid, sid, params, "", "SUBMITTED", t_submit, None, None, None, 0, None, None, None,
            None, received]


def _one_scalar(prefix: str, argv: Any, kwargs: Any, refs: Any, dep_ids: Any) -> str | None:
    """The parameters' text of the commonest call (one number or short string, nothing
    else), made from the row before's ``prefix`` (its first parameter's ``name=``), as
    :meth:`Changes._start` would make it; None: any other call (``_start`` makes it)."""
    if argv is None or len(argv) != 1 or dep_ids or refs or kwargs or \
            type(argv[0]) not in _SCALARS:
        return None
    try:
        r = repr(argv[0])
    except ValueError:      # (an int too long to print)
        return None
    return prefix + r if 0 < len(r) <= 60 else None


def _capped(tid: int, t: float, node: str, n: int) -> tuple[int, float, str, str, str]:
    """The log line that says how many lines of a task the journal did not store."""
    return (tid, t, "RAW", node, f"[taskflow] {n - LOG_CAP} more lines not stored (journal "
            f"cap {LOG_CAP} lines per task)")


class SpecRows:
    """The ``specs`` table as the writer knows it: one id per (function, constraints,
    name), and the spec rows and stream paths not written yet."""

    def __init__(self, existing: Iterable[tuple[int, str, str, str]]) -> None:
        self.ids: dict[tuple[str, str, str], int] = {(f, c, n): i for i, n, f, c in existing}
        self.new: list[tuple[int, str, str, str]] = []      # (id, name, func, constraints)
        # specs with stream parameters -> {parameter: stream}; their tasks' paths (STREAMS)
        self.streams: dict[int, dict[str, str]] = {}
        self.stream_rows: list[tuple[int, str]] = []
        # the files each task read and wrote (FILES): (task id, JSON of text.file_accesses)
        self.file_rows: list[tuple[int, str]] = []
        # the values each task was passed that the journal keeps by digest (VALUES): (task
        # id, JSON of its text.Kept list)
        self.value_rows: list[tuple[int, str]] = []

    def id(self, info: SpecInfo) -> int:
        func, constraints, _, name = info
        key = (func, constraints, name)
        sid = self.ids.get(key)
        if sid is None:
            sid = self.ids[key] = len(self.ids) + 1
            self.new.append((sid, name, func, constraints))
            if '"streams"' in constraints:
                self.streams[sid] = json.loads(constraints)["streams"]
        return sid


class Changes:
    """What one delivery changes, table by table (``JournalDB`` writes it)."""

    def __init__(self, held: dict[int, Row], nlogs: dict[int, int], specs: SpecRows,
                 by_digest: int | None = None, now: float = 0.0) -> None:
        self.new = held         # task rows not inserted yet, by id (JournalDB.HOLD)
        self.now = now          # when the writer got the delivery (RECEIVED)
        self.nlogs = nlogs      # lines seen per task (LOG_CAP)
        self.specs = specs
        self.by_digest = by_digest  # bytes: a value's pickle over this is kept by digest
        # rows of tasks submitted and ended well in it: READY_COLS values a row, one flat
        # list (bulk.insert_flat binds it as it is)
        self.ready: list[Any] = []
        self.changes: dict[int, dict[str, Any]] = {}    # columns of rows inserted already
        # ends of rows inserted already (done_rows): task id -> the values of END_COLS but
        # state ("DONE"), and the id
        self.ends: dict[int, tuple[float, int, str, float, float, int]] = {}
        # the same for tasks that ended with an exit code: CODED_END_COLS but state, the id
        self.coded_ends: dict[int, tuple[float, int, str, float, float, int, int]] = {}
        self.deps: list[tuple[int, int]] = []
        self.children: list[tuple[int, int]] = []     # (parent, child): nested calls
        self.trans: list[tuple[int, float, str, str, Any]] = []
        self.logs: list[tuple[int, float, str, str, str]] = []
        self.nodes: list[tuple[str, float, Any, str]] = []
        self.lost: list[tuple[float, str, str]] = []
        self.states: list[tuple[str, str]] = []
        self.samples: list[tuple[Any, ...]] = []
        self.usage: list[tuple[int, float, int, int | None, int | None, str | None]] = []
        self.used: dict[int, tuple[float, Any]] = {}    # task -> (time, usage) of this delivery
        # attempts that ran again: (task, retry time, node, what is known of the attempt,
        # its start still to read from the table)
        self.attempts: list[tuple[int, float, str, dict[str, Any], bool]] = []
        self.memory: list[tuple[Any, ...]] = []
        self.moves: list[tuple[int, int, float, float, int, str, str]] = []
        self.streams: list[tuple[str, str, str, float]] = []     # opened
        self.stream_tasks: list[tuple[str, int, str, str]] = []
        self.stream_ends: list[tuple[float, int, str, str]] = []  # closed
        self._info: Any = None          # the spec info met last, its spec row's id and
        self._sid = 0                   # its first parameter's "name=" (None: it has none)
        self._prefix: str | None = None

    def change(self, tid: int, ch: dict[str, Any]) -> None:
        """Columns of a row inserted already (an UPDATE)."""
        old = self.changes.get(tid)
        if old is None:
            self.changes[tid] = ch
        else:
            old.update(ch)

    def apply(self, tid: int, ch: dict[str, Any]) -> None:
        """Columns of a task's row, in hand or inserted already."""
        row = self.new.get(tid)
        if row is None:
            self.change(tid, ch)
        else:
            for k, v in ch.items():
                row[IDX[k]] = v

    def events(self, evs: list[Event]) -> None:
        """Each of the delivery's events, in order, to its kind's handler."""
        for ev in evs:
            kind, _, _, _, _, _ = ev
            on = HANDLERS.get(kind)
            if on is not None:      # (others, e.g. node_leaving, are not journalled)
                on(self, ev)

    # -- task rows ------------------------------------------------------------------

    def rows(self, whole: list[WholeWire[SpecInfo]], sub: list[SubmittedWire[SpecInfo]],
             done: list[DoneWire], evs: list[Event]) -> list[DoneWire]:
        """The delivery's new rows; returns the done rows left for after its events.

        A task submitted and ended well within the delivery, with an exit code of
        None and no other event of the delivery naming it, gets its whole row at once.
        """
        touched = {tid for kind, _, tid, _, _, _ in evs if kind != "usage"}
        late: list[DoneWire] = []       # ends of whole rows that other events name
        ready = self.ready
        last: Any = None                # the spec info of the row before, its id and
        sid = 0                         # its first parameter's "name=" (the fast path)
        prefix: str | None = None
        for tid, t, info, argv, kwargs, refs, dep_ids, t0, t1, tdisp, node, att, code in whole:
            params = _one_scalar(prefix, argv, kwargs, refs, dep_ids) \
                if info is last and prefix is not None else None
            if params is None:
                sid, params = self._start(tid, info, argv, kwargs, refs, dep_ids)
                last, prefix = info, self._prefix
            if code is None and tid not in touched:
                ready += (tid, sid, params, node, "DONE", t, tdisp or None, t0 or None, t1, att)
                continue
            self.new[tid] = new_row(tid, sid, params, t, self.now)
            _, _, _, name = info
            late.append((tid, t0, t1, tdisp, node, att, name, code))
        if late:
            done = late + done
        by_id = bool(done and sub)
        done_by: dict[int, DoneWire] = {}           # the done rows by task id
        if by_id:
            for row in done:
                tid, _, _, _, _, _, _, _ = row
                done_by[tid] = row
        new = self.new
        now = self.now
        for tid, t, info, argv, kwargs, refs, dep_ids in sub:
            params = _one_scalar(prefix, argv, kwargs, refs, dep_ids) \
                if info is last and prefix is not None else None
            if params is None:
                sid, params = self._start(tid, info, argv, kwargs, refs, dep_ids)
                last, prefix = info, self._prefix
            end = done_by.get(tid) if by_id and tid not in touched else None
            if end is not None:
                _, t0, t1, tdisp, node, att, _, code = end
                if code is None:
                    del done_by[tid]
                    ready += (tid, sid, params, node, "DONE", t, tdisp or None, t0 or None, t1,
                              att)
                    continue
            new[tid] = [tid, sid, params, "", "SUBMITTED", t, None, None, None, 0, None, None,
                        None, None, now]            # (new_row's, inline)
        return list(done_by.values()) if by_id else done

    def _start(self, tid: int, info: SpecInfo, argv: Any, kwargs: Any, refs: Any,
               dep_ids: list[int] | None) -> tuple[int, str]:
        """A new task's spec row id and parameter text; its dependencies and stream paths."""
        if info is self._info:          # (a delivery's rows of one function share its info)
            sid = self._sid
            _, _, names, _ = info
        else:
            func, constraints, names, name = info
            known = self.specs.ids.get((func, constraints, name))
            sid = known if known is not None else self.specs.id(info)
            self._info, self._sid = info, sid
            self._prefix = f"{names[0]}=" if names else None
        if not (dep_ids or refs or kwargs or argv):
            return sid, ""          # (params_text's, for a call of no arguments: a program's)
        if not (dep_ids or refs or kwargs) and argv is not None and len(argv) == 1 \
                and names and type(argv[0]) in _SCALARS:
            try:
                r = repr(argv[0])   # (text.params_text's, for the commonest call: one number)
            except ValueError:      # (an int too long to show: params_text says so)
                r = ""
            if 0 < len(r) <= 60:
                return sid, f"{names[0]}={r}"
        specs = self.specs
        if dep_ids:
            self.deps.extend([(tid, d) for d in dep_ids])
        if refs:
            files = file_accesses(names, refs)
            if files:
                specs.file_rows.append((tid, json.dumps(files)))
        if refs and sid in specs.streams:
            specs.stream_rows.append((tid, json.dumps(stream_paths(names, refs,
                                                                   specs.streams[sid]))))
        params, kept = params_text(names, argv, kwargs, refs, self.by_digest)
        if kept:
            specs.value_rows.append((tid, json.dumps(kept)))
        return sid, params

    def done_rows(self, rows: list[DoneWire]) -> None:
        """Tasks that ended well, from the bus's rows (after the delivery's events).

        The end of a row inserted already whose task no other event of the delivery
        changed (the commonest update: a task that waited in the queue longer than
        ``HOLD``) goes to :attr:`ends` (:attr:`coded_ends` with an exit code: a
        program's) as the values of its UPDATE, not as a dict."""
        nlogs = self.nlogs
        new = self.new
        changes = self.changes
        ends = self.ends
        coded = self.coded_ends
        for tid, t0, t1, tdisp, node, att, _, code in rows:
            row = new.get(tid)
            n = nlogs.pop(tid, 0) if nlogs else 0
            if row is not None:
                row[NODE] = node
                row[STATE] = "DONE"
                row[T_START] = t0 or None
                row[T_END] = t1
                row[ATTEMPTS] = att
                if tdisp:
                    row[T_DISPATCH] = tdisp
                if code is not None:
                    row[EXIT] = code
            elif node and t0 and tdisp and tid not in changes and tid not in ends \
                    and tid not in coded:
                if code is None:
                    ends[tid] = (t1, att, node, t0, tdisp, tid)      # (END_COLS, then the id)
                else:
                    coded[tid] = (t1, att, node, t0, tdisp, code, tid)   # (CODED_END_COLS)
            else:
                ch: dict[str, Any] = {"state": "DONE", "t_end": t1, "attempts": att}
                if code is not None:
                    ch["exit_code"] = code
                if node:
                    ch["node"] = node
                if t0:
                    ch["t_start"] = t0
                if tdisp:
                    ch["t_dispatch"] = tdisp
                for pending, cols in ((ends, END_COLS), (coded, CODED_END_COLS)):
                    end = pending.pop(tid, None)
                    if end is not None:     # (a task's second end in one delivery)
                        self.change(tid, {"state": "DONE", **dict(zip(cols[1:], end))})
                self.change(tid, ch)
            if n > LOG_CAP:
                self.logs.append(_capped(tid, t1, node, n))


# -- one handler per event kind (events) ----------------------------------

def _ready(c: Changes, ev: Ready) -> None:
    _, t, tid, _, node, _ = ev
    c.trans.append((tid, t, "READY", node, None))
    row = c.new.get(tid)
    if row is not None:
        if row[STATE] == "SUBMITTED":
            row[STATE] = "READY"
    elif tid not in c.changes:      # (an update never moves a later state back)
        c.changes[tid] = {"state": "READY"}


def _dispatched(c: Changes, ev: Dispatched) -> None:
    _, t, tid, _, node, slots = ev
    if slots is not None:           # several slots: where
        c.trans.append((tid, t, "PLACED", node, json.dumps(slots)))
    row = c.new.get(tid)
    if row is not None:
        row[NODE] = node
        row[STATE] = "DISPATCHED"
        row[T_DISPATCH] = t
    else:
        c.change(tid, {"state": "DISPATCHED", "node": node, "t_dispatch": t})


def _running(c: Changes, ev: Running) -> None:
    _, t, tid, _, node, _ = ev
    row = c.new.get(tid)
    if row is not None:
        row[NODE] = node
        row[STATE] = "RUNNING"
        row[T_START] = t
    else:
        c.change(tid, {"state": "RUNNING", "node": node, "t_start": t})


def _ended(c: Changes, ev: Ended) -> None:
    """failed, cancelled, interrupted (a task that ended well comes as its done row)."""
    kind, t, tid, _, node, (t0, t1, first_line, error, attempts, tdisp) = ev
    ch: dict[str, Any] = {"state": kind.upper(), "t_end": t}
    if node:
        ch["node"] = node
    if t0:
        ch["t_start"] = t0
    if t1:
        ch["t_end"] = t1
    if first_line:
        ch["error"] = first_line
    if error is not None:
        ch["error_full"], ch["traceback"], code = cast("ErrorInfo", error)   # by wire.py
        if code is not None:
            ch["exit_code"] = code
    ch["attempts"] = attempts
    if tdisp:
        ch["t_dispatch"] = tdisp
    n = c.nlogs.pop(tid, 0)
    if n > LOG_CAP:
        c.logs.append(_capped(tid, t, node, n))
    c.apply(tid, ch)


def _granted(c: Changes, ev: Granted) -> None:
    """The resources a task was given, one RESOURCES transition per attempt (its JSON:
    variant, cores, {name: {"amount": a, "indices": [...]}}); what it asked for is its
    spec's ``constraints`` (resources, variants)."""
    _, t, tid, _, node, given = ev
    c.trans.append((tid, t, "RESOURCES", node, given))


def _retry(c: Changes, ev: Retry) -> None:
    _, t, tid, _, node, why = ev
    c.trans.append((tid, t, "RETRY", node, str(why)))
    if not str(why).startswith(HANDED_BACK):
        _attempt(c, tid, t, node)
    c.apply(tid, {"state": "READY", "node": ""})


def _attempt(c: Changes, tid: int, t: float, node: str) -> None:
    """An attempt that will run again: its start and what was measured of it, kept as an
    ``ATTEMPT`` transition (the task's row and ``usage`` keep its last attempt only)."""
    info: dict[str, Any] = {"retry": t, "end": t}
    row = c.new.get(tid)
    start = row[T_START] if row is not None else c.changes.get(tid, {}).get("t_start")
    got = c.used.pop(tid, None)
    if got is not None:
        info["end"], (cpu, peak, rd, wr, *how) = got
        info.update(cpu=cpu, rss=peak, rchar=rd if rd >= 0 else None,
                    wchar=wr if wr >= 0 else None, rss_how=_first(how))
    info["start"] = start
    # (not in hand: the row's t_start, read before this delivery's updates: the attempt's)
    c.attempts.append((tid, t, node, info, start is None and row is None))


def _resumed(c: Changes, ev: Resumed) -> None:
    kind, t, tid, _, node, why = ev
    c.trans.append((tid, t, kind.upper(), node, str(why)))


def _nested(c: Changes, ev: Nested) -> None:
    _, _, tid, _, _, parent = ev
    c.children.append((parent, tid))


def _stream(c: Changes, ev: StreamNote) -> None:
    _, t, tid, sid, _, (what, detail) = ev
    if what == "open":
        kind, _, name = detail.partition(" ")
        c.streams.append((sid, kind, name, t))
    elif what == "close":
        items, _, error = detail.partition(" ")
        c.stream_ends.append((t, int(items), error, sid))
    else:
        c.stream_tasks.append((sid, tid, what, detail))


def _usage(c: Changes, ev: Usage) -> None:
    _, t, tid, _, _, used = ev
    cpu, peak, rd, wr, *how = used                      # (how: not in an older agent's)
    c.usage.append((tid, cpu, peak, rd if rd >= 0 else None, wr if wr >= 0 else None,
                    _first(how)))
    c.used[tid] = (t, used)


def _first(items: list[Any]) -> Any:
    """The first of ``items``, None when there is none."""
    for x in items:
        return x
    return None


def _moved(c: Changes, ev: Moved) -> None:
    _, t, tid, _, dst, (t0, size, src, producer) = ev
    c.moves.append((tid, producer, t0, t, size, src, dst))


def _log(c: Changes, ev: Log) -> None:
    _, t, tid, _, node, (level, line) = ev
    n = c.nlogs.get(tid, 0) + 1
    c.nlogs[tid] = n
    if n <= LOG_CAP:
        c.logs.append((tid, t, level, node, line))


def _node_join(c: Changes, ev: NodeJoin) -> None:
    _, t, _, _, node, info = ev
    if not isinstance(info, dict):
        info = {}
    c.nodes.append((node, t, info.get("slots"), json.dumps(info, default=str)))


def _node_gone(c: Changes, ev: NodeGone) -> None:
    _, t, _, _, node, reason = ev
    c.lost.append((t, str(reason), node))


def _node_state(c: Changes, ev: NodeNote) -> None:
    """How the node's Slurm job ended."""
    _, _, _, _, node, info = ev
    c.states.append((f" [slurm job {info.get('job_id')}: {info.get('state')}]", node))


def _sample(c: Changes, ev: Sample) -> None:
    _, t, _, _, node, s = ev
    if not isinstance(s, dict):
        s = {}
    c.samples.append((node, t, s.get("cpu"), s.get("mem"), s.get("load1"),
                      json.dumps(s, default=str)))


def _memory(c: Changes, ev: Memory) -> None:
    _, t, _, _, node, (rss, held, spilled, paused, happened) = ev
    spills = [n for what, _, n in happened if what == "spill"]
    reads = sum(n for what, _, n in happened if what == "read")
    c.memory.append((node, t, rss, held, spilled, int(paused), len(spills), sum(spills), reads))


HANDLERS: dict[str, Callable[[Changes, Any], None]] = {
    "ready": _ready, "dispatched": _dispatched, "granted": _granted, "running": _running,
    "done": _ended, "failed": _ended, "cancelled": _ended, "interrupted": _ended,
    "retry": _retry, "rerun": _resumed, "restored": _resumed, "adopted": _resumed,
    "usage": _usage, "log": _log, "nested": _nested, "moved": _moved, "stream": _stream,
    "node_join": _node_join, "node_lost": _node_gone, "node_left": _node_gone,
    "node_state": _node_state, "sample": _sample, "memory": _memory,
}
