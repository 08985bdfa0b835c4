"""Named, fractional and alternative resources: what each node has free, and who gets it.

Each node's declared resources (``NodeHandle.resources``, and ``gpus`` as
``gpu: [0..N-1]``) become a :class:`Pool` the scheduler keeps (:class:`Pools`,
one per node). A counted resource is a total of tokens; an indexed one, the
share of each device in use, in 1/FRACTION (graph.resources): a fraction
below 1 goes to the device most used that still has room for it (whole
devices stay free for whole requests), a whole number takes that many
devices nobody uses. A device is never more than 1.0 in use.

Tasks that ask for named resources or give variants (``TaskSpec.need``) are
gang tasks on one node: :func:`reserve` takes, under the runtime lock, the
first variant that fits now on some node (the least loaded of those it fits),
and records the grant; :func:`taskflow.runtime.scheduling.gang.release` gives
it back when the task ends, fails, is cancelled or its node is lost. A task
that does not fit now waits while other tasks pass it (the scheduler defers
it). Tasks that ask only for cores never come here.

:func:`check` refuses, when a task is called, a request no node can ever
meet, a name no node has and a fraction of a counted resource, naming the
task and what the nodes have.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from ...errors import UsageError
from ...graph.resources import FRACTION, Variant, describe, shown
from ...wire.invocation import Placement as Chosen

if TYPE_CHECKING:
    from ...graph.task import Task
    from ...providers.handle import NodeHandle
    from .scheduler import Scheduler


class Grant(NamedTuple):
    """What one task holds of one node's pool: (name, units) of counted resources and
    (name, ((device position, units), ...)) of indexed ones."""

    pool: Pool
    counted: tuple[tuple[str, int], ...]
    indexed: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]


class Pool:
    """One node's named resources: totals and what is in use (1/FRACTION)."""

    def __init__(self, node: NodeHandle, declared: dict[str, Any]) -> None:
        self.node = node
        self.total: dict[str, int] = {}             # counted: name -> tokens x FRACTION
        self.used: dict[str, int] = {}
        self.labels: dict[str, list[int | str]] = {}    # indexed: name -> device indices
        self.devices: dict[str, list[int]] = {}         # indexed: name -> use per device
        for name, v in declared.items():
            if isinstance(v, list):
                self.labels[name] = list(v)
                self.devices[name] = [0] * len(v)
            else:
                self.total[name] = int(v) * FRACTION
                self.used[name] = 0

    def names(self) -> set[str]:
        return set(self.total) | set(self.labels)

    def could(self, amounts: tuple[tuple[str, int], ...]) -> bool:
        """The node could ever give these amounts (nothing else running)."""
        for name, u in amounts:
            if name in self.total:
                if u % FRACTION or u > self.total[name]:
                    return False
            elif name in self.labels:
                if u > FRACTION and u // FRACTION > len(self.labels[name]):
                    return False
            else:
                return False
        return True

    def take(self, amounts: tuple[tuple[str, int], ...]) -> Grant | None:
        """Take ``amounts`` now, all or nothing; None: they do not fit now."""
        counted: list[tuple[str, int]] = []
        indexed: list[tuple[str, tuple[tuple[int, int], ...]]] = []
        for name, u in amounts:
            if name in self.total:
                if u % FRACTION or self.used[name] + u > self.total[name]:
                    return None
                counted.append((name, u))
                continue
            use = self.devices.get(name)
            if use is None:
                return None
            picks = _pick(use, u)
            if picks is None:
                return None
            indexed.append((name, picks))
        for name, u in counted:
            self.used[name] += u
        for name, picks in indexed:
            use = self.devices[name]
            for i, k in picks:
                use[i] += k
        return Grant(self, tuple(counted), tuple(indexed))

    def give(self, grant: Grant) -> None:
        for name, u in grant.counted:
            self.used[name] -= u
        for name, picks in grant.indexed:
            use = self.devices[name]
            for i, k in picks:
                use[i] -= k

    def free_devices(self, name: str) -> int:
        """Devices of ``name`` nobody uses (a whole-device request's room)."""
        return sum(1 for u in self.devices.get(name, ()) if u == 0)

    def describe(self) -> str:
        parts = [f"{n} {self.total[n] // FRACTION}" for n in sorted(self.total)]
        parts += [f"{n} {self.labels[n]}" for n in sorted(self.labels)]
        return ", ".join(parts)


