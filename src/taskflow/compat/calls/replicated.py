"""``@task(is_replicated=True)``: a call runs once on every node of the run.

One copy of the task is pinned to each usable node (a copy whose node is
lost before it ran runs on another one); the call gives back the first
copy's value, and ``compss_barrier`` waits for all of them.

A replicated task may write its object parameters (INOUT / OUT, ``self``),
as in PyCOMPSs: all copies share one data access. Every copy reads the same
version; each runs the function (:func:`.replica_tasks._copy`) and gives
back what it made of the written objects; one more task
(:func:`.replica_tasks._join`, on the first copy's node) waits for every
copy and makes the one new version of each written object from the first
copy's, so later tasks, and ``compss_wait_on``, see it only when every copy
has ended. The call's value is the first copy's, available then too. Written
files are refused: the copies would write one path from several nodes at once.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ...graph.param import OBJECT_KIND

if TYPE_CHECKING:
    from .decl import CompatTask
    from .run import CompatRun


def submit_replicas(tf: CompatTask, rt: CompatRun, args: tuple[Any, ...],
                    kwargs: dict[str, Any], nout: int, plain: frozenset[str],
                    cons: tuple[Any, ...] | None) -> Any:
    """Submit the copies (and, when the task writes objects, the join); the call's native
    value, the first copy's, which the caller shapes as PyCOMPSs gives it back."""
    nodes = [n for n in rt.nodes if n.usable]
    spec = tf.spec
    written = [(n, spec.index.get(n)) for n, p in spec.params.items()
               if p.writes and n not in plain]
    if not written:
        first = None
        for node in nodes:
            v = tf.variant(nout, plain, cons, pin=node.name)
            value = rt.submit(v, args, kwargs)
            if first is None:
                first = value
        return first
    files = [n for n, _ in written if spec.params[n].kind != OBJECT_KIND]
    if files:
        raise UsageError(f"task {spec.name}: is_replicated=True with written file or "
                         f"collection parameter(s) {files}: every copy would write them from "
                         f"its own node at once; write objects (INOUT) or return the data.")
    from .replica_tasks import pinned
    copies = [rt.submit(pinned("copy", 2, node.name),
                        (tf.__wrapped__, list(args), dict(kwargs), written), {})
              for node in nodes]
    objs = [kwargs[n] if pos is None or pos >= len(args) else args[pos] for n, pos in written]
    value = rt.submit(pinned("join", max(nout, 1), nodes[0].name),
                      (objs, [c[1] for c in copies], copies[0][0]), {})
    return value
