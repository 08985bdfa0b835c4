"""The master's state of one run, and what its rules may ask of the node I/O.

:class:`RunState` is what the outcome rules (:mod:`.rules.outcomes`), lineage
(:mod:`.rules.lineage`) and the scheduler's users change: the ready queue and the
nodes (:class:`~.scheduling.scheduler.Scheduler`), the event bus, the task counts
(:class:`~.tally.Tally`), the failures, and what the run derives per task function
(``spec_runs``: :mod:`.specruns`). Everything that reaches a node goes through its :class:`Comm`,
which the dispatcher implements; tests drive the rules with a fake one and no
processes (as HyperQueue's scheduler core takes its ``Comm`` explicitly).
:class:`~.runtime.Runtime` is a :class:`RunState` with a life cycle: nodes,
the loop thread, the journal and the waiting API.
"""
from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Protocol, Union

from ..graph import task as T
from .bus import EventBus
from .scheduling.scheduler import Scheduler
from .specruns import SpecRuns
from .tally import Tally

if TYPE_CHECKING:
    from ..graph.keys import Keys
    from ..errors import TaskError
    from ..future import Future
    from ..graph.task import Task
    from ..providers.base import Provider
    from ..providers.handle import NodeHandle
    from .nesting import Nesting
    from .streams import Streams

Waiter = Union[threading.Event, "Task"]    # who waits for a value being fetched

# Times a failed call with on_failure=RETRY runs again unless told (@task(retries=N),
# Runtime(retries=N), taskflow run --retries N): none, as in Dask, Parsl, Nextflow and
# Snakemake. A worker that dies under a task is no failure of the task: --crash-limit.
RETRIES = 0

GROUP_FORGET = 4096     # tasks in a group before it first forgets those that ended well


class Comm(Protocol):
    """What the rules ask of the node I/O (the dispatcher; a fake in unit tests).

    Every method is called with the run's lock held; nothing is sent before
    the loop's next round.
    """

    def push_data(self, node: NodeHandle, fut: Future) -> None:
        """Send ``fut``'s value to ``node``, where a chained task waits for it."""

    def cancel_on(self, node: NodeHandle, task_id: int) -> None:
        """Take task ``task_id`` back from ``node`` (it is not to run there)."""

    def watch_remote(self, fut: Future, node: str | None = None) -> None:
        """``fut``'s value now lives on a node (its holders, and ``node`` when given): drop
        it there once ``fut`` is garbage; call whenever a node gets it."""

    def request_fetch(self, fut: Future, waiter: Waiter) -> None:
        """Bring ``fut``'s value from a node holding it; ``waiter`` resumes after."""

    def drop_fetches(self) -> list[Waiter]:
        """Give up every fetch in flight (no node can answer); return who waited."""

    def wake(self) -> None:
        """Make the loop run a round soon."""


