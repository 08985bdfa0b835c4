"""The events of a run, one record per kind, and the rows the bus makes of tasks.

Every event is six fields, ``(kind, t, task_id, name, node, extra)``: what
happened, when, to which task (``task_id`` 0 and ``name`` "" for a node's
events), where (``node`` "" when nowhere yet), and what the kind adds. That
layout is public: observers of ``rt.bus.subscribe(fn)`` unpack the six
fields (README, examples/nmmb_monarch/workflow.py), so each kind's record
keeps it and names its sixth field and that field's type instead (``None``
for kinds that add nothing). A sixth field that is a tuple is a plain one,
typed by the aliases below (a named tuple in there would be pickled by
class, field by field, on its way to the journal).

Events are named tuples, built where they happen (:meth:`.runtime.bus.EventBus.emit`).
The journal's writer process does not load taskflow: the journal sends it
each event as a plain tuple (:mod:`taskflow.journal.writer`), and the writer
unpacks it in this order (:mod:`taskflow.journal.changes`).

The two records every task has are not events: the bus makes a task's
*rows* at delivery (:mod:`.runtime.bus`). They travel as plain tuples (a row per
task is the journal's hot path: a plain tuple pickles several times faster
than a named one), typed ``SubmittedWire``, ``DoneWire``, ``WholeWire``,
whose fields are those of :class:`SubmittedRow`, :class:`DoneRow` and
:class:`WholeRow` (mypy checks that each pair agrees, as for the messages
of :mod:`taskflow.wire.messages`). Observers that do not take rows get them
as :class:`Submitted` and ``Ended`` "done" events.
"""
import time
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Optional, TypeVar, Union

from .graph import task as T

if TYPE_CHECKING:
    from .errors import TaskError
    from .graph.spec import TaskSpec
    from .graph.task import Task

# What some kinds add (the sixth field):
# the call of a submitted task: (dep task ids, argv, kwargs, refs, spec), references only
CallInfo = tuple[list[int], Any, Any, Any, "TaskSpec"]
# how a task ended: (t_start, t_end, the error's first line, the error, attempts (the times
# it was started: 1 is the first run), t_dispatch); the error is a TaskError, reduced on its
# way to the journal (journal/wire.py)
EndInfo = tuple[float, float, Optional[str], Optional["TaskError"], int, float]
# CPU seconds, peak resident bytes, bytes read, bytes written, how the peak was measured (one
# of agent.executor.usage.HOW: "wait4", "vmhwm", "children", "at-least", "at-most",
# "engine-client")
UsageInfo = tuple[float, int, int, int, str]
LogLine = tuple[str, str]               # (STDOUT | STDERR | RAW, text)
# a node's memory report (wire MemoryReport): (rss, bytes held, bytes spilled, paused,
# [("spill", data id, bytes), ("read", 0, how many), ("pause" | "resume", 0, rss)])
MemoryInfo = tuple[int, int, int, bool, list[tuple[Any, ...]]]
# a value moved for a task (runtime.loop.fetches, relay): (t_start, bytes, from node, the
# task that made it); the event's node is where it went ("master": to the master)
MoveInfo = tuple[float, int, str, int]


# -- a task's events ---------------------------------------------------------------

class Submitted(NamedTuple):
    """A task was recorded (observers that take rows get its row instead)."""

    kind: Literal["submitted"]
    t: float
    task_id: int
    name: str
    node: str
    call: CallInfo


class Ready(NamedTuple):
    """A task's inputs are all there (sent for tasks not known to be short)."""

    kind: Literal["ready"]
    t: float
    task_id: int
    name: str
    node: str
    extra: None


class Dispatched(NamedTuple):
    """A task went to a node (not sent for tasks known to be short)."""

    kind: Literal["dispatched"]
    t: float
    task_id: int
    name: str
    node: str
    slots: list[tuple[str, int]] | None  # [(node, slots)] held, when not one slot of node


class Granted(NamedTuple):
    """A task that asks for named resources or gives variants was given them on dispatch
    (runtime.scheduling.resources): the journal's RESOURCES transition of that attempt."""

    kind: Literal["granted"]
    t: float
    task_id: int
    name: str
    node: str
    given: str     # JSON: {"variant": i or null, "cores": n, "resources": {name: {...}}}


class Running(NamedTuple):
    """The node started the task (not sent for tasks known to be short)."""

    kind: Literal["running"]
    t: float
    task_id: int
    name: str
    node: str
    extra: None


EndedKind = Literal["done", "failed", "cancelled", "interrupted"]
ENDED_KIND: dict[str, EndedKind] = {T.DONE: "done", T.FAILED: "failed",
                                    T.CANCELLED: "cancelled", T.INTERRUPTED: "interrupted"}


class Ended(NamedTuple):
    """A task is over. The journal gets the end of a task that ended well as its row
    (:class:`DoneRow`); observers that take events get it as an ``Ended`` "done"."""

    kind: EndedKind
    t: float
    task_id: int
    name: str
    node: str
    end: EndInfo


def ended(task: "Task") -> "Ended":
    """The event of a task that ended otherwise than well (failed, cancelled, ...)."""
    node = task.node
    err = task.error
    return Ended(ENDED_KIND[task.state], task.t_end or time.time(), task.id, task.spec.name,
                 node.name if node is not None else "",
                 (task.t_start, task.t_end, str(err).split("\n")[0] if err is not None else None,
                  err, task.attempts + task.crashes, task.t_dispatch))


class Retry(NamedTuple):
    """A task goes back to the ready queue (failed, lost with its node, handed back)."""

    kind: Literal["retry"]
    t: float
    task_id: int
    name: str
    node: str
    why: str


