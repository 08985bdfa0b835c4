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
has ended. The call's value is the first copy's, available then too.

Written files (FILE_OUT / FILE_INOUT) are one data access too, as a shared
disk makes them in COMPSs: each copy writes a file of its own (under the
run's data directory, with the file's name; an INOUT one starts as the
version every copy reads), and the join makes the file's one new version from
the first copy's. Written directories and collections are refused.
"""
from __future__ import annotations

import itertools
import os
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ...graph.param import FILE_KIND, OBJECT_KIND

if TYPE_CHECKING:
    from .decl import CompatTask
    from .run import CompatRun

_CALLS = itertools.count(1)         # a replicated call's own directory of copies' files


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
    kinds = {n: spec.params[n].kind for n, _ in written}
    other = [n for n, k in kinds.items() if k not in (OBJECT_KIND, FILE_KIND)]
    if other:
        raise UsageError(f"task {spec.name}: is_replicated=True with written directory or "
                         f"collection parameter(s) {other}: every copy would write them from "
                         f"its own node at once; write objects (INOUT), files, or return the "
                         f"data.")

    def arg(n: str, pos: int | None) -> Any:
        return kwargs[n] if pos is None or pos >= len(args) else args[pos]
    objects = [(n, pos) for n, pos in written if kinds[n] == OBJECT_KIND]
    written_files = [(n, pos) for n, pos in written if kinds[n] == FILE_KIND]
    targets = [os.fspath(arg(n, pos)) for n, pos in written_files]
    ins = [t for (n, _), t in zip(written_files, targets) if spec.params[n].reads]
    files: list[tuple[str, int | None, int | None]] = []
    for n, pos in written_files:
        files.append((n, pos, sum(1 for f in files if f[2] is not None)
                      if spec.params[n].reads else None))
    here = os.path.join(rt.registry.data_dir, "replicas", str(next(_CALLS)))
    from .replica_tasks import pinned
    copies: list[Any] = []
    firsts: list[str] = []
    for k, node in enumerate(nodes):
        outs = [os.path.join(here, str(k), str(i), os.path.basename(t))
                for i, t in enumerate(targets)]
        firsts = firsts or outs
        copies.append(rt.submit(pinned("copy", 2, node.name),
                                (tf.__wrapped__, list(args), dict(kwargs), objects, files, ins,
                                 outs), {}))
    objs = [arg(n, pos) for n, pos in objects]
    value = rt.submit(pinned("join", max(nout, 1), nodes[0].name),
                      (objs, [c[1] for c in copies], copies[0][0], targets, firsts), {})
    return value
