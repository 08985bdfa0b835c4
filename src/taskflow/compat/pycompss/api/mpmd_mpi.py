"""``pycompss.api.mpmd_mpi``: ``@mpmd_mpi(runner=..., programs=[dict(binary=..., ...), ...])``.

One MPI launch of several programs (``runner ... -n 2 prog1 args1 : -n 1
prog2 args2``) over the slots the task holds (the programs' processes added
up). ``working_dir``, ``fail_by_exit_value``, ``processes_per_node`` and
``flags`` as for ``@mpi``; ``args`` strings name the task's parameters as
``{{name}}``. Open MPI and MPICH runners; ``srun`` has no such syntax.
"""
from __future__ import annotations

from typing import Any

from ....errors import UsageError
from ....graph.decl import MpmdDecl
from ....wire.template import PLACEHOLDER
from ...external import attach_program, fail_by_exit_value, normalize

SUPPORTED = ("runner", "programs", "working_dir", "fail_by_exit_value", "processes_per_node",
             "flags")


class mpmd_mpi:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kw = normalize("mpmd_mpi", kwargs, SUPPORTED)
        runner = kw.get("runner")
        if not runner:              # PyCOMPSs: runner is mandatory (mpirun, mpiexec, srun)
            raise UsageError("The argument runner is mandatory in the @mpmd_mpi decorator "
                             "(runner=\"mpirun\", \"mpiexec\" or \"srun\").")
        if runner not in ("mpirun", "mpiexec"):
            raise UsageError(f"@mpmd_mpi: runner={runner!r}: use mpirun or mpiexec (srun has "
                             f"no colon syntax for several programs).")
        programs = kw.get("programs")
        if not isinstance(programs, (list, tuple)) or not programs:
            raise UsageError("@mpmd_mpi: programs must be a non-empty list of "
                             "dict(binary=..., processes=..., args=...).")
        progs = []
        for i, p in enumerate(programs):
            if not isinstance(p, dict) or not p.get("binary"):
                raise UsageError(f"@mpmd_mpi: programs[{i}] must be a dict with a binary.")
            unknown = set(p) - {"binary", "processes", "args", "params"}
            if unknown:
                raise UsageError(f"@mpmd_mpi: programs[{i}] has unknown key(s) "
                                 f"{sorted(unknown)}; use binary, processes, args.")
            try:
                n = int(p.get("processes", 1))
            except (TypeError, ValueError):
                raise UsageError(f"@mpmd_mpi: programs[{i}].processes must be a number, not "
                                 f"{p.get('processes')!r}.") from None
            if n < 1:
                raise UsageError(f"@mpmd_mpi: programs[{i}].processes must be >= 1.")
            progs.append(MpmdDecl(binary=p["binary"], processes=n,
                                  args=p.get("args", p.get("params"))))
        self.cfg = {"runner": runner, "binary": progs[0].binary, "programs": tuple(progs),
                    "processes": sum(p.processes for p in progs),
                    "processes_per_node": kw.get("processes_per_node"),
                    "flags": kw.get("flags"), "working_dir": kw.get("working_dir"),
                    "fail_by_exit_value": fail_by_exit_value(kw.get("fail_by_exit_value"),
                                                             "mpmd_mpi"), "groups": True}

    def __call__(self, target: Any) -> Any:
        tf = attach_program(target, "mpmd_mpi", "mpi", self.cfg)
        for prog in self.cfg["programs"]:
            names = list(tf.spec.signature.parameters)
            for n in PLACEHOLDER.findall(prog.args or ""):
                if n not in names:
                    raise UsageError(f"@mpmd_mpi on {tf.spec.name}: args names {{{{{n}}}}}, "
                                     f"which is not a parameter of {tf.spec.name}.")
        return tf


MpmdMpi = mpmd_mpi
