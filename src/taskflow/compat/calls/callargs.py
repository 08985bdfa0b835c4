"""What a PyCOMPSs call's arguments decide before it becomes a native call.

- A FILE / DIRECTORY parameter given ``None`` reaches the task as ``None``.
- INOUT / OUT (or CONCURRENT, COMMUTATIVE) on an immutable value (a number,
  a string, a tuple, ...) is accepted: nothing can change it in place, so the
  task reads it and the value afterwards is the same (PyCOMPSs's behaviour).
  A written collection whose leaves are all immutable is read the same way;
  ``None`` and an empty list or dict are objects there, as PyCOMPSs types
  them, so the task's values for them come back (graph.builder).
- A COLLECTION_* parameter takes any sized iterable (a set, a range, a numpy
  array, ...) and gives the task a list (a written one that holds ``None`` or
  plain values among others is refused: the task's values for them would go
  to that list, not to the caller's object); ``None`` is an empty collection. A
  future (a task's result) is one object, whatever the declared type, as in
  PyCOMPSs (:func:`future_collections`): the task gets the producer's value.
- ``returns="{{param}}"``: the call gives the argument object back and the
  task's value becomes that object's next version (:func:`returned_argument`).

The parameters a call passes as plain IN values (:func:`plain_params`) make
the call's spec variant (``taskfn.make_variant``), one per combination.
"""
from __future__ import annotations

from collections.abc import Iterable, Sized
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ...future import Future
from ...graph.param import OBJECT_KIND

if TYPE_CHECKING:
    from ...graph.spec import TaskSpec
    from .decl import Decl
    from .run import CompatRun

IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, range)


def plain_params(decl: Decl, bound: dict[str, Any]) -> frozenset[str]:
    """The declared parameters this call passes as plain IN values (module docstring)."""
    out = [n for n in decl.file_params if n in bound and bound[n] is None]
    out += [n for n in decl.written if n in bound and _immutable(bound[n])]
    out += [n for n in decl.written_collections if n in bound and _all_immutable(bound[n])]
    return frozenset(out)


def future_collections(spec: TaskSpec, decl: Decl, bound: dict[str, Any]
                       ) -> tuple[frozenset[str], frozenset[str]]:
    """The collection parameters this call gives a future (a task's result): (those read,
    which become plain IN values: the task gets the producer's value; those written, which
    become one object of the declared direction). PyCOMPSs takes any future as one object,
    whatever the parameter's declared type."""
    read: list[str] = []
    written: list[str] = []
    for n in decl.collections:
        if n in bound and type(bound[n]) is Future and spec.params[n].elem_kind == OBJECT_KIND:
            (written if spec.params[n].writes else read).append(n)
    return frozenset(read), frozenset(written)


def _immutable(v: Any) -> bool:
    return isinstance(v, IMMUTABLE)


def _all_immutable(v: Any, depth: int = 0) -> bool:
    """Every leaf of collection ``v`` is a value PyCOMPSs passes by value (a number, a
    string, ...). ``None`` is not one (PyCOMPSs types it an object, which the task's write
    replaces), nor is an empty list or dict inside the collection (an object the task fills
    or replaces): such a collection is followed, so the task's writes come back."""
    if depth > 50:
        return False
    if isinstance(v, dict):
        return (depth == 0 or bool(v)) and all(_all_immutable(x, depth + 1)
                                               for x in v.values())
    if isinstance(v, list):
        return (depth == 0 or bool(v)) and all(_all_immutable(x, depth + 1) for x in v)
    if isinstance(v, tuple):
        return all(_all_immutable(x, depth + 1) for x in v)
    return v is not None and _immutable(v)


def as_collections(spec: TaskSpec, names: frozenset[str], args: tuple[Any, ...],
                   kwargs: dict[str, Any], bound: dict[str, Any]
                   ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args``/``kwargs`` with every collection argument a list, tuple or dict (module
    docstring); the same objects when nothing changed."""
    for name in names:
        if name not in bound:
            continue
        v = bound[name]
        if isinstance(v, (list, tuple, dict)) or type(v) is Future:
            continue                # (a future: one object, see future_collections)
        if v is None:
            new: Any = []
        elif isinstance(v, Iterable) and isinstance(v, Sized) and not isinstance(v, (str, bytes)):
            new = list(v)
        else:
            raise UsageError(f"task {spec.name}, parameter '{name}' is a collection but got "
                             f"{type(v).__name__}; pass a list (or any sized iterable), a "
                             f"dict, or None for an empty collection.")
        param = spec.params[name]
        if param.writes and param.elem_kind == OBJECT_KIND and not _all_immutable(new) and \
                any(x is None or _immutable(x) for x in new):
            raise UsageError(
                f"task {spec.name}, parameter '{name}' is {param!r} but got a "
                f"{type(v).__name__}: the task's values for its None or plain elements would "
                f"go to a list made for the call, not to your {type(v).__name__}; pass a "
                f"list (list(...)) and read the task's values from it.")
        bound[name] = new
        pos = spec.index.get(name)
        if pos is not None and pos < len(args):
            args = args[:pos] + (new,) + args[pos + 1:]
        else:
            kwargs = dict(kwargs, **{name: new})
    return args, kwargs


def returned_argument(rt: CompatRun, spec: TaskSpec, param: str, bound: dict[str, Any] | None,
                      value: Any) -> Any:
    """``returns="{{param}}"``: the argument object, whose next version the task's value
    (the future ``value``) is; an immutable argument cannot be followed by identity, so the
    call gives the future itself."""
    if bound is None or param not in bound:
        raise UsageError(f"task {spec.name}: returns=\"{{{{{param}}}}}\" names parameter "
                         f"'{param}', which this call does not give.")
    obj = bound[param]
    if _immutable(obj) or isinstance(obj, Future):
        return value
    reg = rt.registry
    with rt.submit_lock:
        item = reg.object_item(obj)
        if item is not None and item.obj is obj:
            reg.forget_object(obj)
        reg.track_object(obj, value)
    return obj
