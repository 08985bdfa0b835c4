"""``pycompss.api.mpi``: ``@mpi(runner=..., binary=..., processes=..., ...)``.

With ``binary``: one MPI launch of the program (command line and exit code
as ``@binary``). Without: the function itself runs on every rank under
mpi4py and the task's value is the list of every rank's value (rank order);
``returns=N`` with N = processes gives one future per rank instead.

``runner`` (default ``mpirun``; ``mpiexec``, ``srun``), ``processes`` (older
spelling ``computing_nodes``; a number, ``"$ENV"``, a parameter, or the name
of a module global read at every call), ``processes_per_node`` (the same),
``scale_by_cu`` (one rank per computing unit: ``processes`` times the
``computing_units`` of ``@constraint``, each rank one unit; a Python task's
``returns=N`` is checked against that count at the call), ``flags``,
``args`` / ``params``, ``working_dir``, ``fail_by_exit_value``. Collection
layouts (``<param>_layout=...``) are not supported: every rank would get the
whole collection, so declaring one is an error.
"""
from __future__ import annotations

from typing import Any

from ....api.external import RUNNERS
from ....errors import UsageError
from ...external import attach_program, counts_per_call, fail_by_exit_value, normalize
from ...taskfn import task_function

SUPPORTED = ("runner", "binary", "processes", "computing_nodes", "processes_per_node",
             "scale_by_cu", "flags", "args", "params", "working_dir", "fail_by_exit_value",
             "computing_units")


class mpi:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        layouts = sorted(k for k in kwargs if k.endswith("_layout"))
        if layouts:
            raise UsageError(f"@mpi: {layouts[0]}=: collection layouts are not supported by "
                             f"taskflow's PyCOMPSs layer (every rank would get the whole "
                             f"collection); split the collection in the task by rank.")
        kw = normalize("mpi", kwargs, SUPPORTED)
        runner = kw.get("runner") or "mpirun"
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
            "scale_by_cu": bool(scale)}

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@mpi")
        cfg = counts_per_call(tf, self.cfg)
        python = not cfg.get("binary")
        if python:                 # the rank count, and returns=N against it, per call
            cfg["rank_values"] = True
            tf.decl.python_mpi = bool(cfg.get("scale_by_cu"))
        return attach_program(tf, "mpi", "mpi", cfg, outputs=python)


Mpi = mpi
MPI = mpi
