"""``pycompss.api.software``: ``@software(config_file="description.json")``.

The task is described in a JSON file instead of decorators (on a plain
function, no ``@task`` below it)::

    {"execution": {"type": "mpi", "runner": "mpirun", "binary": "app.bin",
                   "processes": 2, "working_dir": "{{work_dir}}", "args": "-d {{d}}"},
     "parameters": {"returns": 1, "out_tgz": "FILE_OUT"},
     "constraints": {"computing_units": 2},
     "prolog": {"binary": "mkdir", "args": "-p {{work_dir}}"},
     "epilog": {"binary": "tar", "args": "zcf {{out_tgz}} {{work_dir}}"}}

``execution.type``: task, binary, mpi, mpmd_mpi, multinode, http, compss,
workflow (the rest of ``execution`` are that decorator's arguments);
``parameters``: ``@task``'s (directions by name, e.g. ``"FILE_IN"``);
``constraints``: ``@constraint``'s; ``prolog`` / ``epilog``. A ``container``
section is refused (containers come with taskflow's own support). The file
is read when the task is declared, relative to the current directory, else
to the application's file; every mistake names the file and the key.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable

from ....errors import UsageError
from .parameter import to_native  # noqa: F401 - directions are checked by @task

_TYPES = ("task", "workflow", "binary", "mpi", "mpmd_mpi", "multinode", "http", "compss",
          "ompss")
_SECTIONS = ("execution", "parameters", "constraints", "prolog", "epilog", "container")


class software:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, config_file: str | None = None, **kwargs: Any) -> None:
        if kwargs or args or not config_file:
            raise UsageError("@software takes one argument, config_file (a JSON file).")
        self.config_file = config_file

    def __call__(self, func: Callable[..., Any]) -> Any:
        path = _find(self.config_file, func)
        try:
            with open(path) as f:
                desc = json.load(f)
        except (OSError, ValueError) as exc:
            raise UsageError(f"@software on {func.__qualname__}: cannot read {path}: "
                             f"{exc}") from None
        return build(func, desc, path)


def _find(config: str, func: Callable[..., Any]) -> str:
    if os.path.isabs(config) or os.path.exists(config):
        return os.path.abspath(config)
    mod = sys.modules.get(getattr(func, "__module__", ""), None)
    base = os.path.dirname(getattr(mod, "__file__", "") or "")
    return os.path.abspath(os.path.join(base, config)) if base else os.path.abspath(config)


def build(func: Callable[..., Any], desc: Any, path: str) -> Any:
    from . import constraint as C
    from . import epilog as E
    from . import prolog as P
    from .task import task
    where = f"@software on {func.__qualname__} ({path})"
    if not isinstance(desc, dict):
        raise UsageError(f"{where}: the description must be a JSON object.")
    unknown = sorted(set(desc) - set(_SECTIONS))
    if unknown:
        raise UsageError(f"{where}: unknown section(s) {unknown}; known: {', '.join(_SECTIONS)}.")
    if "container" in desc:
        raise UsageError(f"{where}: a container section (a task run in a container) is not "
                         f"supported by taskflow's PyCOMPSs layer; run the program directly.")
    execution = desc.get("execution")
    if not isinstance(execution, dict) or "type" not in execution:
        raise UsageError(f"{where}: 'execution' with a 'type' is mandatory.")
    ex = dict(execution)
    kind = str(ex.pop("type")).lower()
    if kind not in _TYPES:
        raise UsageError(f"{where}: execution.type {kind!r} is not one of {', '.join(_TYPES)}.")
    params = desc.get("parameters") or {}
    if not isinstance(params, dict):
        raise UsageError(f"{where}: 'parameters' must be an object.")
    from . import parameter as PM
    task_kw = {}
    for k, v in params.items():
        task_kw[k] = getattr(PM, v) if isinstance(v, str) and hasattr(PM, v) else v
    try:
        tf: Any = task(**task_kw)(func)
        if kind in ("binary", "mpi", "mpmd_mpi", "multinode", "http", "compss", "ompss"):
            import importlib
            mod = importlib.import_module(f"{__package__}.{kind}")
            tf = getattr(mod, kind)(**ex)(tf)
        elif kind == "workflow":
            from ...external import fail_by_exit_value
            from ....api.workflow import attach_workflow
            attach_workflow(tf, ex.get("script", ""), args=ex.get("args"),
                            computing_nodes=ex.get("computing_nodes", 1),
                            working_dir=ex.get("working_dir"), flags=ex.get("flags"),
                            fail_by_exit_value=fail_by_exit_value(ex.get("fail_by_exit_value"),
                                                                  "software"))
        elif ex:
            raise UsageError(f"execution type 'task' takes no other key (got {sorted(ex)})")
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
