"""Every message between the master, a node agent and its executors, by name.

A frame (:mod:`.protocol`) carries one ``(op, body)`` pair; this module says
what each body is. Master -> node::

    HELLO     Hello                      first frame: where and how to run
    FUNC      Func                       a task function, once per node (and executor)
    TASKS     list[TaskWire]             a batch of work
              (to an executor: ExecBatch, the tasks and the stored values they read)
    DATA      list[DataItem]             values pushed to the node
    FETCH     list[int]                  data ids the master wants back
    DROP      list[int]                  data ids no longer needed
    CANCEL    list[int]                  task ids to kill or forget
    SHUTDOWN  None
    INTERRUPT float                      the run is interrupted: start nothing more, SIGINT
                                         running tasks (programs get SIGTERM), kill what is
                                         still running after this many seconds
    PULL      list[tuple[int, int, int]] (data id, offset, bytes): parts of values to send
    PART      list[PartWire]             parts of a value copied here (runtime.loop.relay)
    ADOPT     Adopt                      a resumed master claims tasks the agent kept
                                         running for it (wire.adoption), cancels the rest
    KEYS      list[tuple[int, bytes]]    (task id, key) of keyed calls sent (adoptable runs):
                                         what a resumed master matches them by
    PING      None                       the master is there (adoptable runs: an agent
                                         that hears nothing for heartbeat_timeout s
                                         takes its master for lost)
    NESTED    list[NestAnswer | StreamItems]
                                         what a waiting parent task waited for, or a stream's
                                         items a task polled (the agent gives it to the
                                         executor running the task)
    PRELOAD   Preload                    modules the script imported: the node's executors
                                         import them before their first task (also agent ->
                                         executor; runtime.loop.preload, agent.executor.preload)

Agent -> executor, besides the master's frames::

    NESTED_RUN list[NestAnswer | StreamItems]
                                         as NESTED, for a task nothing runs or waits
                                         above: it runs again as soon as it has the answer,
                                         and the agent told the master so (NestResumed):
                                         the executor does not

Node -> master::

    READY     Ready                      answer to HELLO
    RESULTS   list[ResultWire]           (from an executor: ExecResults, with its lines)
    DATA      list[DataItem]             answer to FETCH
    LOG       list[LogWire]              output lines of tasks
    SAMPLE    dict[str, Any]             the host's load (agent.sampler)
    FATAL     str                        the node cannot go on
    LEAVING   Leaving                    draining: the listed tasks were not started
    MEMORY    MemoryReport               values spilled or read back, paused or not
    STARTED   list[tuple[int, float]]    (task id, time) of tasks that began to run; sent
                                         for tasks not known to be short (MASTER_SHORT)
    PART      list[PartWire]             answer to PULL (total -1: the value is not here)
    NEST      list[NestCall | NestWait | NestWaitFile | NestResumed | NestRelease |
              StreamPublish | StreamClose | StreamPoll]
                                         a running task's calls of tasks, its waits and its
                                         return from a wait, what it publishes to streams,
                                         closes and polls (executor -> agent -> master, in
                                         the executor's order; the agent sends them before
                                         the round's RESULTS)

The hot messages (a task, a result, a log line) travel as *plain tuples*
whose fields are those of the named tuple of the same name: pickling a tuple
subclass costs about 1.4 us more per message than a plain tuple (measured on
this project's machine: 1.63 against 0.26 us to dump, 0.83 against 0.33 to
load), which at tens of thousands of tasks a second is most of a core. So a
sender builds the plain tuple (typed as ``TaskWire``, ``ResultWire``, ...,
whose arity and field types mypy checks), and a receiver either unpacks it or
looks at it through the named tuple with :func:`tasks` (a C-level cast,
0.13 us a message). Cold messages (``Func``, ``Leaving``, ``ErrorInfo``,
``Held``) travel as the named tuples themselves.
"""

import functools
import mmap
import pickle
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypedDict, Union, final

from .invocation import Options