class Resumed(NamedTuple):
    """In a resumed run: a call restored from the earlier run, adopted from one of its
    agents (runtime/recovery/adopt.py), or run again and why."""

    kind: Literal["rerun", "restored", "adopted"]
    t: float
    task_id: int
    name: str
    node: str
    why: str


class Nested(NamedTuple):
    """A running task called a task: ``task_id`` is the child, ``parent`` its caller
    (runtime/nesting.py)."""

    kind: Literal["nested"]
    t: float
    task_id: int
    name: str
    node: str
    parent: int


class Usage(NamedTuple):
    """What a measured task used (agent/executor/usage.py: functions not known to be short)."""

    kind: Literal["usage"]
    t: float
    task_id: int
    name: str
    node: str
    used: UsageInfo


class Log(NamedTuple):
    """One line a task wrote (``name`` "": the task is known by its id)."""

    kind: Literal["log"]
    t: float
    task_id: int
    name: str
    node: str
    line: LogLine


# -- a node's events (task_id 0, name "") ---------------------------------------------

class NodeJoin(NamedTuple):
    kind: Literal["node_join"]
    t: float
    task_id: int
    name: str
    node: str
    info: dict[str, Any]          # the agent's READY, its slots and Slurm job id


class NodeGone(NamedTuple):
    """The node is leaving (draining), left, or was lost."""

    kind: Literal["node_leaving", "node_left", "node_lost"]
    t: float
    task_id: int
    name: str
    node: str
    reason: str


class NodeNote(NamedTuple):
    """What a provider tells about a node (``NodeSink.node_event``); ``node_state``:
    how its Slurm job ended, ``{"job_id": ..., "state": ...}``."""

    kind: str
    t: float
    task_id: int
    name: str
    node: str
    info: Any


class Sample(NamedTuple):
    """The node's load (agent.sampler)."""

    kind: Literal["sample"]
    t: float
    task_id: int
    name: str
    node: str
    sample: dict[str, Any]        # cpu, mem, load1, ...


class Memory(NamedTuple):
    """The node spilled or read back values, or paused or resumed (agent.memory)."""

    kind: Literal["memory"]
    t: float
    task_id: int
    name: str
    node: str
    report: MemoryInfo


class Moved(NamedTuple):
    """A value over the inline limit reached the master or another node (``task_id``: the
    task it moved for, 0 for the master's own wait; ``t``: when it arrived)."""

    kind: Literal["moved"]
    t: float
    task_id: int
    name: str
    node: str
    move: MoveInfo


class StreamNote(NamedTuple):
    """A stream opened, got a producer or a consumer, or closed (runtime/streams.py):
    ``name`` is the stream's id, ``info`` (what, detail): ("open", "objects NAME"),
    ("producer" | "consumer", parameter) for ``task_id``, ("close", "ITEMS [ERROR]")."""

    kind: Literal["stream"]
    t: float
    task_id: int
    name: str
    node: str
    info: tuple[str, str]


Event = Union[Submitted, Ready, Dispatched, Granted, Running, Ended, Retry, Resumed, Usage,
              Log, NodeJoin, NodeGone, NodeNote, Sample, Memory, Nested, Moved, StreamNote]


# -- a task's rows (plain tuples: see the module docstring) ---------------------------------

_Spec = TypeVar("_Spec")    # a TaskSpec in the master; its summary in the writer process


class SubmittedRow(NamedTuple):
    """A task submitted since the last delivery (its end not in the same delivery)."""

    task_id: int
    t_submit: float
    spec: "TaskSpec"                # reduced by the journal's pickler (journal/wire.py)
    argv: Any
    kwargs: Any
    refs: Any                     # futures reduced by the journal's pickler
    deps: list[int] | None        # the tasks it waits for


class DoneRow(NamedTuple):
    """A task that ended well since the last delivery (submitted in an earlier one)."""

    task_id: int
    t_start: float
    t_end: float
    t_dispatch: float
    node: str
    attempts: int
    name: str
    exit_code: int | None         # an external program's (graph.task.exit_code)


class WholeRow(NamedTuple):
    """A task submitted and ended well since the last delivery (nearly every short
    task): its :class:`SubmittedRow` and its :class:`DoneRow` in one tuple, one tuple
    to make and to pickle instead of two."""

    task_id: int
    t_submit: float
    spec: "TaskSpec"
    argv: Any
    kwargs: Any
    refs: Any
    deps: list[int] | None
    t_start: float
    t_end: float
    t_dispatch: float
    node: str
    attempts: int
    exit_code: int | None


SubmittedWire = tuple[int, float, _Spec, Any, Any, Any, Optional[list[int]]]
DoneWire = tuple[int, float, float, float, str, int, str, Optional[int]]
WholeWire = tuple[int, float, _Spec, Any, Any, Any, Optional[list[int]], float, float, float,
                  str, int, Optional[int]]

# One delivery to a subscriber that takes rows (the journal): (whole rows, submitted
# rows, the other events in order, done rows).
RowBatch = tuple[list["WholeWire[TaskSpec]"], list["SubmittedWire[TaskSpec]"], list[Event],
                 list[DoneWire]]


if TYPE_CHECKING:   # mypy checks that each row and its named tuple agree
    def _same_submitted(w: SubmittedWire[TaskSpec]) -> SubmittedRow:
        return SubmittedRow(*w)

    def _same_done(w: DoneWire) -> DoneRow:
        return DoneRow(*w)

    def _same_whole(w: WholeWire[TaskSpec]) -> WholeRow:
        return WholeRow(*w)
