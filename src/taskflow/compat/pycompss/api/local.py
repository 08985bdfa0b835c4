"""``pycompss.api.local``: ``@local`` runs a plain function on the master, its arguments
brought up to date first.

Every argument still being produced is waited for (futures become values,
inside lists, tuples and dicts too); an object a task changes (INOUT) gets
its newest version and, as in PyCOMPSs, every reference the program holds to
the old object (variables of the running frames, module globals, list and
dict entries, attributes) then refers to the new one
(:func:`taskflow.compat.references.replace`); so does a future passed as an
argument (also in ``*args`` / ``**kwargs``) becomes its value in the variables
of the running frames and module globals. This is the one place where
PyCOMPSs changes old references: ``compss_wait_on`` gives the new value and
leaves the object passed as it was.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ....api import sync
from ....future import Future
from ....runtime import current
from ...references import replace


def _fresh(value: Any) -> Any:
    """``value`` with its pending parts waited for; a followed object's newest version, and
    a future's value, replaces every reference to the old one (PyCOMPSs tracks futures as
    objects pending to synchronise: ``u = inc(u); f(u)`` leaves ``u`` the value)."""
    rt = current.get()
    if rt is None:
        return value
    item = rt.registry.object_item(value) if rt.registry.objects else None
    new = sync.wait_on(value, in_place=False)
    if new is not value:
        if isinstance(value, Future):       # (the runtime's own lists hold it too)
            replace(value, new, containers=False)
        elif item is not None and item.obj is value:
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
