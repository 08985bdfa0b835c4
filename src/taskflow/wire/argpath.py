"""Addressing one argument of a call: ``(position or name, index, index, ...)``.

The graph builder puts placeholders at such paths and the executor puts the
resolved values there, so both sides share these two helpers.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .messages import ArgPath


def set_path(args: list[Any], kwargs: dict[str, Any], path: ArgPath, v: Any) -> None:
    head = path[0]
    if len(path) == 1:
        if isinstance(head, str):
            kwargs[head] = v
        else:
            args[head] = v
        return
    container = kwargs[head] if isinstance(head, str) else args[head]
    for i in path[1:-1]:
        container = container[i]
    container[path[-1]] = v


def get_path(args: list[Any], kwargs: dict[str, Any], path: ArgPath) -> Any:
    head = path[0]
    v = kwargs[head] if isinstance(head, str) else args[head]
    for i in path[1:]:
        v = v[i]
    return v
