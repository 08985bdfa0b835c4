"""The master runtime: graph, scheduler, nodes, and the thread that drives them.

The calling thread records tasks (``submit``) and blocks only where the
program asks for a value. One loop thread owns every node connection: it
reads results, applies them to the graph, asks the scheduler for the next
assignments and sends them in batches. Both threads share one lock; the
loop never holds it while writing to a node.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..errors import RuntimeNotStarted, UsageError
from ..future import FINISHED, AllDone, Future
from ..graph import task as T
from ..graph.builder import Builder
from ..graph.registry import Registry
from ..graph.spec import TaskSpec
from ..graph.task import Task
from ..providers.base import Provider, longest_window
from ..providers.handle import NodeHandle
from ..providers.local import LocalProvider
from ..providers import prestart
from .. import diagnostics
from ..context import private_dir
from ..wire import budget
from ..wire.adoption import ADOPT_GRACE
from ..wire.invocation import Options, limit_memory
from ..events import NodeJoin, NodeNote
from ..journal.root import runs_root
from . import current, gctune, putinplace
from .calltime import CallTimes, cannot_fit, outlasts_every_node
from .loop.dispatch import YIELD_EVERY, Dispatcher
from .loop.hello import hello_config
from .recovery.log import RESUMABLE
from .recovery import recordfail
from .recovery.recovery import Recovery
from .rules import outcomes
from .rules.ending import cancel_task
from .state import RETRIES, RunState

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..journal.writer import JournalWriter
    from ..wire.messages import Payload
    from .rules.outcomes import Callbacks


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.time())


class Runtime(RunState):
    """A running taskflow master.

    ``Runtime(workers=N)`` runs N executor slots on this machine (default: one
    per core); ``nodes=K`` splits them over K local node agents (N >= K; the
    first agents take the remainder), which exercises placement.
    ``providers=[...]`` replaces the local default (SSH, Slurm issues).
    ``memory_budget`` and ``memory_pause`` set every node's memory marks (GB,
    ``"4GiB"`` or ``"60%"`` of the node; ``taskflow.agent.memory``); the
    cluster file may set them per node. ``memory_limit=True`` makes every
    task's ``memory_size`` a limit it may not grow past (``agent.executor.limits``).
    ``io_executors=N`` gives every node N executors for tasks that hold no computing
    unit (PyCOMPSs's ``@IO`` tasks, ``runcompss --io_executors``); ``compss_env`` gives
    every task PyCOMPSs's ``COMPSS_*`` / ``OMP_NUM_THREADS`` variables (``agent.executor.taskenv``)
    and runs a task called inside a task inline, as runcompss does, unless ``compss_nesting``
    (``--agents``: PyCOMPSs's agents submit it as a child task).
    A task failure the program met (``wait_on`` raised it and the program went on) does
    not fail the run; ``caught_failures_fail=True`` makes it (PyCOMPSs's rule, runcompss's).

    Example (a script run with plain ``python``; ``taskflow run`` makes the runtime itself)::

        from taskflow import Runtime, task, wait_on

        @task(returns=int)
        def square(x: int) -> int:
            return x * x

        with Runtime(workers=2, nodes=2, retries=1):      # ends the run on leaving
            print(wait_on([square(i) for i in range(4)]))  # [0, 1, 4, 9]
    """

    def __init__(self, workers: int | None = None, *, nodes: int = 1, retries: int = RETRIES,
                 placement: str = "locality", run_dir: str | None = None,
                 providers: list[Provider] | None = None, echo_logs: bool = True,
                 memory_gb: float | None = None, start_timeout: float = 60.0,
                 journal: bool = True, crash_limit: int = 3, resumable: bool | None = None,
                 resume: str | None = None, resume_check: str = "content",
                 checkpoint: str | None = None,
                 memory_budget: float | str | None = None,
                 memory_pause: float | str | None = None, memory_limit: bool = False,
                 io_executors: int = 0, compss_env: bool = False, compss_nesting: bool = False,
                 adopt_grace: float = ADOPT_GRACE, caught_failures_fail: bool = False) -> None:
        self.workers = (os.cpu_count() or 1) if workers is None else workers
        if isinstance(io_executors, bool) or not isinstance(io_executors, int) \
                or io_executors < 0:
            raise UsageError(f"io_executors={io_executors!r}: give how many I/O executors "
                             f"each node runs (an int >= 0)")
        self.io_executors = io_executors
        self.compss_env = compss_env
        self.compss_nesting = compss_nesting
        if isinstance(crash_limit, bool) or not isinstance(crash_limit, int) or crash_limit < 0:
            raise UsageError(f"crash_limit={crash_limit!r}: give how many workers may die "
                             f"running one task (an int >= 0)")
        for what, amount in (("memory_budget", memory_budget), ("memory_pause", memory_pause)):
            try:
                budget.check(amount, what)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        self.memory_budget = memory_budget      # per node; wire.budget (None: 60% of it)
        self.memory_pause = memory_pause        # None: 4/3 of the budget
        self.memory_limit = bool(memory_limit)  # every memory_size is a limit (agent.executor.limits)
        super().__init__(retries=retries, placement=placement, crash_limit=crash_limit,
                         providers=providers if
                         providers is not None else [
                             LocalProvider(self.workers, nodes=nodes, memory_gb=memory_gb)])
        given = os.environ.get("TASKFLOW_RUN_ID", "")      # a nested run (@workflow) is named
        self.run_id = given if given.replace("-", "").isalnum() and len(given) < 100 else \
            time.strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()
        self.run_dir = os.path.join(runs_root(run_dir), self.run_id)
        self.data_dir = os.path.join(self.run_dir, "data")
        self.start_timeout = start_timeout
        self.echo_logs = echo_logs
        self.journal_on = journal   # SQLite journal in run_dir (taskflow.journal)
        self.journal: JournalWriter | None = None
        self.embedded = False       # started by the first task call (runtime.embedded)
        # Resumable runs (by default, with a journal): finished calls are logged before they
        # are acted on; a resumed run restores the earlier run's; adoptable ones' agents
        # outlive a lost master (runtime/recovery/)
        if resumable is None:
            resumable = RESUMABLE and journal
        try:
            self.recovery = Recovery(
                self.run_dir, self.run_id, resumable=resumable or resume is not None or
                checkpoint is not None, resume_from=resume, resume_check=resume_check,
                checkpoint=checkpoint, adopt_grace=adopt_grace)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.caught_failures_fail = caught_failures_fail   # (RunState.unhandled)
        self.calltimes = CallTimes()            # what calls decide one by one (calltime.py)
        self.submit_lock = threading.Lock()
        self._since_yield = 0       # calls since the submitter last let the loop thread run
        self.registry = Registry(self.data_dir)
        self.builder = Builder(self)
        self.dispatcher = Dispatcher(self, self.recovery, echo_logs=echo_logs, run_dir=self.run_dir)
        self.comm = self.dispatcher
        self.group_stack: list[str] = []
        self.exit_code = 0          # stop(code): the status a launcher exits with
        self.kept_versions = False  # a file could not be put in place: its version stays
        self.started = False
        self.stopped = False
        self.t_start = 0.0
        self._thread: threading.Thread | None = None
        self._ending = threading.RLock()      # held while the run ends (_shut_down)

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> "Runtime":
        if self.started:
            return self
        private_dir(self.data_dir)      # and the run directory: user-only (context.py)
        # before the journal exists: the run's lock (`taskflow clean` keeps a run whose lock
        # it cannot take), the resume log, a resumed run's records
        recovery = self.recovery
        recovery.open(self)
        diagnostics.setup()
        self.t_start = time.time()
        config = hello_config(self.data_dir, self.run_id, self.memory_budget, self.memory_pause,
                              self.io_executors, self.compss_env, self.compss_nesting,
                              recovery.resumer is not None)     # (after recovery.open)
        nodes = []
        try:
            recovery.before_nodes(self.providers)
            for p in self.providers:   # first: agents load their interpreters meanwhile
                p.launch()
            prestart.discard()      # an agent started early that no local provider took
            self._open_journal()   # its writer process starts while the nodes do
            recovery.keep_secret(config)
            for p in self.providers:
                nodes.extend(p.start(config, self.start_timeout, adoptable=recovery.adoptable))
            self._journal_ready()
        except BaseException:
            for p in self.providers:
                p.stop()
            if self.journal is not None:    # the journal keeps the run that did not start
                self.bus.close()
                self.journal.close(time.time(), "failed", "the runtime did not start",
                                   self.counts())
            recovery.close()
            raise
        recovery.nodes_started(self, nodes, self.providers)
        self.scheduler.nodes = nodes
        if any(n.walltime_end is not None for n in nodes):
            self.scheduler.walltimes = True      # check job ends before placing (Slurm)
        self.scheduler.longest = longest_window(self.providers)
        self.capacity_changed()
        self.started = True
        gctune.tune()
        self.dispatcher.open(nodes)
        self._thread = threading.Thread(target=self.dispatcher.loop, name="taskflow-loop", daemon=True)
        self._thread.start()
        if self.bus.active:
            for n in nodes:
                self.bus.emit(NodeJoin("node_join", time.time(), 0, "", n.name,
                                       dict(n.info, slots=n.slots)))
        for p in self.providers:    # elastic providers (Slurm pilots) add nodes later
            p.attach(self)
        current.set_current(self)
        return self

    def start_embedded(self) -> None:
        """Start as the runtime a plain script's first task call starts (:mod:`.embedded`)."""
        self.embedded = True
        self.start()

    def keep_records(self) -> None:
        """Every finished task's record in the resume log now (``compss_snapshot``)."""
        self.recovery.keep_records(self)

    def _open_journal(self) -> None:
        """Start the journal before the nodes (``recordfail.open_journal``);
        :meth:`_journal_ready` waits for it once the nodes are up."""
        if self.journal_on and self.journal is None:
            self.journal = recordfail.open_journal(self, self.run_dir, self.run_id, self.t_start,
                                                   self.workers)
            root = os.path.dirname(self.run_dir)
            self.logs_hint = f"taskflow logs {self.run_id} {{task}}" + (
                "" if root == runs_root() else f" --run-dir {root}")

    def _journal_ready(self) -> None:
        """The journal is open, or the run does not start (with no journal to close)."""
        journal, self.journal = self.journal, None
        if journal is not None:
            recordfail.journal_ready(journal, self.bus)
            self.journal = journal

    def stop(self, wait: bool = True, code: int = 0) -> None:
        """Wait for every task (unless ``wait=False``), put files in place, shut down.

        A ``code`` other than 0 cancels every running and waiting task instead of
        waiting for them, fails the run, and ``taskflow run`` exits with that status.
        """
        if code:
            why = f"the program stopped the run with code {code}"
            self.cancel_all(why)
            self.exit_code = code
            self.fail_run(why)
        if not self.started or self.stopped:
            return
        waited = False
        try:
            idle = wait and self._thread is not None and self._thread.is_alive()
            if idle:
                self.program_ended()        # (streams it held open close: runtime.streams)
                self._wait_idle(None)
            waited = True
        finally:
            with self._ending:      # (one thread ends the run: a signal's stop may come
                try:                # while the program's own stop goes on, cli/signals.py)
                    if waited and not self.stopped:
                        self.put_in_place(idle)
                finally:
                    self._end_run()

    def wait_all(self, timeout: float | None = None) -> bool:
        """Block until no task is left (False on timeout); interruptible (SIGINT)."""
        return self._wait_idle(timeout)

    def interrupt(self, why: str, grace: float = 10.0) -> None:
        """Stop the run cleanly: nothing new starts; running tasks are stopped (SIGINT to
        Python tasks, SIGTERM to programs) and killed after ``grace`` seconds; the outputs
        of finished tasks are put in place; the journal says ``interrupted``."""
        if not self.started or self.stopped:
            return
        with self.lock:
            self.interrupted = why
            self.interrupting = True
            self.dispatcher.interrupt(grace)
        deadline = time.time() + grace + 5.0
        while time.time() < deadline and not self.stopped:     # (killed meanwhile: over)
            with self.lock:
                if not any(n.inflight for n in self.nodes if n.alive):
                    break
            time.sleep(0.05)
        self.stop(wait=False)

    def kill(self, why: str) -> None:
        """End at once (a second signal): nodes killed, the journal closed as interrupted."""
        if not self.started or self.stopped:
            return
        self.interrupted = self.interrupted or why
        self.interrupting = True
        self._shut_down()

    def _shut_down(self) -> None:
        with self._ending:      # (a second signal's kill while a stop ends the run: one
            self._end_run()     # thread does it, the other waits for it: cli/signals.py)

    def _end_run(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        self.dispatcher.close()
        if self._thread is not None:
            self._thread.join(10)
        self.stop_helpers()
        self.recovery.at_end(self.nodes, self.providers)
        for p in self.providers:
            p.stop()
        self.bus.close()
        if self.journal is not None:
            self.journal.close(time.time(), *self.end_state(), self.counts())
            if self.journal.failed is not None and self.end_reason is None:
                log.error("%s: the run's end is not recorded", self.journal.failed)
                self.fail_run(self.journal.failed)
        self.recovery.close()
        if not self.interrupted and not self.recovery.resumable and not self.kept_versions:
            putinplace.remove_data(self.data_dir, self.run_dir)  # (else: kept for a resume,
            #                                                  or not put in place)
        gctune.restore()
        current.clear_current(self)

    # -- what elastic providers see (providers.base.NodeSink) -------------------
    def add_node(self, node: NodeHandle) -> None:
        """Join a started node (a handshaken NodeHandle) to the running runtime; any thread."""
        if not self.started or self.stopped:
            node.close()
            return
        self.dispatcher.add_node(node)

    def work_waiting(self) -> bool:
        return bool(self.scheduler.ready)

    def node_event(self, kind: str, node: str, extra: Any) -> None:
        if self.bus.active:
            self.bus.emit(NodeNote(kind, time.time(), 0, "", node, extra))

    def no_more_nodes(self, reason: str) -> None:
        """An elastic provider gave up: with no node left to run a task, all fail (``reason``)."""
        cbs: Callbacks = []
        with self.lock:
            if self.started and not self.stopped and not self.nodes_coming():
                outcomes.no_more_nodes(self, reason, cbs)
        for fn, fut in cbs:
            fn(fut)
        self.dispatcher.wake()

    def __enter__(self) -> "Runtime":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        if exc[1] is not None:          # the program raised in the with block
            self.script_ended(exc[1])
        self.stop(wait=exc[0] is None)

    # -- recording tasks -------------------------------------------------------
    def submit(self, spec: TaskSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not self.started or self.stopped:
            raise RuntimeNotStarted(f"task {spec.name} was called but the taskflow runtime is "
                                    f"{'stopped' if self.stopped else 'not started'}")
        opts: Options | None = None
        own = spec.call_time        # the call's constraints and options are its own
        if own:                     # call-time constraints / external programs
            cus, mem, opts = self.calltimes.prepare(self.nodes, self.run_dir, self.run_id, spec,
                                                    args, kwargs)
        else:
            cus, mem = spec.computing_units, spec.memory_size
        if cus > self.max_cus or mem > self.max_mem or not cus:
            cannot_fit(spec, cus, mem, self.max_cus, self.max_mem, self.scheduler.nodes)
        longest = self.scheduler.longest
        if longest is not None:             # every node's job ends: a time_out no job fits
            outlasts_every_node(spec, opts if own else spec.options, longest,
                                self.scheduler.nodes)
        if mem and self.memory_limit and spec.memory_limit is None:
            # Runtime(memory_limit=True): memory_size is a limit
            opts = limit_memory(opts if own else spec.options, float(mem))
            own = True
        made = self.builder.plain(spec, args) if not kwargs else None
        if made is not None:        # scalars only: no builder state, no submit lock
            task, value = made
            if own:
                task.cus, task.mem, task.options = cus, mem, opts
            recovery = self.recovery
            keys = recovery.keys
            if keys is not None:            # resumable: the call's key (graph.keys) ...
                if recovery.resumer is None and task.options is None:
                    # ... computed at its end, if ever needed: only its ordinal now
                    # (Keys.count, inline: every short task comes here)
                    ords = keys.ordinals
                    name = spec.name
                    task.ordinal = n = ords.get(name, 0) + 1
                    ords[name] = n
                else:
                    keys.assign(task)
            self._record(task, ())
        else:
            with self.submit_lock:
                task, deps, value = self.builder.build(spec, args, kwargs)
                if own:
                    task.cus, task.mem, task.options = cus, mem, opts
                keys = self.recovery.keys
                if keys is not None:        # its key, or (a chain's link) its ordinal now
                    keys.made(task)
                self._record(task, deps)
        if self.dead:
            with self.lock:
                outcomes.fail_everything(self, RuntimeError(self.dead), [])
        self._since_yield += 1
        if self._since_yield >= YIELD_EVERY:
            self._since_yield = 0
            self.dispatcher.let_run()
            bus = self.bus
            if bus.active and bus.backlog() >= bus.backlog_limit:   # the journal is behind:
                bus.wait_backlog(bus.backlog_limit // 2)    # its rows hold task records
        return value

    def _record(self, task: Task, deps: Iterable[Future]) -> None:
        """The new task joins the graph: its groups, its inputs' consumers, the ready queue."""
        aborted = None
        nest = self.nesting     # (runtime.nesting: loaded at a task's first call)
        if nest is not None and nest.calling() is not None:
            nest.adopt(task)                # a running task's call: its child
        elif self.group_stack:
            task.group = tuple(self.group_stack)
            for g in self.group_stack:
                self.join_group(g, task)
                if g in self.group_aborts:
                    aborted = g
        cancel_by = None
        with self.lock:
            self.tally.submitted_one()
            if self.recovery.resumer is not None and self.recovery.restore(self, task, deps):
                return
            for d in deps:
                if d._state is FINISHED:
                    if d._exception is not None or d._cancel_successors:
                        cancel_by = d
                    continue
                d.add_consumer(task)
                task.npending += 1
            if self.bus.active:     # the task itself: the bus makes the row later
                self.bus.sub_rows.append(
                    (task, [i for i in (d.producer_id() for d in deps) if i])
                    if deps else task)
            if aborted is not None:       # a task of the group raised GroupAbort already
                from .rules.cancel import cancel_tasks
                cbs: Callbacks = []
                cancel_tasks(self, [task], f"its task group {aborted!r} was aborted", cbs)
            elif cancel_by is not None:
                cbs = []
                err = cancel_by._exception
                cancel_task(self, task, cancel_by._producer or "an earlier task", err, cbs)
            elif task.npending == 0 and (nest is None or not nest.runs_here(task)):
                task.state = T.READY
                self.scheduler.ready.push(task)
                if not self.dispatcher._wake_pending:
                    self.dispatcher.wake()

    # -- waiting ---------------------------------------------------------------
    def wait_futures(self, futs: Iterable[Future], timeout: float | None = None) -> bool:
        """Block until every future in ``futs`` is finished (False on timeout).

        Results come back roughly in submission order, so the first round
        waits on the last pending future only: one wake-up, and the loop
        thread does no per-future waiter work for the thousands before it.
        What is still pending after that gets a counting waiter each.
        """
        deadline = None if timeout is None else time.time() + timeout
        with self.lock:
            pending = [f for f in futs if f._state is not FINISHED]
            if not pending:
                return True
            self.recovery.first_wait(self)      # kept tasks no call claimed: cancelled
            if len(pending) > 1:
                last = AllDone(1)
                pending[-1].add_waiter(last)
        if len(pending) > 1 and not self._block(last.event, _left(deadline)):
            return False
        with self.lock:
            pending = [f for f in pending if f._state is not FINISHED]
            if not pending:
                return True
            w = AllDone(len(pending))
            for f in pending:
                f.add_waiter(w)
        return self._block(w.event, _left(deadline))

    def _wait_idle(self, timeout: float | None) -> bool:
        with self.lock:     # (calls that arrived with their parent's result: not made yet)
            if self.tally.active == 0 and (self.nesting is None or not self.nesting.calls):
                return True
            ev = threading.Event()
            self.idle_waiters.append(ev)
        return self._block(ev, timeout, value=False)

    def _block(self, ev: threading.Event, timeout: float | None, value: bool = True) -> bool:
        """Wait for ``ev``. A run ended meanwhile by another thread (a signal's stop, which
        the script may have caught: cli/signals.py) sets nothing any more: a wait for a
        ``value`` raises RuntimeNotStarted then (never a hang), one for idleness returns."""
        deadline = None if timeout is None else time.time() + timeout
        while True:
            step = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.time()))
            if ev.wait(step):
                return True
            if self.dispatcher.crashed:
                raise RuntimeError(f"the taskflow runtime loop crashed: {self.dispatcher.crashed}")
            if self.stopped and not ev.is_set():
                if not value:
                    return True
                how = f"was interrupted ({self.interrupted})" if self.interrupted \
                    else "has stopped"
                raise RuntimeNotStarted(f"taskflow run {self.run_id} {how}: the value waited "
                                        f"for will not be made")
            if deadline is not None and time.time() >= deadline:
                return False

    def fetch_payload(self, fut: Future) -> Payload:
        """Bring a value that stayed on a node to the master."""
        if fut._payload is not None:
            return fut._payload
        if not fut._holders and fut._lineage is None:
            raise RuntimeError(f"the value of {fut!r} was lost with the node that held it")
        for _ in range(10):     # a lost holder makes lineage recompute it, then fetch again
            ev = threading.Event()
            with self.lock:
                if fut._payload is not None:
                    break
                self.dispatcher.request_fetch(fut, ev)
            self._block(ev, None)
            if fut._payload is not None:
                break
        if fut._payload is None:
            raise RuntimeError(f"the value of {fut!r} could not be fetched: its node was lost")
        return fut._payload

    def prefetch(self, futs: list[Future]) -> None:
        """Ask for the values of ``futs`` left on their nodes, not waiting for them."""
        with self.lock:
            self.dispatcher.fetches.ahead(futs)

    def take_payload(self, fut: Future) -> tuple[Payload, bool]:
        """The payload for ``wait_on``; let go of when a node holds it too (and the resume log)."""
        payload = fut._payload if fut._payload is not None else self.fetch_payload(fut)
        if fut._holders and type(fut._key) is Task:     # its record waits (graph.keys)
            self.bus.flush()
        with self.lock:
            if fut._holders and fut._payload is not None:
                fut.drop_payload()
                return payload, True
        return payload, False

    def add_done_callback(self, fut: Future, fn: Callable[[Future], Any]) -> bool:
        with self.lock:
            if fut._state is FINISHED:
                return False
            fut._done_callbacks.append(fn)
            return True

    def cancel_all(self, why: str) -> int:
        """Cancel every task that has not ended (running programs get SIGTERM)."""
        from .rules.cancel import cancel_all
        cbs: Callbacks = []
        with self.lock:
            n = cancel_all(self, why, cbs)
        for fn, fut in cbs:
            fn(fut)
        return n

    # -- files -------------------------------------------------------------------
    def put_in_place(self, idle: bool = False) -> None:
        """Every file's last version at its path (``idle``: no task runs or waits, so
        versions are moved there, not copied); see :mod:`.putinplace`. A version that cannot
        be is kept in the run's store and fails the run."""
        kept = putinplace.materialize_all(self.registry, self.recovery.log,
                                          interrupted=self.interrupted is not None, idle=idle)
        for why in kept:
            self.fail_run(why)
        if kept:
            self.kept_versions = True

    # -- information (console.view.RunView) ---------------------------------------------
    @property
    def resumable(self) -> bool:
        """It keeps a resume log (``taskflow run --resume`` can continue it)."""
        return self.recovery.resumable

    def node_returns(self) -> str:
        """Nodes it lost that came back (``h1 back after 23 s: ...``), or ""."""
        return self.recovery.comebacks.summary()

    def counts(self) -> dict[str, int]:
        return self.tally.counts(sum(len(n.inflight) for n in self.nodes))
