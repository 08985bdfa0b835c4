"""What a PyCOMPSs task declared (:class:`Decl`), and the task as the per-call rules see it.

:class:`CompatTask` names what :mod:`.implement`, :mod:`.reduction` and
:mod:`.replicated` use of a task function; :class:`.taskfn.CompatTaskFunction`
meets it structurally. They are below :mod:`.taskfn`, which calls them, and
import only this module, so no import (not even a type-only one) goes back up.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from . import returns as R

if TYPE_CHECKING:
    from ...graph.param import Param
    from ...graph.spec import TaskSpec
    from .run import CompatRun


class Decl:
    """What a PyCOMPSs ``@task`` (and the decorators above it) declared, beyond the spec."""

    def __init__(self) -> None:
        self.returns: R.Returns = R.Returns(0)
        self.file_params: frozenset[str] = frozenset()     # FILE / DIRECTORY parameters
        self.constraints: dict[str, Any] = {}              # computing_units etc., raw values
        self.on_failure_defaults: dict[str, Any] = {}      # @on_failure(..., name=default)
        self.local_check: Callable[..., None] | None = None
        self.replicated = False
        self.distributed = False
        self.reduction: int | None = None                  # @reduction(chunk_size=...)
        self.reduction_param: str | None = None
        self.checks: list[Callable[[dict[str, Any]], None]] = []   # call-time checks
        self.cfg_globals: dict[str, str] = {}     # invoker value -> module global read per call
        self.http: dict[str, Any] | None = None   # @http: service_name (base URL per call)
        self.varargs: Param | None = None         # varargs_type when not a plain IN
        self.written: frozenset[str] = frozenset()      # written objects (self aside)
        self.written_collections: frozenset[str] = frozenset()
        self.collections: frozenset[str] = frozenset()  # COLLECTION_* / DICTIONARY_*
        self.python_mpi: bool | None = None       # @mpi without binary: its scale_by_cu
        self.is_local = False                     # @constraint(is_local=True)
        self.io = False                           # @IO: no computing unit with I/O executors


class CompatTask(Protocol):
    """A PyCOMPSs task function: its spec, its declaration, the function it wraps; called
    (an ``@implement`` alternative), submitted to a run (a ``@reduction`` chunk) or as a
    spec variant pinned to a node (a replicated call's copy)."""

    spec: TaskSpec
    decl: Decl
    __wrapped__: Callable[..., Any]

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def submit(self, rt: CompatRun, args: tuple[Any, ...], kwargs: dict[str, Any],
               call_returns: Any = ...) -> Any: ...

    def variant(self, nout: int, plain: frozenset[str] = ...,
                cons: tuple[Any, ...] | None = ..., pin: str | None = ...,
                extra: tuple[tuple[str, Any], ...] | None = ..., io: bool = ...) -> TaskSpec: ...