# -- op codes (plain ints on the wire) ------------------------------------------
HELLO: Final = 0
FUNC: Final = 1
TASKS: Final = 2
DATA: Final = 3
FETCH: Final = 4
DROP: Final = 5
CANCEL: Final = 6
SHUTDOWN: Final = 7
INTERRUPT: Final = 8
PULL: Final = 9
READY: Final = 10
RESULTS: Final = 11
LOG: Final = 12
SAMPLE: Final = 13
FATAL: Final = 14
LEAVING: Final = 15
STARTED: Final = 16
MEMORY: Final = 17
PART: Final = 18
ADOPT: Final = 19
PING: Final = 20
KEYS: Final = 21
NEST: Final = 22
NESTED: Final = 23
NESTED_RUN: Final = 27      # agent -> executor only: NESTED, and the agent took the task back
PRELOAD: Final = 30         # master -> agent -> executors: modules to import ahead of tasks
NESTED_HERE: Final = 35     # agent -> executors: whether short calls may run in their callers'

# -- result statuses -------------------------------------------------------------
OK: Final = 0
ERROR: Final = 1
TIMEOUT: Final = 2
LOST: Final = 3                   # the node was lost (never sent by a node)
CANCELLED_ON_NODE: Final = 4
CRASHED: Final = 5                # the executor running it died (not the task's own failure)
INTERRUPTED: Final = 6            # the run was interrupted while it ran
MISSING: Final = 7                # an input is not there: the agent resends, or the master places it again
OVER_MEMORY: Final = 8            # the task grew past its memory limit (agent.executor.limits)
NOT_STARTED: Final = 9            # the run's interrupt came before it started: it never ran

# -- how a task's argument is resolved on the node (Ref.kind) ----------------------
RefKind = Literal["r", "p", "f", "fo", "do", "fio", "dio"]
REF_VALUE: Final = "r"            # a value by data id: the node's store or the inputs sent along
REF_PICKLED: Final = "p"          # (pickle bytes, [data ids]): a snapshot with values inside
REF_FILE: Final = "f"             # a file or directory read in place: its path
REF_FILE_OUT: Final = "fo"        # a file the task writes: a fresh version path
REF_DIR_OUT: Final = "do"         # a directory the task writes
REF_FILE_INOUT: Final = "fio"     # (previous version, new version): copied first
REF_DIR_INOUT: Final = "dio"

# -- what a task gives back besides its return values (OutWire kind) ----------------
OutKind = Literal["o", "f", "d"]
OUT_OBJECT: Final = "o"           # an INOUT object: its new value travels back
OUT_FILE: Final = "f"             # a file written: checked to exist, nothing travels
OUT_DIR: Final = "d"              # a directory written

ArgPath = tuple[Union[int, str], ...]   # first item: position or keyword; then indices inside
RefWire = tuple[ArgPath, RefKind, Any]
OutWire = tuple[ArgPath, OutKind, str]  # (path, kind, parameter name)
DataItem = tuple[int, Union["Payload", None]]
LineWire = tuple[float, str, str]       # (time, STDOUT | STDERR | RAW, text)
TaskLines = tuple[int, list[LineWire]]
LogWire = tuple[int, float, str, str]   # (task id, time, level, text)
# (start, end) on the node; measured tasks (agent.executor.usage): (start, end, CPU seconds, peak bytes,
# bytes read, bytes written; -1 when not known; how the peak was measured: usage.HOW)
Timing = Union[tuple[float, float], tuple[float, float, float, int, int, int, str]]
# (data id, offset, total bytes, the bytes): a slice of a value's flat layout (agent.store.flat)
PartWire = tuple[int, int, int, Any]


class Ref(NamedTuple):
    """One argument the node resolves before the call (a value, a snapshot, a path)."""

    path: ArgPath
    kind: RefKind
    data: Any


class ErrorInfo(NamedTuple):
    """Why a task failed, as the node saw it."""

    type_name: str
    message: str
    traceback: str
    pickled: bytes | None         # the exception itself (cloudpickle), when it pickles


@final       # receivers test ``type(x) is Held``: no subclass may stand in for it
class Held(NamedTuple):
    """In a result's outputs: a value too large to travel inline, kept on the node."""

    key: int                      # its data id
    size: int                     # bytes


_OWN = (bytearray, mmap.mmap)     # buffers a frame is read into (protocol.buffer)


