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


def mpi(runner: str | None = None, binary: str | None = None, processes: int | str = 1,
        processes_per_node: int | str | None = None, computing_nodes: int | str | None = None,
        flags: str | None = None, args: str | None = None, working_dir: str | None = None,
        fail_by_exit_value: bool = FAIL_BY_EXIT_VALUE, **others: object) -> Callable[..., Any]:
    """Declare an MPI task (see the module docstring).

    Example::

        from taskflow import mpi, task, wait_on

        @mpi(runner="mpirun", binary="hostname", processes=2)
        @task(returns=int)
        def hosts() -> int: ...

        print(wait_on(hosts()))                           # 0; each rank's name is in its log

    :param runner: ``mpirun``, ``mpiexec`` or ``srun`` (or ``"$VAR"`` naming one).
    :param binary: the program every rank runs; ``None``: the Python function, under mpi4py.
    :param processes: how many ranks; an int, ``"$VAR"`` or an expression of the task's
        parameters (``"2 * n"``), evaluated when the task is called.
    :param processes_per_node: ranks per node (fixes the split over nodes).
    :param computing_nodes: how many nodes the ranks spread over.
    :param flags: more options for the runner (``"--bind-to none"``).
    :param args: the program's command line, a template as for ``@binary``.
    :param working_dir: where the program runs (made if missing).
    :param fail_by_exit_value: a non-zero exit code fails the task (as for ``@binary``).
    """
    check_arguments("mpi", dict(others, runner=runner), MANDATORY, SUPPORTED)
    if isinstance(runner, str) and "$" not in runner and runner not in RUNNERS:
        raise UsageError(f"@mpi: unknown runner {runner!r}; use one of {', '.join(RUNNERS)} "
                         f"(or \"$VAR\" naming one, expanded at call time).")
    cfg = {"runner": runner, "binary": binary, "processes": processes,
           "processes_per_node": processes_per_node, "computing_nodes": computing_nodes,
           "flags": flags, "args": args, "working_dir": working_dir,
           "fail_by_exit_value": fail_by_exit_value}
    return lambda target: attach(target, "mpi", cfg)
