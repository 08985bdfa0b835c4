"""What a run keeps so that it can be resumed, and what it takes back: one record.

A run is *resumable* (by default, with a journal): finished calls are kept in
its resume log before they are acted on (:mod:`.log`), and a resumed run
restores the earlier run's (:mod:`.restore`). It is *adoptable* when, besides,
its agents outlive a lost master (an adopt grace above 0): they keep their
running tasks and results for a resumed master, which *adopts* them
(:mod:`.adopt`), and a node the running master lost whose link comes back
rejoins the same run with what it kept (:mod:`.comeback`). The run directory's
locks (:mod:`.runlock`) are held from the start to the end.

:class:`Recovery` holds all of it for the runtime: the keys, the log, the
restorer, the adoption, the comebacks, the grace and the earlier run, and says
once whether the run is adoptable (:attr:`Recovery.adoptable`). The runtime
calls it at each step of its life cycle; the loop reads it.
"""
from __future__ import annotations

import functools
import logging
import os
from typing import TYPE_CHECKING, Iterable

from ...errors import RecordFailed
from ...graph.keys import Keys
from . import adopt
from .comeback import Comebacks
from .log import LOG_NAME, Chunk, RecordWire, ResumeLog, checkpoint_policy
from .runlock import RunLock

if TYPE_CHECKING:
    from ...future import Future
    from ...graph.task import Task
    from ...providers.base import Provider
    from ...providers.handle import NodeHandle
    from ...wire.messages import Hello
    from ..state import RunState
    from .adopt import Adoption
    from .restore import Resumer

log = logging.getLogger(__name__)


