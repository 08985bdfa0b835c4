"""What PyCOMPSs's program decorators (@binary, @mpi, @mpmd_mpi, @ompss, @multinode,
@compss, @http, @prolog, @epilog) share: argument spellings, PyCOMPSs's warning for an
argument it does not know, ``fail_by_exit_value`` as a bool or a string, and attaching the
invoker to a PyCOMPSs task with its command line read as runcompss's bash reads it.
"""
from __future__ import annotations

from typing import Any

from ..api.external import attach
from ..errors import UsageError
from ..wire.template import PLACEHOLDER, check
from .argwarn import unexpected
from .calls.taskfn import CompatTaskFunction, task_function

ALIASES = {"workingDir": "working_dir", "failByExitValue": "fail_by_exit_value",
           "computingNodes": "computing_nodes", "processesPerNode": "processes_per_node",
           "scaleByCU": "scale_by_cu", "appName": "app_name", "workerInMaster":
           "worker_in_master", "serviceName": "service_name", "payloadType": "payload_type"}


def normalize(deco: str, kwargs: dict[str, Any], supported: tuple[str, ...],
              refused: dict[str, str] | None = None) -> dict[str, Any]:
    """The arguments under their current names; an unknown one is warned about and ignored,
    as PyCOMPSs does; a ``refused`` one is an error saying why."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        k = ALIASES.get(key, key)
        if refused and k in refused:
            raise UsageError(f"@{deco}: {key}= {refused[k]}")
        if k not in supported:
            unexpected(key, deco, supported)
            continue
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


COUNTS = ("processes", "computing_nodes", "processes_per_node")


def counts_per_call(tf: CompatTaskFunction, cfg: dict[str, Any]) -> dict[str, Any]:
    """``processes`` / ``computing_nodes`` / ``processes_per_node`` as PyCOMPSs reads them at
    every call: a number, a numeric string, ``$ENV`` / ``${ENV}`` (runtime.calltime), a
    parameter, else the name of a global of the task's module, looked up when the task is
    called (it need not exist when the task is declared: ``taskfn._cfg_extra``)."""
    params = set(tf.spec.signature.parameters)
    out = dict(cfg)
    for key in COUNTS:
        v = out.get(key)
        if not isinstance(v, str):
            continue
        s = v.strip()
        try:
            out[key] = int(s)
            continue
        except ValueError:
            pass
        if s.isidentifier() and s not in params:
            tf.decl.cfg_globals[key] = s
            out[key] = 1                # (the variant of each call holds the global's value)
    return out


def attach_program(target: Any, deco: str, kind: str, cfg: dict[str, Any],
                   outputs: bool = False) -> CompatTaskFunction:
    """Attach invoker ``kind`` to a PyCOMPSs task; its command line is read as runcompss's
    bash reads it, each parameter value one argument (wire.template, agent.executor.invokers.words)."""
    tf = task_function(target, f"@{deco}")
    spec = tf.spec
    for key in ("args", "flags"):
        text = cfg.get(key)
        if isinstance(text, str):
            why = check(PLACEHOLDER.sub("x", text))
            if why:
                raise UsageError(f"@{deco} on {spec.name}: {key}={text!r}: {why}.")
    attach(tf, kind, dict(cfg, bash_words=True), outputs=outputs)
    return tf
