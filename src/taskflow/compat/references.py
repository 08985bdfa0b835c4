"""Every reference the program holds to one object, made to refer to another (``@local``).

PyCOMPSs's ``@local`` brings an object a task changed up to date by making
every reference to the old object refer to the new value. The referrers are
found with :func:`gc.get_referrers`: dicts (module globals, instance and class
attributes, keyword arguments), lists, sets, and the local variables of running
frames (written back with CPython's ``PyFrame_LocalsToFast``, where it exists).
Tuples cannot change; a reference inside one stays.
"""
from __future__ import annotations

import ctypes
import gc
import sys
import types
from typing import Any

_LOCALS_TO_FAST = getattr(ctypes.pythonapi, "PyFrame_LocalsToFast", None)


def replace(old: Any, new: Any, containers: bool = True) -> int:
    """Make the program's references to ``old`` refer to ``new``; return how many.

    ``containers=False`` (a future: the runtime's own lists hold it too) rebinds only the
    variables of the running frames and module globals."""
    if old is new:
        return 0
    n = 0
    me = sys._getframe()
    for ref in gc.get_referrers(old):
        if ref is me or ref is new:
            continue
        if isinstance(ref, types.FrameType):
            n += _frame(ref, old, new)
        elif not containers and not (isinstance(ref, dict) and _is_module_dict(ref)):
            continue
        elif isinstance(ref, dict):
            for k, v in list(ref.items()):
                if v is old:
                    ref[k] = new
                    n += 1
        elif isinstance(ref, list):
            for i, v in enumerate(ref):
                if v is old:
                    ref[i] = new
                    n += 1
        elif isinstance(ref, set):
            try:
                ref.discard(old)
                ref.add(new)
                n += 1
            except TypeError:       # not hashable: it was not in a set then
                pass
    # local variables of the running frames that gc does not list as referrers
    frame = me.f_back
    while frame is not None:
        n += _frame(frame, old, new)
        frame = frame.f_back
    return n


def _is_module_dict(d: dict[str, Any]) -> bool:
    module = sys.modules.get(d.get("__name__", None) or "")
    return module is not None and getattr(module, "__dict__", None) is d


def _frame(frame: types.FrameType, old: Any, new: Any) -> int:
    """Rebind ``frame``'s local variables that hold ``old``."""
    if frame.f_globals is frame.f_locals:          # module level: its globals are a dict
        return 0
    names = [k for k, v in frame.f_locals.items() if v is old]
    if not names or _LOCALS_TO_FAST is None:
        return 0
    loc = frame.f_locals
    for k in names:
        loc[k] = new
    _LOCALS_TO_FAST(ctypes.py_object(frame), ctypes.c_int(0))
    return len(names)
