"""``pycompss.api.software``: ``@software(config_file="description.json")``.

The task is described in a JSON file instead of decorators, on a plain
function or on one declared with ``@task`` already (that declaration stands;
the file's execution, constraints, prolog and epilog wrap it)::

    {"execution": {"type": "mpi", "runner": "mpirun", "binary": "app.bin",
                   "processes": 2, "working_dir": "{{work_dir}}", "args": "-d {{d}}"},
     "parameters": {"returns": 1, "out_tgz": "FILE_OUT"},
     "constraints": {"computing_units": 2},
     "prolog": {"binary": "mkdir", "args": "-p {{work_dir}}"},
     "epilog": {"binary": "tar", "args": "zcf {{out_tgz}} {{work_dir}}"}}

``execution.type``: task, binary, mpi, mpmd_mpi, multinode, http, compss,
ompss (the rest of ``execution`` are that decorator's arguments: one it does
not know is warned about and ignored, as PyCOMPSs does), or workflow (the
function runs as it is, as main-program code); ``parameters``: ``@task``'s
(directions by name, e.g. ``"FILE_IN"``; ``"returns": "int"`` is that type);
``constraints``: ``@constraint``'s; ``prolog`` / ``epilog``; ``container``:
``@container``'s (``engine``, ``image``, ``options``). The file
is read when the task is declared, relative to the current directory, else
to the application's file; every mistake names the file and the key.
"""
from __future__ import annotations

import builtins
import json
import os
import sys
from typing import Any, Callable

from ....errors import UsageError
from ...argwarn import unexpected
from ...calls.taskfn import CompatTaskFunction

_TYPES = ("task", "workflow", "binary", "mpi", "mpmd_mpi", "multinode", "http", "compss",
          "ompss")
_SECTIONS = ("execution", "parameters", "constraints", "prolog", "epilog", "container")


class software:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, config_file: str | None = None, **kwargs: Any) -> None:
        for key in kwargs:
            unexpected(key, "software", ("config_file",))
        if not config_file:
            raise UsageError("@software: the config_file argument is mandatory (a JSON file).")
        self.config_file = config_file

    def __call__(self, func: Callable[..., Any]) -> Any:
        target = func.__wrapped__ if isinstance(func, CompatTaskFunction) else func
        path = _find(self.config_file, target)
        try:
            with open(path) as f:
                desc = json.load(f)
        except (OSError, ValueError) as exc:
            raise UsageError(f"@software on {target.__qualname__}: cannot read {path}: "
                             f"{exc}") from None
        return build(func, desc, path)


def _find(config: str, func: Callable[..., Any]) -> str:
    if os.path.isabs(config) or os.path.exists(config):
        return os.path.abspath(config)
    mod = sys.modules.get(getattr(func, "__module__", ""), None)
    base = os.path.dirname(getattr(mod, "__file__", "") or "")
    return os.path.abspath(os.path.join(base, config)) if base else os.path.abspath(config)


def task_arguments(params: dict[str, Any]) -> dict[str, Any]:
    """The ``parameters`` section as ``@task``'s keywords: a direction's name is that
    constant, ``returns`` naming a builtin (``"int"``, ``"list"``) is that type."""
    from . import parameter as PM
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, str) and hasattr(PM, v):
            v = getattr(PM, v)
        elif k == "returns" and isinstance(v, str) and isinstance(getattr(builtins, v, None),
                                                                  type):
            v = getattr(builtins, v)
        out[k] = v
    return out


def build(func: Callable[..., Any], desc: Any, path: str) -> Any:
    """The task ``desc`` describes, around ``func`` (a plain function, or a task declared
    already: that declaration stands and the description's execution, constraints,
    prolog and epilog wrap it)."""
    from . import constraint as C
    from . import epilog as E
    from . import prolog as P
    from .task import task
    declared = isinstance(func, CompatTaskFunction)
    name = getattr(getattr(func, "__wrapped__", func), "__qualname__", repr(func))
    where = f"@software on {name} ({path})"
    if not isinstance(desc, dict):
        raise UsageError(f"{where}: the description must be a JSON object.")
    unknown = sorted(set(desc) - set(_SECTIONS))
    if unknown:
        raise UsageError(f"{where}: unknown section(s) {unknown}; known: {', '.join(_SECTIONS)}.")
    if "container" in desc and not isinstance(desc["container"], dict):
        raise UsageError(f"{where}: 'container' must be an object like {{\"engine\": "
                         f"\"PODMAN\", \"image\": \"...\"}}.")
    execution = desc.get("execution")
    if not isinstance(execution, dict) or "type" not in execution:
        raise UsageError(f"{where}: 'execution' with a 'type' is mandatory.")
    ex = dict(execution)
    kind = str(ex.pop("type")).lower()
    if kind not in _TYPES:
        raise UsageError(f"{where}: execution.type {kind!r} is not one of {', '.join(_TYPES)}.")
    if kind == "workflow":              # PyCOMPSs runs the function itself, as main code
        return func
    params = desc.get("parameters") or {}
    if not isinstance(params, dict):
        raise UsageError(f"{where}: 'parameters' must be an object.")
    try:
        tf: Any = func if declared else task(**task_arguments(params))(func)
        if kind != "task":
            import importlib
            mod = importlib.import_module(f"{__package__}.{kind}")
            tf = getattr(mod, kind)(**ex)(tf)
        elif ex:
            for key in ex:
                unexpected(key, "task")
        if desc.get("container"):       # (@container is below @constraint)
            from .container import container
            tf = container(**desc["container"])(tf)
        if desc.get("constraints"):
            tf = C.constraint(**desc["constraints"])(tf)
        if desc.get("prolog"):
            tf = P.prolog(**desc["prolog"])(tf)
        if desc.get("epilog"):
            tf = E.epilog(**desc["epilog"])(tf)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
    except TypeError as exc:
        raise UsageError(f"{where}: {exc}") from None
    return tf


Software = software
