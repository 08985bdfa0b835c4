"""The Slurm provider's manager thread: it looks at the queue, decides, and says why.

One thread per :class:`~.provider.SlurmProvider` (batch and pilot alike). It
looks at the run's jobs with :class:`~.queue.SlurmQueue` (one batched
``squeue`` per look, at the queue's adaptive interval) and, every
:data:`TICK` between looks, decides without calling Slurm: pilots to
submit or replace (up to the target, at most ``max_queued`` pending), what
to hold back and why, what a lost node's job ended as. Every decision is one
line (:meth:`SlurmManager.say`): in the log at level info (warnings for what
needs the user: the controller away, back, given up) and in the journal as
a line of task 0 from node ``slurm`` (``taskflow logs RUN 0``).

Never twice: an ``sbatch`` that got no answer leaves its token (the job's
comment) unconfirmed; nothing is submitted while one is, until the queue
lists its job (adopted) or :data:`CONFIRM_LOOKS` answered looks do not (it
was not submitted).

The manager sees its provider as a :class:`JobOwner`: the jobs, the few settings
it decides by, and ``submit``; it never imports the provider.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Protocol

from ...errors import SlurmError

if TYPE_CHECKING:
    from ..base import NodeSink
    from ..handle import NodeHandle
    from .queue import SlurmQueue

log = logging.getLogger("taskflow.providers.slurm")

TICK = 0.5           # s between the manager's decisions (they call Slurm only to submit)
EXPLAIN_WAIT = 60.0  # s to wait for the end state of a lost node's job before saying UNKNOWN
CONFIRM_LOOKS = 2    # answered looks without an unanswered sbatch's job: it was not submitted


class JobOwner(Protocol):
    """The Slurm provider, as its manager sees it (the fields read only; ``lock`` guards
    ``handles`` and ``unconfirmed``, which the manager's decisions also change)."""

    @property
    def lock(self) -> threading.Lock: ...
    @property
    def sink(self) -> NodeSink | None: ...
    @property
    def queue(self) -> SlurmQueue | None: ...
    @property
    def stopping(self) -> bool: ...
    @property
    def handles(self) -> dict[str, list[NodeHandle]]: ...
    @property
    def unconfirmed(self) -> dict[str, tuple[float, int]]: ...
    # its settings
    @property
    def mode(self) -> str: ...
    @property
    def target(self) -> int: ...
    @property
    def max_queued(self) -> int: ...
    @property
    def idle_timeout(self) -> float | None: ...
    @property
    def time_limit(self) -> str | None: ...
    @property
    def poll_slow(self) -> float: ...
    @property
    def controller_wait(self) -> float: ...
    @property
    def job_name(self) -> str: ...

    def look(self) -> bool:
        """One look at every job of the run; True when Slurm answered."""

    def submit(self, nodes: int, why: str) -> str | None:
        """sbatch one job; its id, or None when the controller did not answer."""

    def submitted_job(self, jid: str, token: str) -> None:
        """Job ``jid`` (sbatch token ``token``) is the run's."""

    def draining(self, h: NodeHandle) -> bool:
        """``h``'s job ends within the drain margin."""


class SlurmManager:
    def __init__(self, provider: JobOwner) -> None:
        self.p = provider
        self.decisions: list[str] = []        # every line said, in order
        self.gave_up = False                  # the controller stayed away: no more Slurm
        self.idle_retired: list[str] = []     # pilot jobs that left for lack of work
        self.max_pending_seen = 0
        self.wake = threading.Event()         # a join or a loss: look soon
        self._said = ""
        self._explaining: dict[str, tuple[NodeHandle, float]] = {}   # job -> (node, since)
        self._submit_error_at = 0.0
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name="taskflow-slurm")
        self._thread.start()

    def join(self, timeout: float) -> None:
        self.wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def say(self, line: str, warn: bool = False, again: bool = False) -> None:
        """One decision, one line: the log (info; warnings for what the user must know)
        and the journal. The same line twice in a row is said once."""
        if line == self._said and not again:
            return
        self._said = line
        log.log(logging.WARNING if warn else logging.INFO, "slurm: %s", line)
        p = self.p
        with p.lock:
            self.decisions.append(line)
            sink = p.sink
        if sink is not None:
            sink.node_event("log", "slurm", ("SLURM", line))

    def explain(self, h: NodeHandle) -> None:
        """``h``'s agent is gone: say how its job ended, once a look tells."""
        with self.p.lock:
            self._explaining[str(h.job_id)] = (h, time.time())
        self.wake.set()

    # -- the loop ---------------------------------------------------------------------
    def _run(self) -> None:
        p = self.p
        q = p.queue
        assert q is not None
        next_look = 0.0
        while not p.stopping:
            if time.time() >= next_look:
                try:
                    self._look_and_explain()
                except Exception as exc:  # noqa: BLE001 - keep managing
                    log.warning("slurm: %s", exc)
                next_look = time.time() + q.interval(self._waiting())
            try:
                self._decide()
            except Exception as exc:  # noqa: BLE001 - keep managing
                log.warning("slurm pilots: %s", exc)
            if self.wake.wait(max(0.0, min(TICK, next_look - time.time()))):
                self.wake.clear()        # look soon, but never sooner than 1 s after the last
                next_look = min(next_look, q.last_look + min(q.fast, 1.0))

    def _waiting(self) -> bool:
        """A decision waits on the queue: look every ``poll`` seconds, not ``poll_slow``."""
        p = self.p
        q = p.queue
        assert q is not None
        if p.unconfirmed or self._explaining or q.pending():
            return True
        if p.mode == "batch":
            return sum(len(hs) for hs in p.handles.values()) < p.target
        return False

    def _look_and_explain(self) -> None:
        p = self.p
        q = p.queue
        assert q is not None
        was_down = q.down_since
        ended_before = {j for j, job in q.jobs.items() if job.ended}
        if not p.look():
            if was_down is None:
                self.say(f"the Slurm controller does not answer ({q.down_error}); the run "
                         f"goes on with the nodes it has, nothing is submitted until it "
                         f"answers; giving up on Slurm after {p.controller_wait:g} s",
                         warn=True)
            if q.gave_up and not self.gave_up:
                self._give_up()
            return
        if was_down is not None:
            self.say(f"the Slurm controller answers again after "
                     f"{time.time() - was_down:.0f} s", warn=True)
        self._confirm()
        for jid, job in q.jobs.items():
            if job.ended and jid not in ended_before:
                self.say(f"job {jid} ended: {job.describe()} ({len(q.live())} of the run's "
                         f"jobs live, target {p.target})", again=True)
        with p.lock:
            joined = [(j, h) for j, hs in p.handles.items() for h in hs]
        for jid, h in joined:       # exact start and end of the jobs the nodes run in
            run = q.jobs.get(jid)
            if run is not None and run.state == "RUNNING" and run.start is not None:
                h.info["job_started"] = run.start
                if p.time_limit and run.end is not None and h.walltime_end != run.end:
                    h.walltime_end = run.end
                    h.info["walltime_end"] = run.end
        self._explain(time.time())
        with p.lock:
            self.max_pending_seen = max(self.max_pending_seen, len(q.pending()))

    def _confirm(self) -> None:
        """sbatch calls that got no answer: their job is ours if the queue lists its token;
        after CONFIRM_LOOKS looks without it, it was not submitted (and may be again)."""
        p = self.p
        q = p.queue
        assert q is not None
        for token, (t, looks) in list(p.unconfirmed.items()):
            job = q.adopt(token)
            if job is not None:
                p.submitted_job(job.jid, token)
                self.say(f"the job submitted while the controller did not answer is job "
                         f"{job.jid}: it is not submitted again")
            elif looks + 1 >= CONFIRM_LOOKS:
                with p.lock:
                    p.unconfirmed.pop(token, None)
                self.say(f"the sbatch that got no answer (token {token}) did not submit a "
                         f"job: the queue does not list it")
            else:
                p.unconfirmed[token] = (t, looks + 1)
        for jid, job in list(q.unknown.items()):     # a late one: ours all the same
            if job.token.startswith(p.job_name + "-") and q.adopt(job.token) is not None:
                p.submitted_job(jid, job.token)
                self.say(f"job {jid} of this run appeared late (its sbatch got no answer): "
                         f"kept as one more")

    def _explain(self, now: float) -> None:
        """Lost nodes: say, once Slurm knows, how their job ended."""
        p = self.p
        q = p.queue
        assert q is not None
        for jid, (h, since) in list(self._explaining.items()):
            job = q.jobs.get(jid)
            if job is not None and job.ended:
                state = job.describe()
            elif now - since >= EXPLAIN_WAIT or self.gave_up:
                state = (f"UNKNOWN ({job.describe() if job else 'not a job of this run'} "
                         f"{now - since:.0f} s after its agent left)")
            else:
                continue
            del self._explaining[jid]
            h.slurm_state = state
            log.warning("node %s: slurm job %s ended in state %s", h.name, jid, state)
            sink = p.sink
            if sink is not None:
                sink.node_event("node_state", h.name, {"job_id": jid, "state": state})

    def _give_up(self) -> None:
        p = self.p
        q = p.queue
        assert q is not None
        self.gave_up = True
        alive = sum(1 for hs in p.handles.values() for h in hs if h.alive)
        reason = (f"the Slurm controller has not answered for {p.controller_wait:g} s "
                  f"({q.down_error})")
        self.say(f"{reason}: giving up on Slurm: no job is submitted or replaced from now "
                 f"on; the run goes on with the {alive} node(s) it has", warn=True)
        sink = p.sink
        if sink is not None:
            sink.no_more_nodes(f"{reason}, and no node is left that can run it")

    # -- deciding (no Slurm call but sbatch) ------------------------------------------
    def _decide(self) -> None:
        """Pilots: replace ended ones up to the target, at most ``max_queued`` pending."""
        p = self.p
        q = p.queue
        assert q is not None
        if p.stopping or self.gave_up or q.down_since is not None:
            return
        if p.mode == "batch":
            if not q.jobs and not p.unconfirmed:    # the first sbatch did not submit it
                self._try_submit(p.target, "the batch allocation, again: the first sbatch "
                                           "did not submit it")
            return
        for jid, hs in list(p.handles.items()):
            if jid not in self.idle_retired and any(
                    (h.leaving or "").startswith("idle") for h in hs):
                self.idle_retired.append(jid)        # it left by itself for lack of work
                self.say(f"pilot job {jid} left after {p.idle_timeout:g} s without work: "
                         f"not replaced until work waits")
        live = [j for j in q.live() if not (
            p.handles.get(j.jid) and all(p.draining(h) for h in p.handles[j.jid]))]
        pending = sum(1 for j in live if j.state == "PENDING") + len(p.unconfirmed)
        sink = p.sink
        if self.idle_retired and not (sink is not None and sink.work_waiting()):
            return
        if len(live) + len(p.unconfirmed) >= p.target:
            return
        if p.unconfirmed:
            self.say(f"{len(live)} of {p.target} pilots live: waiting for the queue to show "
                     f"whether the sbatch without an answer submitted one")
            return
        if pending >= p.max_queued:
            self.say(f"{len(live)} of {p.target} pilots live, {pending} pending: no new "
                     f"pilot until one starts (at most {p.max_queued} queued)")
            return
        while len(live) < p.target and pending < p.max_queued and not p.stopping:
            new = self._try_submit(1, f"a pilot to make {len(live) + 1} of {p.target} live "
                                      f"({pending} pending, at most {p.max_queued})")
            if new is None:
                return
            live.append(q.jobs[new])
            pending += 1
        with p.lock:
            self.max_pending_seen = max(self.max_pending_seen, pending)

    def _try_submit(self, nodes: int, why: str) -> str | None:
        """Submit from the manager: a refusal is said and tried again ``poll_slow`` later."""
        p = self.p
        if time.time() - self._submit_error_at < p.poll_slow:
            return None
        try:
            return p.submit(nodes, why)
        except SlurmError as exc:
            self._submit_error_at = time.time()
            self.say(f"cannot submit ({why}): {exc}; trying again in {p.poll_slow:g} s",
                     warn=True)
            return None
