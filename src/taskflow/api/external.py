"""What @binary, @mpi, @ompss and @multinode share on the master side.

Declaration time (:func:`attach`): check the decorator's arguments, record
the static part of the configuration in ``spec.invoker_cfg`` and switch the
task's invoker. Call time (:func:`call_options`): expand ``$VAR`` in the
decorator values, evaluate ``processes`` / ``computing_nodes`` expressions,
check the binary exists and the cluster can ever give the processes, and put
it all in the task's own options (what the node-side invoker reads).
"""
from __future__ import annotations

import os
import re
import shutil
import time
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from . import calltime
from .parameter import DIRECTORY_KIND, FILE_KIND, OBJECT_KIND
from .task import TaskFunction

if TYPE_CHECKING:
    from ..providers.handle import NodeHandle
    from ..runtime.runtime import Runtime

TEMPLATE = re.compile(r"\{\{\s*(\w+)\s*\}\}")
RUNNERS = ("mpirun", "mpiexec", "srun")


def check_arguments(deco: str, given: dict[str, Any], mandatory: tuple[str, ...],
                    supported: tuple[str, ...]) -> None:
    missing = [a for a in mandatory if given.get(a) is None]
    if missing:
        raise UsageError(f"@{deco}: missing mandatory argument(s) {', '.join(missing)}.")
    unknown = sorted(set(given) - set(mandatory) - set(supported))
    if unknown:
        raise UsageError(f"@{deco}: unknown argument(s) {', '.join(unknown)}; supported: "
                         f"{', '.join(mandatory + supported)}.")


def attach(target: Any, deco: str, cfg: dict[str, Any], outputs: bool = False) -> TaskFunction:
    """Make the task ``target`` run through the ``deco`` invoker with ``cfg``.

    ``outputs``: the invoker gives the task's values itself (an mpi4py function's
    per-rank values, a REST answer), so several are allowed.
    """
    if not isinstance(target, TaskFunction):
        raise UsageError(f"@{deco} must be placed above @task (order: @constraint -> @{deco} "
                         f"-> @task), not on {getattr(target, '__qualname__', target)!r}.")
    spec = target.spec
    if spec.invoker != "python":
        raise UsageError(f"@{deco} on {spec.name}: the task already runs as @{spec.invoker}; "
                         f"use one external-program decorator per task.")
    if spec.container is not None and (deco == "multinode" or (deco == "mpi" and not cfg.get("binary"))):
        raise UsageError(f"@{deco} on {spec.name}: this task cannot run in the @container put below "
                         f"it; @container goes above @{deco} (and @mpi needs binary= there).")
    if spec.nout > 1 and not outputs:
        raise UsageError(f"@{deco} on {spec.name}: an external program gives one value (its "
                         f"exit code); use returns=int or no returns.")
    names = list(spec.signature.parameters)
    tmpl = cfg.get("args")
    if tmpl is not None:
        if not isinstance(tmpl, str):
            raise UsageError(f"@{deco} on {spec.name}: args must be a string template like "
                             f"'-i {{{{infile}}}} -n {{{{n}}}}', not {tmpl!r}.")
        for n in TEMPLATE.findall(tmpl):
            if n not in names:
                raise UsageError(f"@{deco} on {spec.name}: args names {{{{{n}}}}}, which is not "
                                 f"a parameter of {spec.name}({', '.join(names)}).")
    fbev = cfg.get("fail_by_exit_value")
    if not isinstance(fbev, bool):
        raise UsageError(f"@{deco} on {spec.name}: fail_by_exit_value must be True or False, "
                         f"not {fbev!r}.")
    for key in ("binary", "working_dir", "flags", "runner"):
        v = cfg.get(key)
        if v is not None and not isinstance(v, str):
            raise UsageError(f"@{deco} on {spec.name}: {key} must be a string, not {v!r}.")
    params = {}
    for pname, p in spec.params.items():
        if p.kind != OBJECT_KIND or p.prefix is not None:
            params[pname] = (p.kind, p.direction, p.stream, p.prefix)
    cfg = dict(cfg, kind=deco, params=params, order=names,
               varargs=spec.varargs, varkw=spec.varkw)
    for key in ("processes", "processes_per_node", "computing_nodes"):
        if cfg.get(key) is not None:
            cfg[key] = calltime.Expr(cfg[key], f"@{deco} on {spec.name}: {key}", names)
    spec.invoker = deco
    spec.invoker_cfg = cfg
    calltime.refresh(spec)
    return target


