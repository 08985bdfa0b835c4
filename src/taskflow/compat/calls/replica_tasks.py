"""The two tasks of a replicated call that writes its objects (:mod:`.replicated`).

Plain taskflow tasks, importable by name on every node; their copies pinned
to nodes are spec variants (:mod:`.variants`). :func:`_join` reads every
copy's result, so it runs when all of them have ended.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ...api.parameter import COLLECTION_IN, COLLECTION_INOUT
from ...api.task import task
from ...errors import UsageError
from .variants import make_variant

if TYPE_CHECKING:
    from ...graph.spec import TaskSpec


@task(returns=2)  # type: ignore[untyped-decorator]  # (task() is typed Any)
def _copy(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any],
          written: list[tuple[str, int | None]]) -> tuple[Any, list[Any]]:
    """One copy: the function's value, and what it made of the written objects."""
    value = fn(*args, **kwargs)
    after = [kwargs[n] if pos is None or pos >= len(args) else args[pos] for n, pos in written]
    return value, after


@task(objs=COLLECTION_INOUT, afters=COLLECTION_IN)  # type: ignore[untyped-decorator]
def _join(objs: list[Any], afters: list[list[Any]], value: Any) -> Any:
    """The written objects become the first copy's (their one new version); the value is
    the first copy's."""
    from ...api.sync import _update_in_place
    for i, obj in enumerate(objs):
        if not _update_in_place(obj, afters[0][i]):
            raise UsageError(f"is_replicated: the written {type(obj).__name__} cannot take "
                             f"the copies' new value in place")
    return value


_PINNED: dict[tuple[str, int, str], TaskSpec] = {}


def pinned(which: str, nout: int, node: str) -> TaskSpec:
    """``_copy`` or ``_join`` with ``nout`` outputs, run on ``node``."""
    key = (which, nout, node)
    spec = _PINNED.get(key)
    if spec is None:
        if len(_PINNED) > 1024:
            _PINNED.clear()
        base = (_copy if which == "copy" else _join).spec
        spec = _PINNED[key] = make_variant(base, nout, frozenset(), None, node)
    return spec
