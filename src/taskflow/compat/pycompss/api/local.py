"""``pycompss.api.local``: ``@local`` runs a plain function on the master with its
arguments waited for (futures become values, INOUT objects are brought up to date)."""
from __future__ import annotations

import functools
from typing import Any, Callable

from .api import compss_wait_on


def local(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        args = tuple(compss_wait_on(a) for a in args)
        kwargs = {k: compss_wait_on(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)
    return wrapped


__all__ = ["local"]
