"""``@reduction(chunk_size=N)``: one call reduces its collection in a tree of tasks.

The task's one ``COLLECTION_IN`` parameter is cut into chunks of
``chunk_size`` values; the task runs on each chunk, then on chunks of those
results, until one value is left, which the call gives back. ``chunk_size``
may be a number, a string holding one, ``"$ENV"`` or a module global's name.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...graph.expr import bind
from ...errors import UsageError
from ...runtime import embedded

if TYPE_CHECKING:
    from .decl import CompatTask


def chunk_size(tf: CompatTask, raw: Any) -> int:
    where = f"@reduction on {tf.spec.name}: chunk_size={raw!r}"
    v = raw
    if isinstance(v, str):
        s = v.strip()
        if s.startswith("$"):
            name = s.strip("${}")
            if name not in os.environ:
                raise UsageError(f"{where}: ${name} is not set in the environment.")
            s = os.environ[name]
        elif s.isidentifier():
            g = getattr(tf.__wrapped__, "__globals__", {})
            if s not in g:
                raise UsageError(f"{where} names no module global of {tf.spec.module}.")
            s = str(g[s])
        try:
            v = int(s)
        except ValueError:
            raise UsageError(f"{where} is not a number.") from None
    if not isinstance(v, int) or isinstance(v, bool) or v < 2:
        raise UsageError(f"{where}: a reduction needs chunks of at least 2 values.")
    return v


def reduce_call(tf: CompatTask, args: tuple[Any, ...], kwargs: dict[str, Any],
                call_returns: Any) -> Any:
    from . import returns as R
    decl = tf.decl
    name = decl.reduction_param
    assert name is not None and decl.reduction is not None
    bound = bind(tf.spec, args, kwargs)
    values = bound.get(name)
    if not isinstance(values, (list, tuple)):
        raise UsageError(f"@reduction task {tf.spec.name}: parameter '{name}' must be a list, "
                         f"got {type(values).__name__}.")
    n = chunk_size(tf, decl.reduction)
    rt = embedded.get_or_start()
    items = list(values)
    if not items:
        raise UsageError(f"@reduction task {tf.spec.name}: '{name}' is empty; nothing to reduce.")
    while True:
        chunks = [items[i:i + n] for i in range(0, len(items), n)]
        results = []
        for chunk in chunks:
            call = dict(bound, **{name: chunk})
            results.append(tf.submit(rt, (), call, R.UNSET if call_returns is R.UNSET
                                     else call_returns))
        if len(results) == 1:
            return results[0]
        items = results