class RunState:
    """One run's state on the master, guarded by :attr:`lock`."""

    def __init__(self, *, retries: int = RETRIES, placement: str = "locality",
                 comm: Comm | None = None, providers: list[Provider] | None = None,
                 crash_limit: int = 3) -> None:
        self.lock = threading.Lock()
        self.stream_lock = threading.Lock()     # (making the stream registry once)
        self.retries = retries
        # workers that may die running one task (its executor, its node) before the task is
        # failed; not counted against its retries (Dask's allowed-failures, HyperQueue's
        # --crash-limit)
        self.crash_limit = crash_limit
        self.spec_runs = SpecRuns()        # per task function: durations, its pickle
        self.scheduler = Scheduler(placement, self.spec_runs)
        self.bus = EventBus()
        self.bus.rows_lock = self.lock
        self.comm: Comm = comm if comm is not None else _NoComm()
        self.providers: list[Provider] = providers or []
        self.failures: list[TaskError] = []
        self.said_large: set[str] = set()   # functions whose large values were said (outcomes)
        # a failure the program caught fails the run all the same (PyCOMPSs's rule, which
        # runcompss keeps: there a failed task ends the application)
        self.caught_failures_fail = False
        self.idle_waiters: list[threading.Event] = []
        self.tally = Tally()               # the task counts, changed through its methods
        self.interrupting = False          # the run is being interrupted: nothing new starts
        self.dead: str | None = None       # why no task can run any more (no nodes left)
        self.end_reason: str | None = None  # why the run failed besides its tasks (verdict.py)
        self.interrupted: str | None = None     # why the run was interrupted (SIGINT, ...)
        self.groups: dict[str, list[Task]] = {}          # task groups: their tasks so far
        self._group_marks: dict[str, int] = {}           # group -> its size at the next forget
        # group -> (error recorded as a failure, the GroupAbort a task raised): raised in the
        # program at the group's barrier (runtime.rules.cancel)
        self.group_aborts: dict[str, tuple[TaskError, BaseException]] = {}
        self.logs_hint = ""     # with a journal: "taskflow logs RUN {task} [--run-dir DIR]"
        self.tids: Iterator[int] = itertools.count(1)      # task ids
        self.dids: Iterator[int] = itertools.count(1)      # data (version) ids
        # the largest task any node can ever take (capacity_changed): a call asking more is
        # refused at once
        self.max_cus = 0
        self.max_mem = 0.0
        self.nesting: Nesting | None = None     # tasks' calls of tasks (from the first one)
        self.streams: Streams | None = None     # the run's streams (from the first one)
        # a resumable run's keys (graph.keys; its Recovery sets them): an ended call whose
        # key waited keeps what makes it (rules.ending.task_ended)
        self.keys: Keys | None = None

    def nested(self) -> Nesting:
        """The run's nested calls (runtime.nesting), started at a task's first call."""
        nesting = self.nesting
        if nesting is None:
            from .nesting import Nesting
            nesting = self.nesting = Nesting(self)
        return nesting

    def stream_registry(self) -> Streams:
        """The run's streams (runtime.streams), made at the first use of one."""
        streams = self.streams
        if streams is None:
            with self.stream_lock:
                streams = self.streams
                if streams is None:
                    import os
                    import tempfile

                    from .streams import Streams
                    self.nested()           # (its answers carry the polls' answers)
                    base = getattr(self, "data_dir", None) or tempfile.gettempdir()
                    # a resumable run keeps every item in its directory, a resumed one
                    # replays the earlier run's closed streams (runtime.streamreplay)
                    rec = getattr(self, "recovery", None)
                    kept = earlier = None
                    if rec is not None and rec.keys is not None:
                        kept = os.path.join(rec.run_dir, "streams")
                        if rec.resumer is not None and rec.resume_from is not None:
                            earlier = (rec.resume_from,
                                       os.path.join(rec.resume_from, "streams"))
                    streams = self.streams = Streams(self, os.path.join(base, "streams"),
                                                     kept, earlier)
        return streams

    def program_ended(self) -> None:
        """The program is over (``stop``): the streams it produced close for its part."""
        if self.streams is not None:
            self.streams.program_ended()

    def stop_helpers(self) -> None:
        """The run ends: the threads of nested calls and of streams stop."""
        if self.nesting is not None:
            self.nesting.stop()
        if self.streams is not None:
            self.streams.stop()

    def stream_known(self, handle: Any) -> None:
        """A stream given to a call (graph.builder), before the task's copy of it is made:
        the program's stream without an alias is numbered now (a resumed run's is the same)."""
        self.stream_registry().known(handle)

    def stream_attach(self, task: Task, uses: list[tuple[Any, bool, str]]) -> None:
        """``task`` was called with streams (graph.builder): (handle, produces, parameter)."""
        self.stream_registry().attach(task, uses)

    def join_group(self, name: str, task: Task) -> None:
        """``task`` is one of group ``name``'s. A group forgets its tasks that ended well
        (its barrier waits for the others and raises their failures) each time it has
        doubled since it last did, so a group of ten million tasks holds the tasks in
        flight and those that failed, not every task done (the journal has them all)."""
        tasks = self.groups[name]
        tasks.append(task)
        if len(tasks) >= self._group_marks.get(name, GROUP_FORGET):
            done = T.DONE
            kept = [t for t in tasks if t.state != done]
            self.groups[name] = kept
            self._group_marks[name] = max(GROUP_FORGET, 2 * len(kept))

    def unreported_failures(self, tasks: Iterable[Task] | None = None) -> list[TaskError]:
        """Failures the program has not seen yet (group aborts wait for their group's
        barrier instead: :func:`taskflow.api.sync.barrier_group`)."""
        with self.lock:
            if tasks is None:
                errs = [e for e in self.failures if not e.reported and e.kind != "abort"]
            else:
                ids = {t.id for t in tasks}
                errs = [e for e in self.failures if not e.reported and e.task_id in ids
                        and e.kind != "abort"]
            for e in errs:
                e.seen()
        return errs

    @property
    def failed(self) -> bool:
        """A task failed and the program did not meet the failure, or the run itself
        failed (:meth:`fail_run`)."""
        return bool(self.unhandled()) or self.end_reason is not None

    def unhandled(self) -> list[TaskError]:
        """The task failures that fail the run: those the program never met (a failure
        ``wait_on`` raised in it is the program's to handle: ``errors.TaskError.met``),
        or every one under PyCOMPSs's rule (:attr:`caught_failures_fail`)."""
        if self.caught_failures_fail:
            return list(self.failures)
        return [e for e in self.failures if not e.handled]

    def handled_note(self) -> str | None:
        """"2 tasks failed (handled by the script)", or None."""
        if self.caught_failures_fail:
            return None
        n = sum(1 for e in self.failures if e.handled and e.task_id)
        if not n:
            return None
        return f"{n} task{'s' if n != 1 else ''} failed (handled by the script)"

    def nodes_coming(self) -> bool:
        """An elastic provider (Slurm pilots) will bring more nodes."""
        return any(p.nodes_coming() for p in self.providers)

    def logs_command(self, task_id: int) -> str | None:
        """The command that shows a task's output (None without a journal)."""
        return self.logs_hint.format(task=task_id) if self.logs_hint else None

    def fail_run(self, reason: str) -> None:
        """The run fails for ``reason`` (one line), whatever its tasks did; the first
        reason given is the one the journal keeps."""
        if self.end_reason is None:
            self.end_reason = reason

    def script_ended(self, exc: BaseException) -> None:
        """The program ended with ``exc``: a failed run unless it is ``sys.exit(0)``;
        an interrupt (KeyboardInterrupt) is an interrupted one."""
        if isinstance(exc, KeyboardInterrupt):
            self.interrupted = self.interrupted or "KeyboardInterrupt"
            return
        from .verdict import script_reason
        reason = script_reason(exc)
        if reason is not None:
            self.fail_run(reason)

    def end_state(self) -> tuple[str, str | None]:
        """(state, reason) of the run as it ends: interrupted, failed or finished."""
        if self.interrupted:
            return "interrupted", self.interrupted
        if self.end_reason is not None:
            return "failed", self.end_reason
        unhandled = self.unhandled()
        if unhandled:
            from .verdict import tasks_reason
            return "failed", tasks_reason(unhandled)
        return "finished", self.handled_note()

    def add_failure(self, err: TaskError) -> None:
        """``err`` fails the run: reported at its end unless the program sees it first."""
        err.report_at_end()
        self.failures.append(err)

    def new_did(self) -> int:
        """The next data id."""
        return next(self.dids)

    def ids_above(self, tids: int, dids: int) -> None:
        """Task and data ids up to these are taken (an earlier run's, on adopted agents):
        the next ones are higher."""
        self.tids = itertools.count(max(tids + 1, next(self.tids)))
        self.dids = itertools.count(max(dids + 1, next(self.dids)))

    def capacity_changed(self) -> None:
        """Nodes came or are leaving: the largest task any node can ever take now."""
        self.max_cus, self.max_mem = self.scheduler.capacity()

    @property
    def nodes(self) -> list[NodeHandle]:
        return self.scheduler.nodes

    def _repr_html_(self) -> str:
        """Jupyter's view of the run: counts, failures, the report command
        (:func:`taskflow.notebook.html.run_card`)."""
        from ..notebook.html import run_card
        run: Any = self         # (a Runtime: RunState is its state)
        return run_card(run)

    def _ipython_display_(self) -> None:
        from ..notebook.html import display_run
        run: Any = self
        display_run(run)


class _NoComm:
    """A run state without nodes (tests of the graph alone): every request is a no-op."""

    def push_data(self, node: Any, fut: Any) -> None: ...
    def cancel_on(self, node: Any, task_id: int) -> None: ...
    def watch_remote(self, fut: Any, node: str | None = None) -> None: ...
    def request_fetch(self, fut: Any, waiter: Any) -> None: ...
    def drop_fetches(self) -> list[Waiter]: return []
    def wake(self) -> None: ...