@final
class Packed:
    """A value pickled with its large buffers out of band (pickle protocol 5).

    ``head`` is the pickle stream, ``bufs`` the buffers it names (a numpy
    array's memory, a large ``bytes``): in a frame they travel after the
    frame's pickle, written from where they are and read straight into their
    own buffer (:mod:`.protocol`), never copied into a frame. A value is a
    ``Payload``: plain pickle ``bytes`` when it is small or has no large
    buffer, else a ``Packed`` (:mod:`.values` makes and loads both).
    """

    __slots__ = ("head", "bufs", "size", "file")

    def __init__(self, head: bytes, bufs: list[Any]) -> None:
        self.head = head
        # on a node: the file its buffers are mapped from, shared with the agent's
        # executors (agent.executor.sharedfiles; its owner unlinks it); never pickled
        self.file: Any = None
        # a buffer read from a frame may come as a read-only view of the whole bytearray
        # it was read into: keep the bytearray itself (a task then gets a writable array)
        self.bufs = [b.obj if type(b) is memoryview and type(b.obj) in _OWN
                     and b.nbytes == len(b.obj) else b for b in bufs]  # type: ignore[arg-type]
        self.size = len(head) + sum(memoryview(b).nbytes for b in self.bufs)

    def __len__(self) -> int:
        return self.size

    def __reduce__(self) -> tuple[Any, ...]:
        return (Packed, (self.head, [pickle.PickleBuffer(b) for b in self.bufs]))

    def __repr__(self) -> str:
        return f"<Packed {self.size} bytes in {len(self.bufs) + 1} parts>"


@final
class Shared(NamedTuple):
    """Between an agent and its own executors only: a large value written to a file of
    the node's shared directory (:mod:`taskflow.agent.executor.sharedfiles`), which
    travels in its place."""

    name: str                     # the file's name in that directory
    size: int                     # bytes (the value's ``len``)


Payload = Union[bytes, Packed]      # a value, pickled
Output = Union[bytes, Packed, Held, None]   # None: a file output (nothing travels)


class TaskMsg(NamedTuple):
    """One task as the node runs it (a plain ``TaskWire`` tuple on the wire)."""

    task_id: int
    digest: bytes                 # the function, sent once per node in a FUNC frame
    argv: Any                     # positional arguments (None where a ref goes)
    refs: list[RefWire] | None
    kwargs: dict[str, Any] | None
    nout: int                     # return values
    inouts: list[OutWire] | None
    options: Options | None       # limits and how it runs (wire.invocation); None: plain
    priority: int
    units: int                    # computing units it holds
    exclusive: bool               # must start on an idle executor (time-outs, programs)
    outputs: list[int]            # data ids of its return values, then of its inouts


TaskWire = tuple[int, bytes, Any, Union[list[RefWire], None], Union[dict[str, Any], None], int,
                 Union[list[OutWire], None], Union[Options, None], int, int, bool,
                 list[int]]


class ResultMsg(NamedTuple):
    """How a task ended on the node (a plain ``ResultWire`` tuple on the wire)."""

    task_id: int
    status: int                   # OK, ERROR, TIMEOUT, CANCELLED_ON_NODE
    outputs: list[Output] | None  # OK: one per TaskMsg.outputs
    error: ErrorInfo | None
    timing: Timing


ResultWire = tuple[int, int, Union[list[Output], None], Union[ErrorInfo, None], Timing]


class Func(NamedTuple):
    digest: bytes
    payload: bytes                # cloudpickle of (function, its file name)
    code: bytes | None = None     # the digest of its code (graph.keys) in an adoptable run:
    #                               what a resumed master matches its plain calls by


class Preload(NamedTuple):
    """Modules the script imported (dotted names, in its order): executors import them
    before their first task, each on its own, a failure ignored. Sent again with the names
    added since (a node never gets a name twice)."""

    modules: list[str]


class Adoptable(NamedTuple):
    """A task an agent kept for a new master (wire.adoption): running, or its result held."""

    task_id: int                  # the earlier master's id
    key: bytes                    # its key (KEYS), or b"" for a plain call: then ...
    code: bytes                   # ... its function's code digest (Func.code; b"": not
    argv: Any                     # adoptable) and its positional arguments
    units: int                    # computing units it holds while it runs
    done: bool                    # it ended: its result waits on the node
    files: list[str]              # the file/directory versions it writes, in the order of
    #                               its inouts (the earlier run's paths; a claim keeps them)
    started: bool                 # it had started when the agent listed it (else it was
    #                               queued on an executor behind one that had: chained or
    #                               prefetched, it starts there when that one ends)


