"""``pycompss.api.reduction``: ``@reduction(chunk_size=N)`` above ``@task``
(taskflow.compat.calls.reduction)."""
from __future__ import annotations

from typing import Any

from ....errors import UsageError
from ...argwarn import unexpected
from ...calls.taskfn import task_function


class reduction:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, chunk_size: Any = 2, **kwargs: Any) -> None:
        chunk_size = kwargs.pop("chunkSize", chunk_size)
        for key in kwargs:              # PyCOMPSs warns and goes on without it
            unexpected(key, "reduction", ("chunk_size",))
        self.chunk_size = chunk_size

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@reduction")
        colls = [n for n, p in tf.spec.params.items()
                 if p.kind == "collection" and p.direction in ("IN", "IN_DELETE")]
        if len(colls) != 1:
            raise UsageError(f"@reduction on {tf.spec.name}: the task needs exactly one "
                             f"COLLECTION_IN parameter (it has {len(colls)}).")
        if tf.decl.returns.fixed != 1 and tf.decl.returns.dynamic is None:
            raise UsageError(f"@reduction on {tf.spec.name}: the task must give one value "
                             f"(returns=1), the reduction of its chunk.")
        tf.decl.reduction = self.chunk_size
        tf.decl.reduction_param = colls[0]
        return tf


Reduction = reduction
