"""``pycompss.functions.reduce``: tree reductions over task calls.

``merge_reduce(f, data)`` combines pairs left to right in a binary tree
(``f`` of two values, usually a task); ``merge_n_reduce(f, arity, data)``
combines ``arity`` values at a time. Both work on a copy of ``data`` (the
caller's list is left as it was) and give back the last value (a future when
``f`` is a task).
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable

from ....errors import UsageError


def merge_reduce(f: Callable[[Any, Any], Any], data: list[Any]) -> Any:
    items = list(data)
    if not items:
        raise UsageError("merge_reduce: data is empty; there is nothing to reduce.")
    q = deque(range(len(items)))
    while q:
        x = q.popleft()
        if not q:
            return items[x]
        y = q.popleft()
        items[x] = f(items[x], items[y])
        q.append(x)
    return None  # pragma: no cover - the loop returns


def merge_n_reduce(f: Callable[..., Any], arity: int, data: list[Any]) -> Any:
    if not isinstance(arity, int) or arity < 2:
        raise UsageError(f"merge_n_reduce: arity must be an int >= 2, not {arity!r}.")
    items = list(data)
    if not items:
        raise UsageError("merge_n_reduce: data is empty; there is nothing to reduce.")
    while len(items) > 1:
        chunk, items = items[:arity], items[arity:]
        items.append(f(*chunk))
    return items[0]