class Adopt(NamedTuple):
    """A resumed master's answer to the tasks an agent kept."""

    claimed: list[tuple[int, int, list[int]]]   # (earlier id, new id, new output data ids)
    cancelled: list[int]          # earlier ids nothing claims: kill them, drop their results


class MemoryReport(NamedTuple):
    """The node's memory changed state (agent.memory): sent when something happened."""

    t: float
    rss: int                      # bytes resident: the agent and its executors
    held: int                     # bytes of values held in memory
    spilled: int                  # bytes of values on the node's disk
    paused: bool                  # above the pause mark: no new producing task
    events: list[tuple[str, int, int]]   # ("spill", data id, bytes), ("read", 0, how many),
    #                                      ("full", errno, bytes free): a spill failed,
    #                                      ("pause" | "resume", 0, bytes resident)


class Leaving(NamedTuple):
    reason: str                   # SIGTERM, idle
    task_ids: list[int]           # sent to the node but not started: place them elsewhere


class Hello(TypedDict, total=False):
    """The master's first frame: how the agent sets itself up."""

    name: str
    slots: int | None             # None: as many as the node has cores
    sys_path: list[str]
    cwd: str
    env: dict[str, str]
    data_dir: str
    run_id: str
    idle_exit: float | None       # seconds idle before the agent leaves (Slurm pilots)
    sample_interval: float
    memory_gb: float              # the node's memory as the master counts it (a share of
    #                               the host for local nodes); else what the host has
    memory_budget: float | str | None   # wire.budget amounts; None: the defaults
    memory_pause: float | str | None
    io_executors: int             # executors for tasks that hold no unit (@IO)
    compss_env: bool              # every task sees PyCOMPSs's COMPSS_* (agent.executor.taskenv)
    #                               and a task called in a task runs inline (runcompss's way)
    compss_nesting: bool          # ... unless this: it is a child task (PyCOMPSs's agents)
    nested_here: bool             # a short call in a task may run in its executor (runhere)
    label: str                    # the node as COMPSs names it (COMPSS_HOSTNAMES)
    adopt_grace: float            # s the agent outlives a lost master (wire.adoption; 0: none)
    adopt_secret: str             # the run's secret a resumed master proves
    adopt_run: str                # the run whose master may adopt the agent
    adopt_file: str             # a dial-back agent: the file a resumed master says its
    #                               address in (agent.redial)
    heartbeat_timeout: float      # s of silence after which the master is taken for lost


class Ready(TypedDict, total=False):
    """The agent's answer to HELLO (providers may add what they learned, e.g. Slurm ids)."""

    hostname: str
    pid: int
    slots: int
    io_executors: int
    cpus: int | None
    memory_gb: float
    python: str
    version: str
    memory_budget: int            # bytes: above them, held values spill to disk
    memory_pause: int             # bytes: above them, no new producing task
    adoptable: list[Adoptable]    # an agent a resumed master reached: what it kept
    ids_above: tuple[int, int]    # ... and the task and data ids it holds of the earlier
    #                               run: the new master's ids start above them
    held: list[int]               # an agent its own master reached again (a node back in
    #                               its run): the data ids it still holds, besides kept tasks'


class NestCall(NamedTuple):
    """A running task called a task (its child): record it like a program's call."""

    parent: int                   # the calling task's id
    seq: int                      # the call's number in its parent (its handles name it)
    key: str                      # the task function, ``module:qualname`` (api.task)
    payload: bytes                # (args, kwargs) pickled; handles as persistent ids
    #                               ("c", seq, index) of the same parent's earlier calls
    by: int = 0                   # made by the parent's call ``by`` running in its executor


class NestHere(NamedTuple):
    """A call the parent's executor runs itself now (agent/executor/runhere.py): recorded
    as a ``NestCall`` is, running on the parent's node; a ``NestHereEnd`` follows."""

    parent: int
    seq: int
    key: str
    payload: bytes
    by: int                       # the parent's call running here that made it (0: itself)
    t: float                      # when it started there


