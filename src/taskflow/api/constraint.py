"""``@constraint``: what a task needs from the node that runs it.

Stacks above ``@task`` (PyCOMPSs order) or below it. The core takes plain
numbers: ``computing_units`` (slots held while it runs) and ``memory_size``
(GB). A task no node can ever fit fails when it is called.

Values may also be ``"$ENV"`` strings or expressions of the task's
parameters (``computing_units="$NCPUS"``, ``"2 * n"``), evaluated when the
task is called (:mod:`taskflow.graph.expr`, :mod:`taskflow.runtime.calltime`). ``processors=[{processorType:
GPU, computingUnits: 1}]`` asks for GPUs: the task gets CUDA_VISIBLE_DEVICES.

``resources={"gpu": 0.25, "license": 1}`` asks for named resources the
nodes declare (the cluster file's ``resources:``): a count of tokens, whole
devices, or a fraction below 1 of one device that other tasks share (never
more than 1.0 of a device in use). ``variants=[{"gpus": 1, "cores": 4},
{"cores": 16}]`` gives alternatives: the first that fits when the task is
started is taken. The task's environment says what it got
(``TASKFLOW_RESOURCES``, ``TASKFLOW_VARIANT``, ``CUDA_VISIBLE_DEVICES``;
:func:`taskflow.task_resources`). See :mod:`taskflow.graph.resources`.

``memory_limit=True`` makes ``memory_size`` a limit as well: a call that
grows past it is stopped with :class:`~taskflow.errors.TaskMemoryExceeded`
(``Runtime(memory_limit=True)`` does so for every task that declares a
``memory_size``; ``memory_limit=False`` opts a function out of that).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from ..errors import UsageError
from ..graph.resources import request
from .hints import did_you_mean
from .task import TaskFunction

_KNOWN = {"computing_units", "memory_size", "processors", "memory_type", "storage_size",
          "storage_type", "operating_system_type", "host_queues", "app_software",
          "memory_limit", "resources", "variants"}


def _check(name: str, computing_units: Any, memory_size: Any) -> None:
    if isinstance(computing_units, str):
        computing_units = None           # "$ENV" or an expression: checked at call time
    if isinstance(memory_size, str):
        memory_size = None
    if computing_units is not None and (not isinstance(computing_units, int)
                                        or isinstance(computing_units, bool)
                                        or computing_units < 1):
        raise UsageError(f"@constraint on {name}: computing_units must be an int >= 1, "
                         f"not {computing_units!r}")
    if memory_size is not None and (not isinstance(memory_size, (int, float))
                                    or isinstance(memory_size, bool) or memory_size < 0):
        raise UsageError(f"@constraint on {name}: memory_size (GB) must be a number >= 0, "
                         f"not {memory_size!r}")


def _check_expressions(name: str, target: Any, **values: Any) -> None:
    """String values must be "$ENV" or expressions of the task's parameters."""
    import inspect
    from ..graph.expr import Expr
    func = target.spec.func if isinstance(target, TaskFunction) else target
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        params = []
    for key, v in values.items():
        if isinstance(v, str):
            try:
                Expr(v, f"@constraint on {name}: {key}", params)
            except UsageError as exc:
                what = "an int >= 1" if key == "computing_units" else "a number >= 0 (GB)"
                raise UsageError(f"@constraint on {name}: {key} must be {what}, a \"$ENV\" "
                                 f"string or an expression of the parameters; {exc}") from None


def constraint(computing_units: int | str | None = None, memory_size: float | str | None = None,
               *, processors: list[Mapping[str, object]] | None = None,
               memory_limit: bool | None = None,
               resources: Mapping[str, float] | None = None,
               variants: list[Mapping[str, float]] | None = None,
               **others: object) -> Callable[..., Any]:
    """Declare what the task needs: slots, memory (GB), GPUs, named resources, variants (see
    the module docstring). ``constraint(resources={...})(task_function)`` sets them on a
    task already made (``taskflow map`` does: its ``--resource NAME=AMOUNT``).

    Example::

        from taskflow import constraint, task, wait_on

        @constraint(computing_units=2, memory_size=0.5)
        @task(returns=int)
        def busy(n: int) -> int:                          # holds 2 slots while it runs
            return sum(i * i for i in range(n))

        print(wait_on(busy(1000)))                        # 332833500

    :param computing_units: slots held while it runs (an int >= 1, ``"$VAR"`` or an
        expression of the parameters); a program sees it as ``OMP_NUM_THREADS``.
    :param memory_size: GB it needs (a number, ``"$VAR"`` or an expression).
    :param processors: PyCOMPSs's form for GPUs: ``[{"processorType": "GPU",
        "computingUnits": 1}]``.
    :param memory_limit: ``True``: ``memory_size`` is also a limit (``TaskMemoryExceeded``).
    :param resources: named resources the nodes declare: ``{"gpu": 0.25, "license": 1}``.
    :param variants: alternatives, the first that fits is taken: ``[{"gpus": 1, "cores":
        4}, {"cores": 16}]``.
    :param others: PyCOMPSs's other keys (``memory_type``, ``storage_size``, ...), accepted
        and not used; an unknown key is refused with the closest known one.
    """
    unknown = sorted(set(others) - _KNOWN)
    if unknown:
        known = ["computing_units", "memory_size", *sorted(_KNOWN - {"computing_units",
                                                                      "memory_size"})]
        raise UsageError(f"@constraint: unknown argument {unknown[0]!r}."
                         f"{did_you_mean(unknown[0], known)} Known: {', '.join(known)}.")

    limit = memory_limit

    def decorate(target: Any) -> Any:
        name = getattr(target, "__qualname__", repr(target))
        _check(name, computing_units, memory_size)
        if limit is not None and not isinstance(limit, bool):
            raise UsageError(f"@constraint on {name}: memory_limit must be True or False, "
                             f"not {limit!r}")
        if limit and memory_size is None:
            raise UsageError(f"@constraint on {name}: memory_limit=True limits the task to its "
                             f"memory_size, which is not given; add memory_size=<GB>")
        _check_expressions(name, target, computing_units=computing_units,
                           memory_size=memory_size)
        values: dict[str, Any] = {"computing_units": computing_units,
                                  "memory_size": memory_size, "processors": processors,
                                  "memory_limit": limit}
        if resources is not None or variants is not None:
            where = f"@constraint on {name}"
            request(resources, variants, where)   # (checks now)
            values.update(resources=resources, variants=variants)
        if isinstance(target, TaskFunction):
            target.spec.set_constraints(**values)
            return target
        if callable(target):
            target.__taskflow_constraint__ = values
            return target
        raise UsageError(f"@constraint must decorate a task or a function, not {target!r}")

    return decorate
