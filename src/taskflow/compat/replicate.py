"""``@task(is_replicated=True)``: a call runs once on every node of the run.

One copy of the task is pinned to each usable node (a copy whose node is
lost before it ran runs on another one); the call gives back the first
copy's value, and ``compss_barrier`` waits for all of them. A replicated
task may not write its parameters: every copy would make its own version.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..runtime.runtime import Runtime
    from . import returns as R
    from .taskfn import CompatTaskFunction


def submit_replicas(tf: CompatTaskFunction, rt: Runtime, args: tuple[Any, ...],
                    kwargs: dict[str, Any], nout: int, none_files: frozenset[str],
                    cons: tuple[Any, ...] | None, rets: R.Returns) -> Any:
    first = None
    for node in [n for n in rt.nodes if n.usable]:
        v = tf.variant(nout, none_files, cons, pin=node.name)
        value = rt.submit(v, args, kwargs)
        if first is None:
            first = value
    return tf.shape(rt, first, nout, rets, None)