class NestHereEnd(NamedTuple):
    """A call run in its parent's executor ended: its value or its error, its lines."""

    parent: int
    seq: int
    result: Any                   # its value (a Payload) if it ended well
    error: ErrorInfo | None
    t0: float
    t1: float
    lines: list[tuple[float, str, str]]     # (time, "STDOUT" or "STDERR", line) it printed
    call: NestHere | None = None  # the call itself, if its NestHere had not left (one entry)


class NestWait(NamedTuple):
    """A running task waits (``wait_on``, ``barrier``): its slot is free meanwhile."""

    parent: int
    wait: int                     # the wait's number in its executor (the answer names it)
    seqs: list[int] | None        # the calls it waits for; None: every call it made


class NestWaitFile(NamedTuple):
    """A running task's ``wait_on_file`` (or ``taskflow.open``): the last version of each
    path (absolute) is put at that path once its writer ended; answered as ``NestWait``
    is (one entry per path: its error, if any)."""

    parent: int
    wait: int
    paths: list[str]


class NestResumed(NamedTuple):
    """The parent's wait was answered and it runs again: it holds its slot again."""

    parent: int


class NestRelease(NamedTuple):
    """The parent dropped every handle of these calls: the master need not keep their
    values for it (a call that has not ended, or failed, is kept until a barrier saw it)."""

    parent: int
    seqs: list[int]


class NestAnswer(NamedTuple):
    """What a waiting parent waited for: one entry per (call, output)."""

    parent: int
    wait: int
    values: list[tuple[int, int, Payload | None, bytes | None]]
    #       (seq, output index, the value, or the child's error pickled: TaskError)


class StreamPublish(NamedTuple):
    """A running task published items to a stream (wire.streams): kept by the master."""

    parent: int                   # the publishing task's id
    stream: str                   # the stream's id
    items: list[bytes]            # each item pickled (a FileStream's: its path, pickled)


class StreamClose(NamedTuple):
    """A running task closed its part of a stream (``close()``)."""

    parent: int
    stream: str


class StreamPoll(NamedTuple):
    """A running task polls a stream (or asks ``is_closed``): a wait, as ``NestWait`` is
    (its slot is lent until ``NestResumed``); answered by ``StreamItems``."""

    parent: int
    wait: int                     # the wait's number in its executor (the answer names it)
    stream: str
    group: str                    # the consumer group polling
    timeout: float | None         # seconds to wait for an item; None: until one or the close
    take: bool                    # False: only whether it is closed and drained (is_closed)


class StreamItems(NamedTuple):
    """The master's answer to a ``StreamPoll``."""

    parent: int
    wait: int
    items: list[bytes]
    closed: bool                  # the stream is closed and nothing is left for the group
    error: bytes | None           # the error it was closed with (pickled), if any


Nest = Union[NestCall, NestHere, NestHereEnd, NestWait, NestWaitFile, NestResumed, NestRelease,
             StreamPublish, StreamClose, StreamPoll]
Answer = Union[NestAnswer, StreamItems]


ExecBatch = tuple[list[TaskWire], dict[int, Payload]]      # TASKS to an executor
ExecResults = tuple[list[ResultWire], list[TaskLines]]     # RESULTS from an executor

_task_view = functools.partial(tuple.__new__, TaskMsg)


def tasks(batch: list[TaskWire]) -> list[TaskMsg]:
    """The batch's tasks, with their fields by name (no copy of the fields)."""
    return list(map(_task_view, batch))


def wire_tasks(views: list[TaskMsg]) -> list[TaskWire]:
    """Plain tuples again, to pickle at plain-tuple speed (see the module docstring)."""
    return list(map(tuple, views))


if TYPE_CHECKING:   # mypy checks that each wire tuple and its named tuple agree
    def _same_task(w: TaskWire) -> TaskMsg:
        return TaskMsg(*w)

    def _same_result(w: ResultWire) -> ResultMsg:
        return ResultMsg(*w)

    def _same_ref(w: RefWire) -> Ref:
        return Ref(*w)
