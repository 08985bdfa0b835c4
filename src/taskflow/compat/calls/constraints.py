"""PyCOMPSs ``@constraint``: every documented key, values decided at each call.

``computing_units``, ``memory_size`` and ``processors`` (GPUs) shape where a
task runs, as taskflow's own ``@constraint``. A value may be a number, a
string holding one, ``"$ENV"`` / ``"${ENV}"``, the name of a parameter of
the task, the name of a module global of its module, or an expression of
the parameters; it is read when the task is called (PyCOMPSs's order of
lookups). The other keys only steer placement in COMPSs (processor
architecture and speed, memory type, storage, operating system, software,
queues, wall clock): taskflow accepts them and records them in the journal,
where ``taskflow status`` shows them; they change nothing here.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Any, Callable

from ...errors import UsageError
from ..argwarn import unexpected

# camelCase (PyCOMPSs's older spelling) -> snake_case
ALIASES = {
    "computingUnits": "computing_units", "memorySize": "memory_size",
    "memoryType": "memory_type", "storageSize": "storage_size", "storageType": "storage_type",
    "storageBW": "storage_bw", "operatingSystemType": "operating_system_type",
    "operatingSystemDistribution": "operating_system_distribution",
    "operatingSystemVersion": "operating_system_version", "wallClockLimit": "wall_clock_limit",
    "hostQueues": "host_queues", "appSoftware": "app_software",
    "processorArchitecture": "processor_architecture", "processorSpeed": "processor_speed",
    "processorName": "processor_name", "processorType": "processor_type",
    "processorPropertyName": "processor_property_name",
    "processorPropertyValue": "processor_property_value",
    "processorInternalMemorySize": "processor_internal_memory_size",
}
SHAPING = ("computing_units", "memory_size", "processors")
RECORDED = ("processor_architecture", "processor_speed", "processor_name", "processor_type",
            "processor_property_name", "processor_property_value",
            "processor_internal_memory_size", "memory_type", "storage_size", "storage_type",
            "storage_bw", "operating_system_type", "operating_system_distribution",
            "operating_system_version", "wall_clock_limit", "host_queues", "app_software")
_ENV = re.compile(r"^\$\{?(\w+)\}?$")


def normalize(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(values that shape placement, values only recorded); an unknown key is warned about
    (PyCOMPSs's warning) and ignored."""
    shaping: dict[str, Any] = {}
    recorded: dict[str, Any] = {}
    for key, value in kwargs.items():
        k = ALIASES.get(key, key)
        if k in SHAPING:
            shaping[k] = value
        elif k in RECORDED:
            recorded[k] = value if isinstance(value, (int, float, str, bool)) else repr(value)
        else:                       # PyCOMPSs warns and goes on without it
            unexpected(key, "constraint", SHAPING + RECORDED)
    return shaping, recorded


def is_static(value: Any) -> bool:
    if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    if isinstance(value, str):
        try:
            float(value)
            return True
        except ValueError:
            return False
    return not isinstance(value, str)


def resolve(raw: dict[str, Any], bound: dict[str, Any], func: Callable[..., Any],
            name: str) -> tuple[Any, ...]:
    """The call's (computing_units, memory_size, processors)."""
    cu = _number(raw.get("computing_units", 1), "computing_units", bound, func, name, 1)
    mem = _number(raw.get("memory_size", 0.0), "memory_size", bound, func, name, 0)
    if isinstance(cu, float) and cu.is_integer():
        cu = int(cu)
    if not isinstance(cu, int):
        raise UsageError(f"@constraint on {name}: computing_units={raw['computing_units']!r} "
                         f"gives {cu!r}, not a whole number of computing units.")
    procs = raw.get("processors")
    if procs is not None:
        procs = [dict(p) for p in procs]
        for p in procs:
            for k in ("computingUnits", "computing_units"):
                if k in p:
                    p[k] = _number(p[k], f"processors {k}", bound, func, name, 0)
    return (cu, float(mem), procs)


def _number(value: Any, key: str, bound: dict[str, Any], func: Callable[..., Any], name: str,
            minimum: int) -> Any:
    where = f"@constraint on {name}: {key}={value!r}"
    v = _lookup(value, where, bound, func)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise UsageError(f"{where} gives {v!r}, not a number; give a number, \"$ENV\", a "
                         f"parameter, a module global or an expression of the parameters.")
    if v < minimum:
        raise UsageError(f"{where} gives {v}, which is below {minimum}.")
    return v


def _lookup(value: Any, where: str, bound: dict[str, Any], func: Callable[..., Any]) -> Any:
    from ...future import Future
    if not isinstance(value, str):
        return value
    s = value.strip()
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    m = _ENV.match(s)
    if m:
        var = m.group(1)
        if var not in os.environ:
            raise UsageError(f"{where}: ${var} is not set in the environment when the task is "
                             f"called; export {var}=... before running, or give a number.")
        return _lookup(os.environ[var], where, bound, func)
    if s in bound:
        v = bound[s]
    elif s in getattr(func, "__globals__", {}):
        v = func.__globals__[s]
    else:
        g = getattr(func, "__globals__", {})
        v = _expression(s, where, {**{k: g[k] for k in g if not k.startswith("__")}, **bound})
    if isinstance(v, Future):
        raise UsageError(f"{where} is a future: constraints are decided when the task is "
                         f"called; compss_wait_on() it first.")
    return _lookup(v, where, bound, func) if isinstance(v, str) else v


_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Add,
          ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd)


def _expression(s: str, where: str, bound: dict[str, Any]) -> Any:
    try:
        tree = ast.parse(s, mode="eval")
    except SyntaxError:
        tree = None
    if tree is None or not all(isinstance(n, _NODES) for n in ast.walk(tree)):
        raise UsageError(f"{where} is neither a number, \"$ENV\", a parameter, a module global "
                         f"nor an arithmetic expression of the parameters.")
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    missing = sorted(names - set(bound))
    if missing:
        raise UsageError(f"{where} names {', '.join(missing)}, which is neither a parameter of "
                         f"the task nor a module global.")
    try:
        return eval(compile(tree, "<constraint>", "eval"), {"__builtins__": {}},  # noqa: S307
                    dict(bound))
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"{where}: evaluating it failed: {type(exc).__name__}: {exc}") from None
