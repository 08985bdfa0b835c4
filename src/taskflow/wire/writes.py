"""The parameters a call made inside a running task writes in place, on both sides.

A task function knows them from its spec (``api.task.written_objects``): each is
``(name, position, direction, is_object)``, ``is_object`` False for a collection.
The executor gives the calling task's objects found there a handle each after the
call's outputs (``agent.executor.nested``); the master answers the new versions with
those indexes (``runtime.nesting``). Both pick the values with :func:`written_values`,
so they count the same ones.
"""
from __future__ import annotations

from typing import Any

Written = tuple[tuple[str, "int | None", str, bool], ...]
# values that cannot change in place: passed as plain inputs, never written back
BY_VALUE = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, range)


def written_values(writes: Written, args: tuple[Any, ...] | list[Any],
                   kwargs: dict[str, Any] | None) -> list[Any]:
    """The objects (not collections) that a call with ``args``/``kwargs`` gives to the
    written parameters ``writes``, in their order: those that can change in place."""
    out = []
    for name, pos, _, is_object in writes:
        if not is_object:
            continue
        if pos is not None and pos < len(args):
            value = args[pos]
        elif kwargs and name in kwargs:
            value = kwargs[name]
        else:
            continue
        if not isinstance(value, BY_VALUE):
            out.append(value)
    return out


def update_in_place(obj: Any, value: Any) -> bool:
    """Make the user's object equal to the task's version of it, if the type allows
    (``wait_on`` in the program, and in a task for the objects its calls wrote)."""
    if value is obj:
        return True
    try:
        if isinstance(obj, list) and isinstance(value, list):
            obj[:] = value
        elif isinstance(obj, dict) and isinstance(value, dict):
            obj.clear()
            obj.update(value)
        elif isinstance(obj, set) and isinstance(value, set):
            obj.clear()
            obj.update(value)
        elif isinstance(obj, bytearray) and isinstance(value, (bytes, bytearray)):
            obj[:] = value
        elif hasattr(obj, "__array__") and hasattr(obj, "shape") and \
                getattr(value, "shape", None) == obj.shape:
            obj[...] = value
        elif type(obj) is type(value) and hasattr(obj, "__dict__"):
            obj.__dict__.clear()
            obj.__dict__.update(value.__dict__)
        else:
            return False
        return True
    except Exception:
        return False
