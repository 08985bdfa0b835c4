"""``pycompss.api.mpi``: ``@mpi(runner=..., binary=..., processes=..., ...)``.

With ``binary``: one MPI launch of the program (command line and exit code
as ``@binary``). Without: the function itself runs on every rank under
mpi4py and the task's value is the list of every rank's value (rank order);
``returns=N`` with N = processes gives one future per rank instead.

``runner`` (mandatory, as in PyCOMPSs: ``mpirun``, ``mpiexec``, ``srun``), ``processes`` (older
spelling ``computing_nodes``; a number, ``"$ENV"``, a parameter, or the name
of a module global read at every call), ``processes_per_node`` (the same),
``scale_by_cu`` (one rank per computing unit: ``processes`` times the
``computing_units`` of ``@constraint``, each rank one unit; a Python task's
``returns=N`` is checked against that count at the call), ``flags``,
``args`` / ``params``, ``working_dir``, ``fail_by_exit_value``. A Python
task's collection layouts (``<param>_layout={block_count: B, block_length: L,
stride: S}``) give each rank only its blocks of that collection: one block of L
elements starting at rank x S when B is the number of ranks, else blocks
dealt round-robin (-1: the ranks, 1, 1).
"""
from __future__ import annotations

from typing import Any

from ....errors import UsageError
from ....graph.decl import RUNNERS
from ...external import attach_program, counts_per_call, fail_by_exit_value, normalize
from ...calls.taskfn import task_function

SUPPORTED = ("runner", "binary", "processes", "computing_nodes", "processes_per_node",
             "scale_by_cu", "flags", "args", "params", "working_dir", "fail_by_exit_value",
             "computing_units")


class mpi:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.layouts = [_layout(k[:-len("_layout")], kwargs.pop(k))
                        for k in sorted(kwargs) if k.endswith("_layout")]
        kw = normalize("mpi", kwargs, SUPPORTED)
        runner = kw.get("runner")
        if not runner:              # PyCOMPSs: runner is mandatory (mpirun, mpiexec, srun)
            raise UsageError("The argument runner is mandatory in the @mpi decorator "
                             "(runner=\"mpirun\", \"mpiexec\" or \"srun\").")
        if isinstance(runner, str) and "$" not in runner and runner not in RUNNERS:
            raise UsageError(f"@mpi: unknown runner {runner!r}; use one of "
                             f"{', '.join(RUNNERS)}.")
        procs = kw.get("processes", kw.get("computing_nodes", 1))
        scale = kw.get("scale_by_cu", False)
        if isinstance(scale, str):
            if scale.lower() not in ("true", "false"):
                raise UsageError(f"@mpi: scale_by_cu must be True/False, not {scale!r}.")
            scale = scale.lower() == "true"
        self.cfg: dict[str, Any] = {
            "runner": runner, "binary": kw.get("binary"), "processes": procs,
            "processes_per_node": kw.get("processes_per_node"), "flags": kw.get("flags"),
            "args": kw.get("args", kw.get("params")), "working_dir": kw.get("working_dir"),
            "fail_by_exit_value": fail_by_exit_value(kw.get("fail_by_exit_value"), "mpi"),
            "scale_by_cu": bool(scale), "groups": True}

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@mpi")
        cfg = counts_per_call(tf, self.cfg)
        python = not cfg.get("binary")
        if python:                 # the rank count, and returns=N against it, per call
            cfg["rank_values"] = True
            tf.decl.python_mpi = bool(cfg.get("scale_by_cu"))
        if self.layouts:
            names = list(tf.spec.signature.parameters)
            for name, *_ in self.layouts:
                if not python:
                    raise UsageError(f"@mpi on {tf.spec.name}: {name}_layout= cuts a collection "
                                     f"over the ranks of a Python MPI task; a binary gets its "
                                     f"arguments on its command line.")
                if name not in names:
                    raise UsageError(f"@mpi on {tf.spec.name}: {name}_layout= names no "
                                     f"parameter of {tf.spec.name}({', '.join(names)}).")
            cfg["layouts"] = tuple(self.layouts)
        return attach_program(tf, "mpi", "mpi", cfg, outputs=python)


def _layout(name: str, value: Any) -> tuple[str, int, int, int]:
    """``<name>_layout={block_count: B, block_length: L, stride: S}`` -> (name, B, L, S)."""
    if not isinstance(value, dict):
        raise UsageError(f"@mpi: {name}_layout must be a dict of block_count, block_length "
                         f"and stride, not {value!r}.")
    unknown = sorted(set(value) - {"block_count", "block_length", "stride"})
    if unknown:
        raise UsageError(f"@mpi: {name}_layout: unknown key(s) {unknown}; use block_count, "
                         f"block_length, stride (from pycompss.api.parameter).")
    out = []
    for key in ("block_count", "block_length", "stride"):
        v = value.get(key, -1)
        if isinstance(v, bool) or not isinstance(v, int) or (v < 1 and v != -1):
            raise UsageError(f"@mpi: {name}_layout {key}={v!r} must be an int >= 1 (or -1).")
        out.append(v)
    return (name, out[0], out[1], out[2])


Mpi = mpi
MPI = mpi
