"""Where a PyCOMPSs call runs and with how many MPI ranks, decided when it is called.

- ``@constraint(is_local=True)``: the task runs only on the master's own node
  (a node whose agent runs on the master's host), as COMPSs runs it on the
  master's worker.
- A Python ``@mpi`` task (no ``binary``) runs ``processes`` ranks, times the
  computing units of its ``@constraint`` with ``scale_by_cu``, all decided at
  the call (a module global, ``$ENV`` or a parameter may give them); several
  outputs (``returns=N``) are one per rank, so N must be that count then.
"""
from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ...graph.decl import MpiDecl
from ...graph.expr import Expr, as_int

if TYPE_CHECKING:
    from ...graph.spec import TaskSpec
    from ...providers.handle import NodeHandle


def local_node(nodes: list[NodeHandle], name: str) -> str:
    """The name of a usable node of ``nodes`` (the run's) on the master's host (UsageError
    when there is none)."""
    here = socket.gethostname()
    mine = [n for n in nodes if n.usable and n.hostname == here]
    if not mine:
        raise UsageError(f"task {name}: @constraint(is_local=True) runs it on the master's own "
                         f"node, but no node of this run is on this host ({here}); add a local "
                         f"node (--workers N with --cluster / a ComputeNode named localhost in "
                         f"--project) or drop is_local.")
    return min(mine, key=lambda n: n.load).name


def ranks(spec: TaskSpec, scale: bool, bound: dict[str, Any] | None) -> int:
    """The ranks one call of a Python @mpi task runs (see the module docstring)."""
    where = f"@mpi on {spec.name}"
    program = spec.program
    assert isinstance(program, MpiDecl)
    raw = program.processes
    procs = as_int(raw.value(bound) if isinstance(raw, Expr) else raw, f"{where}: processes")
    if scale:
        cus = as_int(spec.cu_expr.value(bound), f"@constraint on {spec.name}: computing_units")
        procs *= cus
    return procs


def check_ranks(spec: TaskSpec, scale: bool, nout: int, bound: dict[str, Any] | None) -> None:
    """``returns=N`` (N > 1) of a Python @mpi call is one output per rank: N must be the
    call's rank count (``scale``: scale_by_cu)."""
    if nout <= 1:
        return
    n = ranks(spec, scale, bound)
    if n != nout:
        how = " (processes x the @constraint's computing_units, scale_by_cu)" if scale else ""
        raise UsageError(f"@mpi on {spec.name}: returns={nout} but this call runs {n} "
                         f"rank(s){how}: a Python MPI task gives one value per rank; give "
                         f"returns=1 for the list of them, or returns={n}.")
