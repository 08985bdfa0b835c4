"""``pycompss.api.local``: ``@local`` runs a plain function on the master, its arguments
brought up to date first.

Every argument still being produced is waited for (futures become values,
inside lists, tuples and dicts too); an object a task changes (INOUT) gets
its newest version and, as in PyCOMPSs, every reference the program holds to
the old object (variables of the running frames, module globals, list and
dict entries, attributes) then refers to the new one
(:func:`taskflow.compat.references.replace`). This is the one place where
PyCOMPSs changes old references: ``compss_wait_on`` gives the new value and
leaves the object passed as it was.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ....api import sync
from ....runtime import current
from ...references import replace


def _fresh(value: Any) -> Any:
    """``value`` with its pending parts waited for; a followed object's newest version
    replaces every reference to the old one."""
    rt = current.get()
    if rt is None:
        return value
    item = rt.registry.object_item(value) if rt.registry.objects else None
    new = sync.wait_on(value, in_place=False)
    if item is not None and item.obj is value and new is not value:
        replace(value, new)
    return new


def local(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        args = tuple(_fresh(a) for a in args)
        kwargs = {k: _fresh(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)
    return wrapped


__all__ = ["local"]