def _wire_cfg(cfg: dict[str, Any], bound: dict[str, Any] | None, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in cfg.items():
        if isinstance(v, calltime.Expr):
            out[k] = calltime.as_int(calltime.expand_all(v.value(bound), where),
                                     f"{where}: {k}")
        elif k in ("binary", "working_dir", "flags", "args", "runner", "script") \
                and isinstance(v, str):
            # (read as bash would, PyCOMPSs's args expand $VAR on the node, where they run)
            out[k] = v if k == "args" and cfg.get("shell_words") else \
                calltime.expand_env(v, f"{where}: {k}")
        elif k == "programs":           # @mpmd_mpi: one binary and args per program
            out[k] = [{pk: calltime.expand_env(pv, f"{where}: programs[{i}].{pk}")
                       if pk in ("binary", "args") and isinstance(pv, str) else pv
                       for pk, pv in prog.items()} for i, prog in enumerate(v)]
        else:
            out[k] = v
    return out


# binary -> (PATH, where it was found, when it was last seen executable there): a PATH
# search is ~30 us of stat calls per call; a program found is looked at again after RECHECK s
# (the node checks again before it starts it, and says so if it is gone)
_FOUND: dict[str, tuple[str | None, str, float]] = {}
RECHECK = 1.0


def _shared_fs(nodes: list[NodeHandle]) -> bool:
    """Every node sees the master's files (looked at again only when nodes join)."""
    if _SHARED[0] is not nodes or _SHARED[1] != len(nodes):
        _SHARED[:] = [nodes, len(nodes), all(getattr(n, "shared_fs", True) for n in nodes)]
    return bool(_SHARED[2])


_SHARED: list[Any] = [None, 0, True]     # the runtime's node list, its length, the answer


def _check_binary(binary: str, working_dir: str | None, where: str, nodes: list[NodeHandle]) -> None:
    if not _shared_fs(nodes):
        return                      # only the node can tell; it reports the same way
    if working_dir and "{{" in working_dir and not os.path.isabs(binary):
        return                      # a working directory made of parameters: the node checks
    if os.sep in binary:
        path = binary if os.path.isabs(binary) else \
            os.path.abspath(os.path.join(working_dir or os.getcwd(), binary))
        if not os.path.exists(path):
            raise UsageError(f"{where}: binary {path} does not exist. Fix the path (relative "
                             f"paths are taken from working_dir, else the current directory).")
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise UsageError(f"{where}: binary {path} is not executable; chmod +x it or fix "
                             f"the path.")
        return
    env_path = os.environ.get("PATH")
    found = _FOUND.get(binary)
    if found is not None and found[0] == env_path:
        now = time.monotonic()
        if now - found[2] < RECHECK or os.access(found[1], os.X_OK):
            if now - found[2] >= RECHECK:
                _FOUND[binary] = (env_path, found[1], now)
            return              # found on the same PATH, executable when last looked at
    on_path = shutil.which(binary)
    if on_path is not None:
        if len(_FOUND) > 1024:
            _FOUND.clear()
        _FOUND[binary] = (env_path, on_path, time.monotonic())
        return
    raise UsageError(f"{where}: binary '{binary}' was not found on PATH "
                     f"({os.environ.get('PATH', '')}); give an absolute path or install it.")


def gang_request(cfg: dict[str, Any], cus: int, gpus: int, where: str) -> dict[str, Any] | None:
    """How many slots on how many nodes; None when an ordinary placement does."""
    kind = cfg["kind"]
    if kind == "mpi":
        procs = cfg.get("processes") or 1
        ppn, nnodes = cfg.get("processes_per_node"), cfg.get("computing_nodes")
        if ppn and nnodes and ppn * nnodes != procs:
            raise UsageError(f"{where}: processes={procs} is not processes_per_node={ppn} x "
                             f"computing_nodes={nnodes}; give two of them.")
        if ppn and procs % ppn:
            raise UsageError(f"{where}: processes={procs} is not a multiple of "
                             f"processes_per_node={ppn}.")
        if nnodes and not ppn:
            if procs % nnodes:
                raise UsageError(f"{where}: processes={procs} does not split evenly over "
                                 f"computing_nodes={nnodes}; give processes_per_node.")
            ppn = procs // nnodes
        return {"procs": procs, "ppn": ppn, "unit": cus, "gpus": gpus}
    nnodes = cfg.get("computing_nodes") or 1
    if kind in ("multinode", "ompss", "workflow") and (nnodes > 1 or kind == "multinode") \
            or gpus:
        return {"procs": nnodes, "ppn": 1, "unit": cus, "gpus": gpus}
    return None


def _static(spec: Any) -> bool:
    """Nothing in the call's options depends on the call or on the environment at call
    time (no container: its image and options are expanded per call)."""
    if spec.container is not None:
        return False
    for k, v in spec.invoker_cfg.items():
        if isinstance(v, calltime.Expr) or (
                k in _EXPANDED and isinstance(v, str) and "$" in v):
            return False
        if k == "programs" and any(isinstance(pv, str) and "$" in pv
                                   for prog in v for pv in prog.values()):
            return False
    return True


_EXPANDED = ("binary", "working_dir", "flags", "args", "runner", "script")


def call_options(rt: Runtime, spec: Any, bound: dict[str, Any] | None, cus: int, mem: float,
                 gpus: int, opts: dict[str, Any]) -> dict[str, Any]:
    """Fill the task's options at call time (see module docstring); raises UsageError.

    Returns the options to send: ``opts`` filled in, or, for a program whose
    options cannot change from call to call (no ``$VAR``, no expression, one
    node), one dict shared by all its calls (pickled once per frame, and no
    work per call but the checks).
    """
    from ..runtime import gang
    where = f"@{spec.invoker} on {spec.name}" if spec.invoker != "python" else \
        f"@constraint on {spec.name}"
    key = (rt.run_dir, cus, mem, gpus)
    cached = spec.call_cache
    if cached is not None and cached[0] == key:
        shared: dict[str, Any] = cached[1]
        cfg = shared["cfg"]
        if cfg.get("binary"):
            _check_binary(cfg["binary"], cfg.get("working_dir"), where, rt.nodes)
        for prog in cfg.get("programs") or ():
            _check_binary(prog["binary"], cfg.get("working_dir"), where, rt.nodes)
        _check_streams(cfg, bound, where)
        return shared
    if spec.invoker != "python":
        cfg = _wire_cfg(spec.invoker_cfg, bound, where)
        if cfg.get("runner") is not None and cfg["runner"] not in RUNNERS:
            raise UsageError(f"{where}: unknown runner {cfg['runner']!r}; use one of "
                             f"{', '.join(RUNNERS)}.")
        if cfg.get("binary") and spec.container is None:   # in a container: the image's
            _check_binary(cfg["binary"], cfg.get("working_dir"), where, rt.nodes)
        for prog in cfg.get("programs") or ():
            _check_binary(prog["binary"], cfg.get("working_dir"), where, rt.nodes)
        if cfg.get("scale_by_cu") and cus > 1:   # PyCOMPSs: one rank per computing unit
            cfg["processes"] = (cfg.get("processes") or 1) * cus
            cus = 1
        _check_streams(cfg, bound, where)
        if cfg["kind"] == "workflow":       # a nested run: where it keeps its journal
            script = cfg["script"]
            if "{{" not in script and not os.path.isabs(script):
                cfg["script"] = os.path.abspath(os.path.join(cfg.get("working_dir") or "",
                                                             script))
            cfg["run_dir"] = os.path.join(rt.run_dir, "nested")
            cfg["parent_run"] = rt.run_id
        opts["cfg"] = cfg
        opts["log_dir"] = os.path.join(rt.run_dir, "jobs")
    else:
        cfg = {"kind": "python"}
        opts["invoker"] = "pyenv"
    if spec.container is not None:
        opts["container"] = container_options(spec, cus, mem)
        opts["log_dir"] = os.path.join(rt.run_dir, "jobs")
        if spec.invoker == "python":
            opts["invoker"] = "container"
    opts["threads"] = cus
    req = gang_request(cfg, cus, gpus, where) if cfg["kind"] != "python" else \
        {"procs": 1, "ppn": 1, "unit": cus, "gpus": gpus}
    if req is not None:
        if gang.place(rt.nodes, req, free=False) is None:
            raise UsageError(f"{where}: it needs {gang.describe(req)}, but the cluster "
                             f"({gang.describe_nodes(rt.nodes)}) can never give that. Lower "
                             f"processes / computing_nodes / the @constraint, or add nodes "
                             f"(Runtime(workers=..., nodes=...)).")
        opts["gang"] = req
        if mem:
            opts["mem"] = mem
    elif spec.invoker != "python" and _static(spec):
        spec.call_cache = (key, opts)     # nothing above depends on this call: share it
    return opts


def needs_bound(spec: Any) -> bool:
    """Whether :func:`call_options` reads the call's arguments (expressions, streams)."""
    cfg = spec.invoker_cfg
    return any(isinstance(v, calltime.Expr) and v.names for v in cfg.values()) or any(
        stream is not None for (_k, _d, stream, _p) in (cfg.get("params") or {}).values())


def _check_streams(cfg: dict[str, Any], bound: dict[str, Any] | None, where: str) -> None:
    if bound is None:
        return
    for pname, (_kind, _d, stream, _p) in cfg["params"].items():
        if stream is not None and pname in bound \
                and not isinstance(bound[pname], (str, os.PathLike)):
            raise UsageError(f"{where}, parameter '{pname}': a {stream} stream parameter "
                             f"must be a file path (str or os.PathLike), not "
                             f"{type(bound[pname]).__name__}.")


def container_options(spec: Any, cus: int, mem: float) -> dict[str, Any]:
    """What the node's container invoker reads: the @container values and the limits."""
    where = f"@container on {spec.name}"
    c = spec.container
    image = calltime.expand_env(c["image"], f"{where}: image")
    if not image.strip():
        raise UsageError(f"{where}: image is empty after expanding $VAR; set it.")
    return dict(c, image=image, options=[calltime.expand_env(o, f"{where}: options")
                                         for o in c["options"]], cpus=cus, memory_gb=mem)


def is_gang(spec: Any) -> bool:
    """Whether the scheduler must place calls of ``spec`` through runtime.gang."""
    cfg = spec.invoker_cfg
    if spec.invoker in ("mpi", "multinode"):
        return True
    if spec.invoker in ("ompss", "workflow"):
        n = cfg.get("computing_nodes")
        return not (n is None or (isinstance(n, calltime.Expr) and n.const == 1))
    return calltime.gpus_wanted(spec.processors, spec.name) > 0


__all__ = ["attach", "call_options", "check_arguments", "TEMPLATE", "RUNNERS",
           "FILE_KIND", "DIRECTORY_KIND"]
