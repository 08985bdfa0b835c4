"""``pycompss.api.on_failure``: ``@on_failure(management=..., **defaults)``.

``management``: RETRY (default: run again, on another node when there is
one, then fail), FAIL (the run fails), IGNORE (the outputs take defaults,
successors run), CANCEL_SUCCESSORS (outputs take defaults, successors are
cancelled). The other keywords give those defaults: ``returns=0`` for the
return value(s), ``name=value`` for an INOUT / OUT object, ``name="/path"``
for a FILE_OUT / FILE_INOUT (the file is copied in as the task's output).
Without a default, an output is ``None``.
"""
from __future__ import annotations

from typing import Any

from ....errors import UsageError
from ...calls.taskfn import task_function

MANAGEMENT = ("RETRY", "FAIL", "IGNORE", "CANCEL_SUCCESSORS")


class on_failure:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, management: Any = None, **defaults: Any) -> None:
        if management is None:
            raise UsageError("@on_failure: the management argument is mandatory (RETRY, FAIL, "
                             "IGNORE or CANCEL_SUCCESSORS).")
        m = str(management).upper()
        if m not in MANAGEMENT:
            raise UsageError(f"@on_failure: management={management!r} is not one of "
                             f"{', '.join(MANAGEMENT)}.")
        self.management = m
        self.defaults = defaults

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@on_failure")
        spec = tf.spec
        names = set(spec.signature.parameters) | {"returns"}
        unknown = sorted(set(self.defaults) - names)
        if unknown:
            raise UsageError(f"@on_failure on {spec.name}: default(s) for {unknown}, which are "
                             f"neither 'returns' nor parameters of {spec.name}.")
        spec.set_failure_policy(self.management, self.defaults)
        return tf


OnFailure = on_failure
onFailure = on_failure  # noqa: N816
