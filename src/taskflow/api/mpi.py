"""``@mpi``: the task is an MPI program launched by ``mpirun``, ``mpiexec`` or ``srun``.

Order: ``@constraint`` -> ``@mpi`` -> ``@task``. The runtime reserves
``processes`` slots (x ``computing_units`` of ``@constraint`` per process),
on one node when one has room, else over several (``processes_per_node``
fixes the split, ``computing_nodes`` the number of nodes), writes a hostfile
for the runner from the nodes it chose and runs one command:

    runner [flags] --hostfile <file> -n <processes> binary args...

Without ``binary`` the decorated Python function itself runs on every rank
under mpi4py; rank 0's return value is the task's result. Values may be
numbers, ``"$ENV"`` strings or expressions of the task's parameters,
evaluated at call time. Exit codes as for ``@binary``.
"""
from __future__ import annotations

from typing import Any, Callable

from .binary import FAIL_BY_EXIT_VALUE
from ..errors import UsageError
from ..graph.decl import RUNNERS
from .external import attach, check_arguments

MANDATORY = ("runner",)
SUPPORTED = ("binary", "processes", "processes_per_node", "computing_nodes", "flags", "args",
             "working_dir", "fail_by_exit_value")
DEPRECATED = ("scale_by_cu", "workingDir", "computingNodes")


def mpi(runner: str | None = None, binary: str | None = None, processes: Any = 1,
        processes_per_node: Any = None, computing_nodes: Any = None, flags: str | None = None,
        args: str | None = None, working_dir: str | None = None,
        fail_by_exit_value: bool = FAIL_BY_EXIT_VALUE, **others: Any) -> Callable[..., Any]:
    """Declare an MPI task (see the module docstring)."""
    check_arguments("mpi", dict(others, runner=runner), MANDATORY, SUPPORTED)
    if isinstance(runner, str) and "$" not in runner and runner not in RUNNERS:
        raise UsageError(f"@mpi: unknown runner {runner!r}; use one of {', '.join(RUNNERS)} "
                         f"(or \"$VAR\" naming one, expanded at call time).")
    cfg = {"runner": runner, "binary": binary, "processes": processes,
           "processes_per_node": processes_per_node, "computing_nodes": computing_nodes,
           "flags": flags, "args": args, "working_dir": working_dir,
           "fail_by_exit_value": fail_by_exit_value}
    return lambda target: attach(target, "mpi", cfg)
