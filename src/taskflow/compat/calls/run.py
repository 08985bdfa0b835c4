"""The run a PyCOMPSs call is submitted to, as the modules of :mod:`taskflow.compat.calls` use it.

They read five members of the runtime and nothing else: :class:`CompatRun`
names them. taskflow's ``Runtime`` meets it structurally (mypy checks it where
:mod:`.taskfn` and :mod:`.reduction` hand over the current runtime), so no
function here takes, or imports, the whole ``Runtime``.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...graph.registry import Registry
    from ...graph.spec import TaskSpec
    from ...providers.handle import NodeHandle


class CompatRun(Protocol):
    """What a PyCOMPSs call uses of the run: submit a spec, see the nodes (a replicated call's
    copies, ``is_local``), its I/O executors (``@IO``), and track an object in the registry
    under the submit lock (``returns="{{param}}"``, ``returns=SomeClass``)."""

    @property
    def nodes(self) -> list[NodeHandle]: ...

    @property
    def io_executors(self) -> int: ...

    @property
    def registry(self) -> Registry: ...

    @property
    def submit_lock(self) -> AbstractContextManager[Any]: ...

    def submit(self, spec: TaskSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...
