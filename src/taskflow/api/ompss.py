"""``@ompss``: a threaded (OmpSs / OpenMP) binary.

Order: ``@constraint`` -> ``@ompss`` -> ``@task``. It holds
``computing_units`` slots (from ``@constraint``) on each of
``computing_nodes`` nodes and sees ``OMP_NUM_THREADS`` and
``NX_ARGS="--smp-workers=N"`` set to that number. Command line, streams and
exit codes as for ``@binary``.
"""
from __future__ import annotations

from typing import Any, Callable

from .binary import FAIL_BY_EXIT_VALUE
from .external import attach, check_arguments

MANDATORY = ("binary",)
SUPPORTED = ("computing_nodes", "args", "working_dir", "fail_by_exit_value")
DEPRECATED = ("workingDir", "computingNodes")


def ompss(binary: str | None = None, computing_nodes: int | str = 1, args: str | None = None,
          working_dir: str | None = None, fail_by_exit_value: bool = FAIL_BY_EXIT_VALUE,
          **others: object) -> Callable[..., Any]:
    """Declare an OmpSs/OpenMP binary task.

    ``binary``, ``args``, ``working_dir`` and ``fail_by_exit_value`` are ``@binary``'s;
    ``computing_nodes`` (an int, ``"$VAR"`` or an expression of the parameters) how many
    nodes it holds ``computing_units`` slots on.

    Example::

        from taskflow import FILE_OUT_STDOUT, constraint, ompss, task, wait_on_file

        @constraint(computing_units=2)
        @ompss(binary="printenv", args="OMP_NUM_THREADS")
        @task(returns=int, out=FILE_OUT_STDOUT)
        def threads(out: str) -> int: ...

        threads("threads.txt")
        print(open(wait_on_file("threads.txt")).read())   # 2
    """
    check_arguments("ompss", dict(others, binary=binary), MANDATORY, SUPPORTED)
    cfg = {"binary": binary, "computing_nodes": computing_nodes, "args": args,
           "working_dir": working_dir, "fail_by_exit_value": fail_by_exit_value}
    return lambda target: attach(target, "ompss", cfg)
