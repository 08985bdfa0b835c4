"""A resumed run's adopted tasks: what the earlier run's agents kept, matched by key.

The agents a resumed master reached (providers/adopting.py) listed the tasks
they kept (:class:`~taskflow.wire.messages.Adoptable`: running, queued on an
executor behind a running one, or ended with the result held). A call of the
resumed script whose key (graph/keys.py) is one of theirs is not run again: it
is *claimed* (:meth:`Adoption.claim`): in flight on that node at once, its
result to come under its new id (an ADOPT frame tells the agent). Kept tasks
no call claims are cancelled on their node when the script first waits for a
value that is not there yet (by then it has made the calls that came before
that point, as the earlier run had when those tasks started) and at the end of
the run.

A call keyed when it was made (it reads other tasks' values or files, writes
files, has keywords or options) is matched by the key its master sent along
(KEYS), a plain call by the key computed from its code digest and arguments
(:func:`~taskflow.graph.keys.plain_key`). A claimed call that writes files or
directories keeps the versions the earlier master planned (in the earlier
run's directory, as a restored call's are: the end of the run puts the last
one at the user's path); on a node without the master's filesystem (staged)
it runs again.
"""
from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Callable, NamedTuple

from ...graph import task as T
from ...graph.keys import plain_key
from ...providers import adopting
from ...wire import adoption as adoption_wire
from ...wire import messages as M
from ...events import Dispatched, Resumed
from ..specruns import learned

if TYPE_CHECKING:
    from ...graph.spec import TaskSpec
    from ..specruns import SpecRuns
    from ...graph.task import Task
    from ...providers.handle import NodeHandle
    from ...providers.base import Provider
    from ...wire.messages import Hello
    from ..state import RunState

log = logging.getLogger(__name__)

ADOPT_MIN = 0.5     # s: keyed calls shorter than this on average are not sent their keys


def known_short(runs: SpecRuns, spec: TaskSpec) -> bool:
    """Whether ``spec``'s calls are known to take under :data:`ADOPT_MIN` on average: their
    keys are not sent to their nodes (runtime/loop/outbox.py), so they may wait
    (graph/keys.py). Read without the run's lock."""
    run = runs.get(spec) or learned(spec)
    return run is not None and run.n > 0 and run.mean < ADOPT_MIN


def before_start(resume_from: str, providers: list[Provider]) -> int:
    """Before the providers start: a resumed run holds the earlier run's adoption lock
    (refused, naming the holder, when another master resumes it: the return is the lock's
    descriptor) and tells its providers what to look for."""
    fd = adopting.lock(resume_from)
    src, why = adopting.source(resume_from)
    if src is None:
        log.debug("%s", why)
        return fd
    for p in providers:
        p.adopt = src
    return fd


def keep_secret(run_dir: str, run_id: str, grace: float, config: Hello) -> bool:
    """After the journal opened (its errors first): an adoptable run keeps its secret, and
    its agents' HELLO gets it; one that cannot be written (a full disk) makes the run
    not adoptable, said once (the run itself goes on): False."""
    try:
        adopting.record(run_dir, run_id, grace, config)
    except OSError as exc:
        from ...journal.failure import describe
        log.warning("%s: agents will not outlive a lost master", describe(
            "the adoption secret", os.path.join(run_dir, adoption_wire.SECRET_NAME), exc))
        return False
    return True


def record_nodes(run_dir: str, nodes: list[NodeHandle]) -> None:
    """An adoptable run's nodes, where a resumed master looks for their agents."""
    try:
        adopting.record_nodes(run_dir, nodes)
    except OSError as exc:
        log.warning("the run's nodes could not be recorded (%s): a resumed master will "
                    "not find its agents", exc)


def after_start(nodes: list[NodeHandle], providers: list[Provider],
                wake: Callable[[], None]) -> tuple[Adoption | None, int, int]:
    """The nodes started: say why agents were not adopted; the tasks adopted ones kept
    wait for their calls (the :class:`Adoption`, or None); and the highest task and data
    ids the earlier run used on them (not to be reused)."""
    for p in providers:
        for why in p.adoption_refusals():
            log.warning("%s", why)
        src = p.adopt
        if src is not None and p.named_by_config:
            theirs = {n: h for n, (kind, h) in src.nodes.items() if kind == p.name}
            ours = {n.name: n.host or "" for n in nodes if n.provider is p}
            if theirs and not any(theirs.get(n) == h for n, h in ours.items()):
                log.warning("adopts nothing from run %s: its %s nodes (%s) are not this "
                            "run's (another cluster file?)", src.run_id, p.name,
                            ", ".join(sorted(theirs)))
    _unmatched_kinds(providers)
    above = [n.info.pop("ids_above", (0, 0)) for n in nodes]
    tids, dids = max((t for t, _ in above), default=0), max((d for _, d in above), default=0)
    adoption = Adoption(nodes, wake)
    return (adoption if adoption.open or adoption.cancels else None), tids, dids


def _unmatched_kinds(providers: list[Provider]) -> None:
    """The earlier run had nodes of a kind this run has no provider of (a Slurm run resumed
    with local workers): said, with what becomes of their agents."""
    src = next((p.adopt for p in providers if p.adopt is not None), None)
    if src is None:
        return
    kinds = {p.name for p in providers}
    missing: dict[str, list[str]] = {}
    for name, (kind, _) in src.nodes.items():
        if kind and kind not in kinds:
            missing.setdefault(kind, []).append(name)
    for kind, names in sorted(missing.items()):
        log.warning("adopts nothing from run %s on its %s nodes (%s): this run has no %s "
                    "nodes (another cluster file?); their agents wait out their grace, then "
                    "stop their tasks and exit", src.run_id, kind, ", ".join(sorted(names)),
                    kind)


