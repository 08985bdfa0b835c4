"""The values a ``wait_on`` in a task gives (agent/executor/nested.py): the handles in
what it was given (also inside lists, tuples and dicts), the latest versions of objects
calls wrote, and the values answered put in the handles' places."""
from __future__ import annotations

from typing import Any

from ...wire import values as V

Child: Any = None       # nested.Child (it sets it: the class lives with the calls)
_PLAIN = frozenset({int, float, str, bool, type(None), bytes})
_NONE = (None, None)


def collect(obj: Any, out: list[Any], depth: int) -> None:
    t = type(obj)
    if t is Child:
        out.append(obj)
    elif depth < 100 and (t is list or t is tuple):
        for x in obj:
            if type(x) not in _PLAIN:
                collect(x, out, depth + 1)
    elif depth < 100 and t is dict:
        for k, v in obj.items():
            collect(k, out, depth + 1)
            collect(v, out, depth + 1)


def latest(obj: Any, versions: dict[int, tuple[Any, Any]], depth: int) -> Any:
    """``obj`` as ``wait_on`` sees it: the handle of its latest version if a call wrote it
    (also inside lists and tuples)."""
    held, newest = versions.get(id(obj), _NONE)
    if held is obj:
        return newest
    t = type(obj)
    if depth < 100 and (t is list or t is tuple):
        return t(latest(x, versions, depth + 1) for x in obj)
    return obj


def resolve(obj: Any, got: dict[tuple[int, int], Any], loaded: dict[tuple[int, int], Any],
            depth: int) -> Any:
    t = type(obj)
    if t is Child:
        key = (obj.seq, obj.index)
        if key not in loaded:
            payload, _ = got[key]
            loaded[key] = V.load(payload) if payload is not None else None
        return loaded[key]
    if depth >= 100:
        return obj
    if t is list:
        return [resolve(x, got, loaded, depth + 1) for x in obj]
    if t is tuple:
        return tuple(resolve(x, got, loaded, depth + 1) for x in obj)
    if t is dict:
        return {resolve(k, got, loaded, depth + 1): resolve(v, got, loaded, depth + 1)
                for k, v in obj.items()}
    return obj