class Recovery:
    """One run's resume log, resume source, adoption and comebacks (see the module)."""

    def __init__(self, run_dir: str, run_id: str, *, resumable: bool, resume_from: str | None,
                 resume_check: str, checkpoint: str | None, adopt_grace: float) -> None:
        """``checkpoint``: a COMPSs checkpoint policy (:func:`.log.checkpoint_policy`);
        raises ValueError when it cannot be read."""
        self.run_dir = run_dir
        self.run_id = run_id
        self.resumable = resumable
        self.resume_from = resume_from      # the earlier run's directory
        self.keys = Keys(resume_check) if resumable else None
        self.checkpoint = checkpoint_policy(checkpoint)   # (tasks, seconds); (0, 0): each
        self.log: ResumeLog | None = None
        self.resumer: Resumer | None = None     # a resumed run: the earlier run's records
        self.adoption: Adoption | None = None   # a resumed run: the tasks its agents kept
        self.comebacks = Comebacks()            # lost nodes' tasks, for when they come back
        self._grace = adopt_grace               # agents outlive a lost master (wire.adoption)
        self._run_lock: RunLock | None = None   # held while the run goes on
        self._source_lock: RunLock | None = None    # the resumed run's, shared
        self._adopt_lock = -1                   # the earlier run's adoption lock (a resume)

    @property
    def adoptable(self) -> bool:
        """The run's agents outlive a lost master, for a resumed one to adopt, and a node
        lost by its link may come back to it: a resumable run with an adopt grace."""
        return self.keys is not None and self._grace > 0

    # -- the run's life cycle ----------------------------------------------------------
    def open(self, state: RunState) -> None:
        """The run starts: its directory's lock held (the earlier run's too, shared: `taskflow
        clean` removes no run in use), the earlier run's records read, the resume log
        opened; the log keeps the plain calls at the bus's deliveries (:mod:`.log`)."""
        self._run_lock = RunLock.hold_for_run(self.run_dir)
        if self.resume_from is not None:
            self._source_lock = RunLock.hold_shared(self.resume_from)
        keys = self.keys
        if keys is None:
            return
        if self.resume_from is not None:     # (.restore: loaded by a resumed run only)
            from .restore import ResumeStore, Resumer, failed_calls
            store = ResumeStore(self.resume_from)
            if store.damaged:
                log.warning("%s", store.damaged)
            self.resumer = Resumer(store, failed_calls(self.resume_from), keys.mode)
        self.log = ResumeLog(os.path.join(self.run_dir, LOG_NAME), *self.checkpoint, keys=keys)
        keys.settle = state.bus.flush
        # a call with inputs may wait for its key (graph.keys.waits) in a run that resumes
        # nothing; in an adoptable one, only if its function's calls are known short (the
        # others' keys go to their nodes: adopt.py; said when the nodes started)
        keys.wait = self.resumer is None
        keys.keep = lambda records: self._keep_now(state, records)
        state.keys = keys
        state.bus.watch_ended(lambda tasks: self._ended_well(state, tasks),
                              at_once=ResumeLog.at_once)

    def before_nodes(self, providers: list[Provider]) -> None:
        """Before the providers start: a resumed run holds the earlier run's adoption lock
        and its providers look for the earlier run's agents."""
        if self.resume_from is not None:
            self._adopt_lock = adopt.before_start(self.resume_from, providers)

    def keep_secret(self, config: Hello) -> None:
        """After the journal opened: an adoptable run keeps its secret, given to its agents
        in ``config``; when it cannot (a full disk) the run is not adoptable (said once)."""
        if self.adoptable and not adopt.keep_secret(self.run_dir, self.run_id, self._grace,
                                                   config):
            self._grace = 0.0

    def nodes_started(self, state: RunState, nodes: list[NodeHandle],
                      providers: list[Provider]) -> None:
        """The nodes started: an adoptable run records them; the tasks adopted agents kept
        wait for their calls; the earlier run's ids are not reused."""
        if self.adoptable:
            adopt.record_nodes(self.run_dir, nodes)
            if self.keys is not None:       # (before any call: graph.keys.Keys.made)
                self.keys.short = functools.partial(adopt.known_short, state.spec_runs)
        if self.resumer is not None and self.resumer.store.damaged:   # (said at open)
            from .restore import journal_note
            journal_note(state, self.resumer.store.damaged)
        self.adoption, tids, dids = adopt.after_start(nodes, providers, state.comm.wake)
        if tids or dids:
            state.ids_above(tids, dids)

    def restore(self, state: RunState, task: Task, deps: Iterable[Future]) -> bool:
        """Under the run's lock, at a call of a resumed run: the call finished from the earlier
        run's record or claimed from an adopted agent (True), else it runs."""
        resumer = self.resumer
        if resumer is not None and state.streams is not None and \
                task.id in state.streams.by_task:   # (its record, never an adopted task)
            return state.streams.restore(task, functools.partial(
                resumer.restore, state, task, deps, self.log, None))
        return resumer is not None and resumer.restore(state, task, deps, self.log,
                                                       self.adoption)

    def keep_completions(self, records: list[RecordWire], payloads: list[Chunk]) -> None:
        """Keyed calls that ended well (:func:`.log.completion_record`), in the log before
        anything is done with their results; raises RecordFailed."""
        keys = self.keys
        if keys is not None:
            keys.keyed = max(0, keys.keyed - len(records))
        if records and self.log is not None:
            self.log.add(records, payloads)

    def first_wait(self, state: RunState) -> None:
        """Under the run's lock: the program waits for a value that is not there; the tasks
        adopted agents kept that no call claimed by now are cancelled on their nodes."""
        adoption = self.adoption
        if adoption is not None and adoption.open:
            adoption.cancel_rest(state)

    def keep_records(self, state: RunState) -> None:
        """Every finished task's record in the resume log now, whatever the checkpoint
        policy (``compss_snapshot``): the bus delivers the plain calls', the log writes."""
        if self.log is not None:
            state.bus.flush()
            self.log.flush()

    def _keep_now(self, state: RunState, records: list[RecordWire]) -> None:
        """The loop thread, under the run's lock: records written now (graph.keys.Keys.held);
        a write that fails fails the run once the lock is let go."""
        if self.log is None:
            return
        try:
            self.log.add(records, [])
        except RecordFailed as exc:
            import threading
            from .recordfail import from_thread
            threading.Thread(target=from_thread, args=(state, str(exc)), daemon=True).start()

    def _ended_well(self, state: RunState, tasks: list[Task]) -> None:
        """The bus's delivery: the resume log keeps the plain calls that ended well."""
        if self.log is not None:
            try:
                self.log.ended(tasks)
            except RecordFailed as exc:
                from .recordfail import from_thread
                from_thread(state, str(exc))

    def at_end(self, nodes: list[NodeHandle], providers: list[Provider]) -> None:
        """The run ends (not killed): the agents of nodes it lost, which wait for a master
        that will not come, are told to stop where they can be reached."""
        if self.adoptable:
            adopt.dismiss_lost(self.run_dir, self.run_id, nodes, providers)

    def close(self) -> None:
        """The run is over (or did not start): the log closed, the locks let go (the run's
        lock file goes; the earlier run's stays, unlocked)."""
        if self.log is not None:
            self.log.close()
        if self._run_lock is not None:
            self._run_lock.release(remove=True)
            self._run_lock = None
        if self._source_lock is not None:
            self._source_lock.release()
            self._source_lock = None
        if self._adopt_lock >= 0:
            os.close(self._adopt_lock)
            self._adopt_lock = -1
