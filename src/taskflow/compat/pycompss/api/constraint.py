"""``pycompss.api.constraint``: ``@constraint(computing_units=..., memory_size=..., ...)``.

Above ``@task`` (and above ``@binary`` / ``@mpi`` / ...). ``computing_units``,
``memory_size`` (GB) and ``processors`` decide where the task runs; their
values may be numbers, ``"$ENV"``, a parameter's name, a module global's
name or an expression of the parameters, read at each call. Every other
documented key (``processor_architecture``, ``operating_system_type``,
``app_software``, ``host_queues``, ``storage_size``, ...; camelCase too) is
accepted and recorded in the journal: it only steers placement in COMPSs.
``is_local=True`` runs the task on the master's own node. An unknown key is
warned about and ignored, as PyCOMPSs does. See :mod:`taskflow.compat.calls.constraints`.
"""
from __future__ import annotations

from typing import Any

from ....errors import UsageError
from ...calls import constraints as C
from ...calls.taskfn import CompatTaskFunction


class constraint:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args:
            raise UsageError(f"@constraint takes keyword arguments only, got {args!r}.")
        kw = dict(kwargs)
        local = kw.pop("is_local", kw.pop("isLocal", False))
        self.is_local = local is True or str(local).strip().lower() == "true"
        self.shaping, self.recorded = C.normalize(kw)

    def __call__(self, target: Any) -> Any:
        if not isinstance(target, CompatTaskFunction):
            if callable(target):          # below @task: @task picks it up
                target.__compat_constraint__ = (self.shaping, self.recorded, self.is_local)
                return target
            raise UsageError(f"@constraint must decorate a task, not {target!r}.")
        apply(target, self.shaping, self.recorded, self.is_local)
        return target


def apply(tf: CompatTaskFunction, shaping: dict[str, Any], recorded: dict[str, Any],
          is_local: bool = False) -> None:
    spec = tf.spec
    if is_local:                    # runs on the master's own node (compat.calls.placing)
        tf.decl.is_local = True
    if recorded:
        spec.record_hints(**recorded)
    if not shaping:
        return
    dynamic = any(not C.is_static(v) for k, v in shaping.items() if k != "processors")
    procs = shaping.get("processors")
    if procs is not None:
        if not isinstance(procs, list) or not all(isinstance(p, dict) for p in procs):
            raise UsageError(f"@constraint on {spec.name}: processors must be a list of dicts "
                             f"like {{'processorType': 'GPU', 'computingUnits': 1}}.")
        dynamic = dynamic or any(not C.is_static(p.get("computingUnits",
                                                       p.get("computing_units", 1)))
                                 for p in procs)
    if dynamic:
        tf.decl.constraints = dict(tf.decl.constraints, **shaping)
        return
    cu = shaping.get("computing_units")
    mem = shaping.get("memory_size")
    spec.set_constraints(computing_units=int(float(cu)) if cu is not None else None,
                         memory_size=float(mem) if mem is not None else None,
                         processors=procs)


Constraint = constraint
