"""Gang placement: tasks that hold slots on several nodes at once (@mpi, @multinode).

A request is a :class:`~taskflow.wire.invocation.Gang` (``procs`` P, ``ppn``
k or None, ``unit`` u, ``gpus`` g): P processes of u slots each, k per node
when given (else packed: one node when one has room, otherwise the nodes
with the most free slots; with ``group`` G, packed in whole groups of G
processes, several groups on a node with room: PyCOMPSs's computing nodes
of an ``@mpi`` with ``processes_per_node``). The task is sent to the first chosen node, whose
agent holds that node's share as an exclusive task; the shares on the other
nodes are held on the master only (``Scheduler.gangs``), and while a node
holds a share the scheduler does not prefetch onto it, so its agent never
starts more than its free slots. The nodes chosen reach the agent as the
invocation's :class:`~taskflow.wire.invocation.Placement`.

A gang task that does not fit now blocks the ready tasks behind it (no
backfill): nodes drain until it fits, so it cannot starve.

A request of ``unit`` 0 is an ``@IO`` task's (PyCOMPSs ``@IO @mpi``): its
processes take the nodes' I/O executors (``io_slots``), one each, not their
computing units.

GPUs (``gpus`` per request, on the first node) come from the node's pool of
named resources (:mod:`.resources`, its ``gpu``), as do the resources of tasks
on one node that ask for named resources or variants: :func:`reserve` hands
those to :func:`.resources.reserve`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from ...graph.resources import FRACTION
from ...wire.invocation import Gang, Placement as Chosen
from . import resources

if TYPE_CHECKING:
    from ...graph.task import Task
    from ...providers.handle import NodeHandle
    from .scheduler import Scheduler

Placement = list[tuple["NodeHandle", int]]    # [(node, processes)]


def host_of(node: NodeHandle) -> str:
    """The host name a launcher should use for ``node`` ("localhost" for local agents)."""
    if node.host:
        return node.host
    prov = node.provider
    if prov is None or prov.name == "local":
        return "localhost"
    hostname: str | None = node.info.get("hostname")
    return hostname or node.name


def slurm_node_of(node: NodeHandle) -> str | None:
    """Slurm's name for the node an agent runs on (SLURMD_NODENAME), if it runs in a job.

    It can differ from the host name (several slurmd per host, or NodeHostname
    set), and ``srun --nodelist`` only knows Slurm's names.
    """
    info = getattr(node, "info", None)
    return info.get("slurm_node") if isinstance(info, dict) else None


def gpus_of(node: NodeHandle) -> int:
    """The GPUs ``node`` declares (its ``gpu`` devices: scheduling.resources)."""
    g = resources.declared_of(node).get("gpu")
    return len(g) if isinstance(g, list) else 0


def place(nodes: list[NodeHandle], req: Gang, free: bool = True,
          pools: resources.Pools | None = None) -> Placement | None:
    """Choose [(node, processes)] for ``req``; ``free=False`` asks "could it ever fit"
    (``pools``: the scheduler's, when ``free``)."""
    unit, ppn, procs, gpus = req.unit, req.ppn, req.procs, req.gpus
    group = req.group if not ppn and unit else 1
    if group > 1:                   # whole groups of `group` processes: counted as one each
        grouped = place(nodes, req._replace(procs=-(-procs // group), unit=unit * group,
                                            group=1), free, pools)
        return None if grouped is None else [(n, k * group) for n, k in grouped]
    cands: list[tuple[int, NodeHandle]] = []
    io = unit == 0                  # @IO: the I/O executors, one per process
    for n in nodes:
        if not n.usable:
            continue
        if io:
            room = (n.io_slots - n.io_used) if free else n.io_slots
        else:
            room = (n.slots - n.used) if free else n.slots
        if room < max(unit, 1):
            continue
        if gpus:
            have = pools.of(n).free_devices("gpu") if free and pools is not None \
                else gpus_of(n)
            if have < gpus:
                continue
        cands.append((room // max(unit, 1), n))
    if ppn:
        fit = [n for cap, n in cands if cap >= ppn]
        need = -(-procs // ppn)
        if len(fit) < need:
            return None
        fit.sort(key=lambda n: n.used)
        left = procs
        out: Placement = []
        for n in fit[:need]:
            k = min(ppn, left)
            out.append((n, k))
            left -= k
        return out
    whole = [(cap, n) for cap, n in cands if cap >= procs]
    if whole:
        return [(min(whole, key=lambda c: (c[0], c[1].used))[1], procs)]
    cands.sort(key=lambda c: -c[0])
    left, out = procs, []
    for cap, n in cands:
        k = min(cap, left)
        out.append((n, k))
        left -= k
        if left == 0:
            return out
    return None


def reserve(sched: Scheduler, task: Task, nodes: list[NodeHandle]) -> NodeHandle | None:
    """Under the runtime lock: place ``task`` now or return None (it waits)."""
    if task.spec.need is not None:      # named resources or variants, on one node
        return resources.reserve(sched, task, nodes, host_of)
    opts = task.options
    inv = opts.invocation if opts is not None else None
    assert opts is not None and inv is not None and inv.gang is not None   # its request
    req = inv.gang
    chosen = place(nodes, req, True, sched.pools)
    if chosen is None:
        return None
    unit = req.unit
    head = chosen[0][0]
    task.cus = chosen[0][1] * unit
    slurm = [slurm_node_of(n) for n, _ in chosen]
    held: list[tuple[NodeHandle, int]] = []
    io: list[tuple[NodeHandle, int]] = []   # @IO: I/O executors beyond the one the head's
    if unit == 0:                           # task gives back when it ends (NodeHandle)
        head.io_used += chosen[0][1] - 1
        io.append((head, chosen[0][1] - 1))
    for n, k in chosen[1:]:
        if unit == 0:
            n.io_used += k
            io.append((n, k))
        n.used += k * unit
        held.append((n, k * unit))
        sched.held[n.name] = sched.held.get(n.name, 0) + 1
    if len(chosen) > 1:
        sched.held[head.name] = sched.held.get(head.name, 0) + 1
    grant = sched.pools.of(head).take((("gpu", req.gpus * FRACTION),)) if req.gpus else None
    ids = resources.given_json(grant)[1] if grant is not None else ()
    # what the node reads of the nodes it was given (agent.executor.invokers): a new record per
    # dispatch, so a retried task never carries an earlier placement
    task.options = opts._replace(invocation=inv._replace(placement=Chosen(
        _merge([(host_of(n), k) for n, k in chosen]),
        tuple((n.name, k) for n, k in chosen),
        tuple(host_of(n) for n, _ in chosen),
        # agents inside a Slurm job: srun wants Slurm's node names
        _merge([(s, k) for s, (_, k) in zip(slurm, chosen) if s is not None])
        if all(slurm) else None,
        ids)))
    sched.gangs[task.id] = (head, held, grant, len(chosen) > 1, io)
    if unit == 0:
        head.io_used += 1                   # the head's own, given back by NodeHandle
    head.used += task.cus
    head.mem_used += task.mem
    return head


def release(sched: Scheduler, task: Task) -> None:
    """Give back what :func:`reserve` took beyond the head node's share (idempotent)."""
    entry = sched.gangs.pop(task.id, None)
    if entry is None:
        return
    head, held, grant, multi, io = entry
    for n, k in io:
        n.io_used -= k
    for n, k in held:
        if n.alive:
            n.used -= k
            sched.freed(n)
        _unhold(sched, n.name)
    if multi:
        _unhold(sched, head.name)
    if grant is not None:
        grant.pool.give(grant)


def _unhold(sched: Scheduler, name: str) -> None:
    c = sched.held.get(name, 0) - 1
    if c > 0:
        sched.held[name] = c
    else:
        sched.held.pop(name, None)


def _merge(hosts: Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """One entry per host name (Open MPI rejects a host listed twice with slots=)."""
    out: dict[str, int] = {}
    for h, k in hosts:
        out[h] = out.get(h, 0) + k
    return tuple(out.items())


def describe(req: Gang) -> str:
    s = f"{req.procs} process{'es' if req.procs != 1 else ''}"
    if req.ppn:
        s += f" ({req.ppn} per node)"
    elif req.group > 1:
        s += f" (groups of {req.group} on a node)"
    if req.unit == 0:
        s += " on I/O executors"
    elif req.unit != 1:
        s += f" of {req.unit} computing units"
    if req.gpus:
        s += f" and {req.gpus} GPU(s) per node"
    return s


def describe_nodes(nodes: list[NodeHandle]) -> str:
    alive = [n for n in nodes if n.usable]
    parts = [f"{n.name}: {n.slots} slots" + (f", {gpus_of(n)} GPUs" if gpus_of(n) else "")
             for n in alive[:8]]
    more = f", ... {len(alive) - 8} more" if len(alive) > 8 else ""
    return "; ".join(parts) + more if alive else "no live nodes"