def _pick(use: list[int], u: int) -> tuple[tuple[int, int], ...] | None:
    """Devices for ``u`` units: a share of the fullest device it fits on (u < FRACTION),
    or u / FRACTION devices nobody uses."""
    if u < FRACTION:
        best = -1
        for i, used in enumerate(use):
            if used + u <= FRACTION and (best < 0 or used > use[best]):
                best = i
        return ((best, u),) if best >= 0 else None
    want = u // FRACTION
    free = [i for i, used in enumerate(use) if used == 0][:want]
    return tuple((i, FRACTION) for i in free) if len(free) == want else None


def declared_of(node: NodeHandle) -> dict[str, Any]:
    """What ``node`` declares: its ``resources``, with ``gpus`` (or the number its agent
    reported) as ``gpu`` when they do not name it."""
    declared = dict(node.resources or {})
    if "gpu" not in declared:
        g = node.gpus
        if g is None:
            g = node.info.get("gpus", 0) if isinstance(node.info, dict) else 0
        if g:
            declared["gpu"] = list(range(int(g)))
    return declared


class Pools:
    """The pool of each node, made at its first use (a node that joins again under its
    name gets a new one; grants of the old one go back to the old one)."""

    def __init__(self) -> None:
        self._of: dict[str, Pool] = {}

    def of(self, node: NodeHandle) -> Pool:
        pool = self._of.get(node.name)
        if pool is None or pool.node is not node:
            pool = self._of[node.name] = Pool(node, declared_of(node))
        return pool


def reserve(sched: Scheduler, task: Task, nodes: list[NodeHandle],
            host_of: Callable[[NodeHandle], str]) -> NodeHandle | None:
    """Under the runtime lock: give ``task`` the first of its variants that fits now on
    some node (the least loaded such node), or return None (it waits). ``host_of``: the
    name a program sees for a node (gang.host_of)."""
    need = task.spec.need
    opts = task.options
    inv = opts.invocation if opts is not None else None
    assert need is not None and opts is not None and inv is not None and inv.gang is not None
    unit = inv.gang.unit            # the call's computing_units (a variant may say others)
    mem = task.mem
    excluded = task.excluded
    pools = sched.pools
    for i, v in enumerate(need):
        cus = v.cus if v.cus is not None else unit
        best: NodeHandle | None = None
        for n in nodes:
            if not n.usable or n.used + cus > n.slots or n.mem_used + mem > n.memory_gb \
                    or (excluded and n.name in excluded):
                continue
            if (best is None or n.load < best.load) and _fits_now(pools.of(n), v.amounts):
                best = n
        if best is None:
            continue
        grant = pools.of(best).take(v.amounts)
        assert grant is not None        # (it fitted a moment ago, under the same lock)
        task.cus = cus
        best.used += cus
        best.mem_used += mem
        sched.gangs[task.id] = (best, [], grant, False, [])
        host = host_of(best)
        given, gpus = given_json(grant)
        variant = i if task.spec.variants is not None else -1
        task.options = opts._replace(invocation=inv._replace(threads=cus, placement=Chosen(
            ((host, 1),), ((best.name, 1),), (host,), None, gpus, given, variant)))
        return best
    return None


def _fits_now(pool: Pool, amounts: tuple[tuple[str, int], ...]) -> bool:
    grant = pool.take(amounts)
    if grant is None:
        return False
    pool.give(grant)
    return True