def dismiss_lost(run_dir: str, run_id: str, nodes: list[NodeHandle],
                 providers: list[Provider]) -> None:
    """The run ends (not killed): agents of nodes it lost, which wait for a resumed master
    that will not come, are told to stop where they can be reached."""
    if not any(not n.alive for n in nodes):
        return
    try:
        with open(os.path.join(run_dir, adoption_wire.SECRET_NAME)) as f:
            secret = f.read().strip()
    except OSError:
        return
    for p in providers:
        p.dismiss_lost(run_id, secret)


class Kept(NamedTuple):
    node: NodeHandle
    task_id: int          # the earlier master's
    units: int            # held on the node while it runs (0: it ended)
    files: list[str]      # the versions it writes (the earlier run's paths)
    started: bool         # it had started (else queued on its executor behind one that had)


class Adoption:
    """The tasks the adopted agents kept, until the resumed script's calls claim them."""

    def __init__(self, nodes: list[NodeHandle], wake: Callable[[], None]) -> None:
        self.wake = wake            # the loop sends this round's claims and cancels (frames)
        self.pending = False        # claims or cancels wait for the loop
        self.by_key: dict[bytes, list[Kept]] = {}
        self.open = False           # kept tasks wait for a claim
        self.adopted = 0            # claimed while running
        self.queued = 0             # claimed while queued behind a running one (not started)
        self.collected = 0          # claimed with their result held
        self.where: set[str] = set()
        self.claims: dict[NodeHandle, list[tuple[int, int, list[int]]]] = {}
        self.cancels: dict[NodeHandle, list[int]] = {}
        for node in nodes:
            kept = node.info.pop("adoptable", None)
            if not kept:
                continue
            for a in map(M.Adoptable._make, kept):
                units = 0 if a.done else a.units
                key = a.key or (plain_key(a.code, a.argv) if a.code else b"")
                if key:
                    self.by_key.setdefault(key, []).append(
                        Kept(node, a.task_id, units, list(a.files), a.started))
                else:               # not a plain call: not matched, cancelled at once
                    self.cancels.setdefault(node, []).append(a.task_id)
                node.used += units
                self.open = True
        self.pending = bool(self.cancels)       # (sent in the loop's first round)

    def claim(self, rt: RunState, task: Task) -> bool:
        """Under the run's lock, at the call: ``task`` is one a node kept (True: in flight
        there now; the loop sends the claim), else False."""
        key = task.key
        kept = self.by_key.get(key) if key is not None else None
        if not kept:
            return False
        versions = [e.version for e in task.inouts or () if e.kind != M.OUT_OBJECT]
        k = kept[-1]
        if len(k.files) != len(versions) or (versions and k.node.stager is not None):
            return False            # (written on a node's own disk: run again here)
        kept.pop()
        for fut, path in zip(versions, k.files):
            fut.written_at(path)    # the earlier master's version path, as it is written
        if not kept:
            del self.by_key[key]        # type: ignore[arg-type]
        node = k.node
        node.used += task.cus - k.units
        node.mem_used += task.mem
        node.inflight[task.id] = task
        now = time.time()
        task.state = T.DISPATCHED
        task.node = node
        task.t_dispatch = now
        self.claims.setdefault(node, []).append(
            (k.task_id, task.id, [f._did for f in task.all_outputs()]))
        if not k.units:
            self.collected += 1
            how = f"finished on {node.name} while no master was there"
        elif k.started:
            self.adopted += 1
            how = f"kept running on {node.name}"
        else:
            self.queued += 1
            how = f"kept queued on {node.name} (it had not started)"
        self.where.add(node.name)
        bus = rt.bus
        if bus.active:
            bus.sub_rows.append(task)
            bus.emit(Resumed("adopted", now, task.id, task.spec.name, node.name, how))
            bus.emit(Dispatched("dispatched", now, task.id, task.spec.name, node.name, None))
        self.pending = True
        self.wake()
        return True

    def cancel_rest(self, rt: RunState) -> None:
        """Under the run's lock: the kept tasks no call claimed are cancelled on their node."""
        self.open = False
        for kept in self.by_key.values():
            for k in kept:
                k.node.used -= k.units
                self.cancels.setdefault(k.node, []).append(k.task_id)
                rt.scheduler.freed(k.node)
        self.by_key.clear()
        self.pending = True
        self.wake()

    def frames(self) -> list[tuple[NodeHandle, M.Adopt]]:
        """Under the run's lock (the loop): this round's ADOPT frames, per node."""
        self.pending = False
        out = []
        for node in set(self.claims) | set(self.cancels):
            out.append((node, M.Adopt(self.claims.pop(node, []), self.cancels.pop(node, []))))
        return out

    def summary(self) -> str:
        """``4 running task(s) adopted on h1, h2`` (then the queued ones adopted, the
        results collected), or ""."""
        parts = []
        where = ", ".join(sorted(self.where))
        if self.adopted:
            parts.append(f"{self.adopted} running task(s) adopted on {where}")
        if self.queued:
            parts.append(f"{self.queued} queued task(s) adopted (waiting there behind a "
                         f"running one: not started yet)" if self.adopted else
                         f"{self.queued} queued task(s) adopted on {where} (not started yet)")
        if self.collected:
            parts.append(f"{self.collected} result(s) collected that finished while no master "
                         f"was there")
        return "; ".join(parts)
