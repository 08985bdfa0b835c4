"""``@implement``: alternative implementations of a task, chosen by their constraints.

An alternative says which task it implements (``source_class``: the module,
or ``module.Class`` for a method; ``method``: its name). When the task is
called, the first implementation (the task itself first, then the
alternatives in the order they were declared) whose ``computing_units`` /
``memory_size`` fit the free room of some node *now* runs; if none fits now,
the first one that some node can ever hold waits for room. Constraints with
no taskflow meaning (``app_software``, ...) do not exclude an implementation.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ...runtime import embedded

if TYPE_CHECKING:
    from .decl import CompatTask

# (source_class, method) -> alternatives, filled at decoration time (the task may come later)
ALTERNATIVES: dict[tuple[str, str], list[CompatTask]] = {}


def register(alt: CompatTask, source_class: str, method: str) -> None:
    ALTERNATIVES.setdefault((source_class, method), []).append(alt)


def _keys(tf: CompatTask) -> list[tuple[str, str]]:
    spec = tf.spec
    mod = spec.module
    parts = spec.name.split(".")
    cls = ".".join(parts[:-1])
    names = [mod]
    if mod == "__main__":
        main = sys.modules.get("__main__")
        path = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv else "")
        if path:
            names.append(os.path.splitext(os.path.basename(path))[0])
    keys = []
    for m in names:
        keys.append((f"{m}.{cls}" if cls else m, parts[-1]))
        if cls:
            keys.append((cls, parts[-1]))
    return keys


def alternatives(tf: CompatTask) -> list[CompatTask]:
    out: list[CompatTask] = []
    for key in _keys(tf):
        out.extend(a for a in ALTERNATIVES.get(key, ()) if a not in out)
    return out


def choose(tf: CompatTask, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The implementation this call runs (see the module docstring)."""
    alts = alternatives(tf)
    if not alts:
        return tf
    rt = embedded.get_or_start()
    impls = [tf] + alts
    nodes = [n for n in rt.nodes if n.usable]
    fitting_ever = []
    for impl in impls:
        cu, mem = _needs(impl, args, kwargs)
        if any(n.slots >= cu and n.memory_gb >= mem for n in nodes):
            fitting_ever.append(impl)
            if any(n.slots - n.used >= cu and n.memory_gb - n.mem_used >= mem for n in nodes):
                return impl
    if fitting_ever:
        return fitting_ever[0]
    raise UsageError(f"task {tf.spec.name}: no implementation ({', '.join(i.spec.name for i in impls)}) "
                     f"fits any node of this run; lower their @constraint or add nodes.")


def _needs(impl: CompatTask, args: tuple[Any, ...], kwargs: dict[str, Any]
           ) -> tuple[int, float]:
    if impl.decl.constraints:
        from ...graph.expr import bind
        from .constraints import resolve
        cu, mem, _ = resolve(impl.decl.constraints, bind(impl.spec, args, kwargs),
                             impl.__wrapped__, impl.spec.name)
        return cu, mem
    cu = impl.spec.computing_units
    return (cu if isinstance(cu, int) else 1), float(impl.spec.memory_size or 0)
