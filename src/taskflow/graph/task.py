"""One recorded task call: what it reads, what it writes, where it is."""
from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, Sequence


if TYPE_CHECKING:
    from ..errors import TaskError
    from ..future import Future
    from ..wire.messages import ArgPath, OutKind, RefKind
    from .spec import TaskSpec

    # An argument resolved at dispatch: (argument path, messages.REF_* kind, what it reads:
    # a Future, (pickle bytes, [Future]) or the (previous, new) versions of a file).
    TaskRef = tuple[ArgPath, RefKind, Any]

# Task states (the journal stores these names).
SUBMITTED = "SUBMITTED"
READY = "READY"
DISPATCHED = "DISPATCHED"
RUNNING = "RUNNING"
DONE = "DONE"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
INTERRUPTED = "INTERRUPTED"     # the run was interrupted while it ran
FINAL_STATES = frozenset({DONE, FAILED, CANCELLED, INTERRUPTED})


class NodeRef(Protocol):
    """The node a task was sent to, as the graph knows it: by its name (the runtime's
    :class:`~taskflow.providers.handle.NodeHandle`; the graph does not import the master's
    node side)."""

    @property
    def name(self) -> str: ...


class Inout(NamedTuple):
    """A value a task gives back besides its return values: an object or file it writes."""

    path: ArgPath               # where the argument is (see taskflow.wire.argpath)
    kind: OutKind               # messages.OUT_OBJECT, OUT_FILE or OUT_DIR
    pname: str                  # the parameter's name (error messages)
    version: Future             # the new version it makes


class Task:
    """A node of the graph.

    ``argv`` is the positional argument tuple as the worker will see it, with
    placeholders where ``refs`` put values resolved at dispatch time; each ref
    is ``(path, kind, data)`` with ``path`` a tuple of indices (first item an
    int for positional arguments or a str for keyword arguments).
    """

    __slots__ = (
        "id", "spec", "argv", "kwargs", "refs", "npending", "outputs", "inouts",
        "state", "node", "attempts", "crashes", "group", "key", "key_parts", "ordinal",
        "t_submit", "t_dispatch", "t_start",
        "t_end", "error", "reads", "prio", "seq", "cus", "mem", "options", "excluded",
        "lock_item", "nest", "__weakref__")

    def __init__(self, tid: int, spec: TaskSpec, argv: tuple[Any, ...] | list[Any] | None,
                 kwargs: dict[str, Any] | None, refs: list[TaskRef] | None,
                 outputs: Sequence[Future], inouts: list[Inout] | None, reads: list[Future] | None,
                 t_submit: float) -> None:
        self.id = tid
        self.spec = spec
        self.argv = argv
        self.kwargs = kwargs
        self.refs = refs
        self.npending = 0
        self.outputs: Sequence[Future] = outputs    # () once it ended well (outcomes.task_done)
        self.inouts = inouts
        self.reads = reads          # data versions read (for lineage and GC)
        self.state = SUBMITTED
        self.node: NodeRef | None = None
        self.attempts = 0
        self.crashes = 0            # workers (executors, nodes) that died running it
        self.key: bytes | None = None           # what can change its result (graph.keys)
        self.key_parts: Any = None              # the key's pieces (--explain)
        self.ordinal = 0                        # the ordinal-th call of its function
        self.group: tuple[str, ...] | None = None    # task groups, outermost first
        self.t_submit = t_submit
        self.t_dispatch = 0.0
        self.t_start = 0.0
        self.t_end = 0.0
        self.error: TaskError | None = None
        self.prio = spec.rank + 1 if reads else spec.rank    # readers first: readyqueue.py
        self.seq = tid
        self.cus = spec.computing_units
        self.mem = spec.memory_size
        self.options = spec.options
        self.excluded: set[str] | None = None   # node names not to use again (retries)
        self.lock_item = None       # commutative group this task must lock
        self.nest: Any = None       # it called tasks while it ran (graph.nestrecord.NestRecord)

    @property
    def name(self) -> str:
        return self.spec.name

    def all_outputs(self) -> list[Future]:
        outs = list(self.outputs)
        if self.inouts:
            outs.extend(e.version for e in self.inouts)
        return outs

    def __lt__(self, other: "Task") -> bool:  # heap order: priority (and rank) first, then FIFO
        if self.prio != other.prio:
            return self.prio > other.prio
        return self.seq < other.seq

    def __repr__(self) -> str:
        return f"<Task {self.id} {self.spec.name} {self.state}>"


def exit_code(task: Task) -> int | None:
    """The exit code an external program's task returned, for the journal.

    A program task (``@binary``, ``@ompss``, ``@mpi`` of a binary) that ended
    well returns its program's exit code as its value; None for every other
    task, and where the value is not at hand. (A task that failed carries its
    code in its error: :func:`error_exit_code`.)
    """
    spec = task.spec
    program = spec.program
    if spec.invoker not in ("binary", "ompss", "mpi") or not task.outputs:
        return None
    from .decl import MpiDecl       # (a program task's: its decorator loaded it)
    if isinstance(program, MpiDecl) and not program.binary:
        return None
    payload = task.outputs[0]._payload
    try:
        value = pickle.loads(payload) if type(payload) is bytes else None
    except Exception:  # noqa: BLE001 - the journal does without
        return None
    return value if type(value) is int else None


def error_exit_code(err: BaseException) -> int | None:
    """The exit code a task's error carries, when a program's failure made it: the
    error's own ``exit_code`` or ``returncode``, or its cause's (``errors.ProgramFailed``)."""
    for e in (err, getattr(err, "__cause__", None)):
        for attr in ("exit_code", "returncode"):
            v = getattr(e, attr, None)
            if isinstance(v, int):
                return v
    return None
