"""What PyCOMPSs's program decorators (@binary, @mpi, @mpmd_mpi, @ompss, @multinode,
@compss, @http) share: argument spellings, ``fail_by_exit_value`` as a bool or a
string, and attaching the invoker to a PyCOMPSs task.
"""
from __future__ import annotations

from typing import Any

from ..agent.invokers.words import needs_shell
from ..api.external import TEMPLATE, attach
from ..errors import UsageError
from ..graph.param import DIRECTORY_KIND, FILE_KIND
from .taskfn import CompatTaskFunction, task_function

ALIASES = {"workingDir": "working_dir", "failByExitValue": "fail_by_exit_value",
           "computingNodes": "computing_nodes", "processesPerNode": "processes_per_node",
           "scaleByCU": "scale_by_cu", "appName": "app_name", "workerInMaster":
           "worker_in_master", "serviceName": "service_name", "payloadType": "payload_type"}


def normalize(deco: str, kwargs: dict[str, Any], supported: tuple[str, ...],
              refused: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        k = ALIASES.get(key, key)
        if refused and k in refused:
            raise UsageError(f"@{deco}: {key}= {refused[k]}")
        if k not in supported:
            raise UsageError(f"@{deco}: unknown argument {key!r}; supported: "
                             f"{', '.join(supported)}.")
        out[k] = value
    return out


def fail_by_exit_value(value: Any, deco: str, default: bool = True) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise UsageError(f"@{deco}: fail_by_exit_value must be True/False (or 'true'/'false'), "
                     f"not {value!r}.")


def attach_program(target: Any, deco: str, kind: str, cfg: dict[str, Any],
                   outputs: bool = False) -> CompatTaskFunction:
    """Attach invoker ``kind`` to a PyCOMPSs task; argument lines read as bash would."""
    tf = task_function(target, f"@{deco}")
    spec = tf.spec
    for key in ("args", "flags"):
        text = cfg.get(key)
        if isinstance(text, str):
            why = needs_shell(TEMPLATE.sub("x", text))
            if why:
                raise UsageError(f"@{deco} on {spec.name}: {key}={text!r}: {why}.")
    attach(tf, kind, dict(cfg, shell_words=True), outputs=outputs)
    files = {n for n, p in spec.params.items() if p.kind in (FILE_KIND, DIRECTORY_KIND)}
    tf.decl.checks.append(lambda bound: _no_shell(spec.name, deco, bound, files))
    return tf


def _no_shell(name: str, deco: str, bound: dict[str, Any], files: set[str]) -> None:
    for pname, v in bound.items():
        if pname in files or not isinstance(v, str):
            continue
        why = needs_shell(v)
        if why:
            raise UsageError(f"@{deco} task {name}, parameter '{pname}': {v!r}: {why}.")
