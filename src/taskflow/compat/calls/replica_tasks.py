"""The two tasks of a replicated call that writes its objects or files (:mod:`.replicated`).

Plain taskflow tasks, importable by name on every node; their copies pinned
to nodes are spec variants (:mod:`.variants`). :func:`_join` reads every
copy's result, so it runs when all of them have ended.
"""
from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any, Callable

from ...api.parameter import (COLLECTION_FILE_IN, COLLECTION_FILE_OUT, COLLECTION_IN,
                              COLLECTION_INOUT)
from ...api.task import task
from ...errors import UsageError
from .variants import make_variant

if TYPE_CHECKING:
    from ...graph.spec import TaskSpec

Where = tuple[str, "int | None"]            # a parameter: its name, its position or None


def _put(args: list[Any], kwargs: dict[str, Any], where: Where, value: Any) -> None:
    name, pos = where
    if pos is None or pos >= len(args):
        kwargs[name] = value
    else:
        args[pos] = value


@task(returns=2, ins=COLLECTION_FILE_IN, outs=COLLECTION_FILE_OUT)  # type: ignore[untyped-decorator]
def _copy(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any],
          written: list[Where], files: list[tuple[str, int | None, int | None]],
          ins: list[str], outs: list[str]) -> tuple[Any, list[Any]]:
    """One copy: the function's value, and what it made of the written objects. Each written
    file is this copy's own (``outs``; an INOUT one starts as the version read, ``ins``)."""
    for i, (name, pos, read) in enumerate(files):
        if read is not None:
            shutil.copyfile(ins[read], outs[i])
        _put(args, kwargs, (name, pos), outs[i])
    value = fn(*args, **kwargs)
    after = [kwargs[n] if pos is None or pos >= len(args) else args[pos] for n, pos in written]
    return value, after


@task(objs=COLLECTION_INOUT, afters=COLLECTION_IN, targets=COLLECTION_FILE_OUT,  # type: ignore[untyped-decorator]
      firsts=COLLECTION_FILE_IN)
def _join(objs: list[Any], afters: list[list[Any]], value: Any, targets: list[str],
          firsts: list[str]) -> Any:
    """The written objects and files become the first copy's (their one new version); the
    value is the first copy's."""
    from ...wire.writes import update_in_place
    for i, obj in enumerate(objs):
        if not update_in_place(obj, afters[0][i]):
            raise UsageError(f"is_replicated: the written {type(obj).__name__} cannot take "
                             f"the copies' new value in place")
    for first, target in zip(firsts, targets):
        shutil.copyfile(first, target)
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
