"""A spec variant: a copy of a declared spec with what one kind of call decides.

A PyCOMPSs call may differ from its declaration (its number of outputs,
parameters passed as plain values, constraints or program values decided at
the call, the node it must run on, an @IO task's place on the I/O executors):
each combination is a shallow copy of the declared :class:`TaskSpec`, made
once by :meth:`taskflow.compat.calls.taskfn.CompatTaskFunction.variant` and reused.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from ...graph.param import OBJECT_KIND, Param

if TYPE_CHECKING:
    from ...graph.spec import TaskSpec


def make_variant(base: TaskSpec, nout: int, plain: frozenset[str],
                 cons: tuple[Any, ...] | None, pin: str | None,
                 extra: tuple[tuple[str, Any], ...] | None = None, io: bool = False,
                 objects: frozenset[str] = frozenset()) -> TaskSpec:
    """A copy of ``base`` with ``nout`` outputs, the ``plain`` parameters as plain IN
    values (callargs.plain_params), the resolved constraints ``cons`` ((computing_units,
    memory_size, processors)), the node it must run on (a replica's, @constraint
    is_local's), invoker values decided per call (``extra``), and ``io``: an @IO task
    that holds no computing unit (the run has I/O executors). The ``objects`` parameters
    (collections given a future: callargs.future_collections) are one object of their
    declared direction."""
    v = copy.copy(base)
    if plain:
        v.params = {k: p for k, p in base.params.items() if k not in plain}
    if objects:
        v.params = {k: Param(kind=OBJECT_KIND, direction=p.direction)
                    if k in objects else p for k, p in v.params.items()}
    v.special = [(v.index.get(n), n, p) for n, p in v.params.items()
                 if not (p.kind == OBJECT_KIND and p.direction == "IN")]
    v.nout, v.returns_tuple = (nout, nout > 1)
    v.plain = not v.special and v.varargs is None and v.nout == 1
    nvar = dict(extra or ()).get("*", 0)
    if nvar:        # varargs_type: each of the call's *args values accessed as declared
        vp = base.wrapper.decl.varargs
        first = len(base.names)
        v.special = v.special + [(first + i, f"{base.varargs}[{i}]", vp) for i in range(nvar)]
        v.plain = False
        extra = tuple(kv for kv in extra or () if kv[0] != "*")
    if extra:
        v.override_program(dict(extra))
    if cons is not None:
        cu, mem, procs = cons
        v.set_constraints(computing_units=cu, memory_size=mem, processors=procs)
    if io:
        v.declare_io()
    v.pin = pin
    return v