def given_json(grant: Grant) -> tuple[str, tuple[int | str, ...]]:
    """(TASKFLOW_RESOURCES: JSON of what ``grant`` holds, the GPU indices it holds)."""
    pool = grant.pool
    out: dict[str, Any] = {n: {"amount": shown(u)} for n, u in grant.counted}
    gpus: tuple[int | str, ...] = ()
    for name, picks in grant.indexed:
        labels = pool.labels[name]
        idx = [labels[i] for i, _ in picks]
        out[name] = {"amount": shown(sum(k for _, k in picks)), "indices": idx}
        if name == "gpu":
            gpus = tuple(idx)
    return json.dumps(out, sort_keys=True), gpus


def check(need: tuple[Variant, ...], cus: int, mem: float, nodes: list[NodeHandle],
          name: str) -> None:
    """Raise UsageError when no node of the run can ever meet ``need`` (a task ``name``
    called with ``cus`` computing units, ``mem`` GB): a resource no node has, a fraction
    of a counted resource, more than the largest node has. No live node yet (they are
    still coming): nothing to check against."""
    alive = [n for n in nodes if n.usable]
    if not alive:
        return
    have = [(n, Pool(n, declared_of(n))) for n in alive]
    known = set().union(*(p.names() for _, p in have))
    indexed = {k for _, p in have for k in p.labels}
    for v in need:
        for res, u in v.amounts:
            if res not in known:
                import difflib      # (here: an error's hint, not the run's start-up)
                close = difflib.get_close_matches(res, sorted(known), n=1)
                raise UsageError(
                    f"task {name} asks for resource {res!r}"
                    f"{' (GPUs: processors= or resources=)' if res == 'gpu' else ''}, which "
                    f"no node of this run has"
                    f"{'' if not known else ' (they have ' + ', '.join(sorted(known)) + ')'}."
                    f"{f' Did you mean {close[0]!r}?' if close else ''} Nodes: "
                    f"{_nodes(have)}. Declare it on a node ("
                    f"{'gpus: N or ' if res == 'gpu' else ''}resources: in the cluster file, "
                    f"LocalProvider({'gpus=N, ' if res == 'gpu' else ''}resources=...)) or "
                    f"fix the name.")
            if u % FRACTION and res not in indexed:
                raise UsageError(
                    f"task {name} asks for {res} {shown(u)}, a fraction, but {res} is a count "
                    f"of tokens on every node that has it, not a list of devices: ask for a "
                    f"whole number (fractions share one device of an indexed resource such "
                    f"as gpu: [0, 1]).")
    asked = never(need, cus, mem, alive)
    if asked is None:
        return
    raise UsageError(
        f"task {name} needs {asked}, but the nodes of this run can never give that: "
        f"{_nodes(have)}. Lower the request or declare more on a node (the cluster file's "
        f"resources:, LocalProvider(resources=...)).")


def never(need: tuple[Variant, ...], cus: int, mem: float,
          nodes: list[NodeHandle]) -> str | None:
    """None if some live node of ``nodes`` could ever run one of the variants (nothing
    else running there); else the request, described (``(16 cores) or (4 cores, gpu 1)``)."""
    for n in nodes:
        if not n.usable:
            continue
        pool = Pool(n, declared_of(n))
        for v in need:
            if n.slots >= (v.cus if v.cus is not None else cus) and n.memory_gb >= mem \
                    and pool.could(v.amounts):
                return None
    return " or ".join(f"({describe(v, cus, mem)})" for v in need)


def _nodes(have: list[tuple[NodeHandle, Pool]]) -> str:
    parts = [f"{n.name}: {n.slots} cores, {n.memory_gb:.1f} GB"
             + (f", {p.describe()}" if p.names() else "") for n, p in have[:8]]
    more = f"; ... {len(have) - 8} more" if len(have) > 8 else ""
    return "; ".join(parts) + more
