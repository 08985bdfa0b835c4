"""What the journal shows of a task's call: its parameters' text and its streams' paths.

Loaded by the master (:mod:`.wire`) and by the writer process, which loads
only this folder: the standard library only.
"""
from __future__ import annotations

import os
from typing import Any


class Shown(str):
    """A value of the program's own kind (an instance of its classes, a numpy scalar, a
    class) as the journal keeps it: its repr, cut (:func:`short`). A ``str`` whose repr is
    itself, so a call's parameters read as they did (``d={Wrapper(1): None}``). The writer
    process takes plain data only: it does not load the program's modules (journal/wire.py)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str.__str__(self)


def short(value: Any, limit: int = 60) -> str:
    """A value's repr cut to ``limit`` characters (never raises)."""
    try:
        r = repr(value)
    except Exception as exc:  # noqa: BLE001 - a user's __repr__ may fail
        r = f"<{type(value).__name__}: repr failed: {exc}>"
    return r if len(r) <= limit else r[:limit - 3] + "..."


def ref_summary(refs: Any) -> list[tuple[Any, str]] | None:
    """What the journal shows of a call's resolved arguments: (position, label) pairs."""
    if not refs:
        return None
    out: list[tuple[Any, str]] = []
    # kinds: taskflow.wire.messages.REF_* (this module loads without the package: literals)
    for path, kind, obj in refs:        # futures come as (data id, path): see wire.py
        if len(path) != 1:
            continue
        (pos,) = path
        if kind == "r":
            did, _ = obj
            out.append((pos, f"<data d{did}>"))
        elif kind == "p":
            out.append((pos, "<data>"))
        else:
            _, fpath = obj[-1] if kind in ("fio", "dio") else obj    # (old, new): the new one
            what = "dir" if kind.startswith("d") else "file"
            out.append((pos, f"<{what} {os.path.basename(fpath or '')}>"))
    return out


def params_text(names: Any, argv: Any, kwargs: Any, shown: Any) -> str:
    """``a=1, f=<file in.txt>, x=<data d3>`` for a task's call."""
    if not shown and not kwargs and names and argv is not None and len(argv) <= len(names):
        return ", ".join([f"{n}={short(v)}" for n, v in zip(names, argv)])
    shown = dict(shown or ())
    names = names or ()
    parts = []
    for i, v in enumerate(argv or ()):
        label = names[i] if i < len(names) else f"arg{i}"
        parts.append(f"{label}={shown[i] if i in shown else short(v)}")
    for k, v in (kwargs or {}).items():
        parts.append(f"{k}={shown[k] if k in shown else short(v)}")
    return ", ".join(parts)


FILE_KINDS = {"f": "in", "fo": "out", "fio": "inout", "do": "out", "dio": "inout"}


def file_accesses(names: Any, refs: Any) -> list[list[Any]]:
    """``[[parameter, direction, the user's path, is a directory], ...]``: the files and
    directories a task reads and writes (a collection's elements under its parameter's
    name), as the ``FILES`` row keeps them (a crate names them: taskflow/crate)."""
    out: list[list[Any]] = []
    for path, kind, obj in refs or ():
        direction = FILE_KINDS.get(kind)
        if direction is None:
            continue
        pos = path[0] if path else None
        pname = names[pos] if isinstance(pos, int) and pos < len(names) else pos
        _, fpath = obj[-1] if kind in ("fio", "dio") else obj      # (old, new): the new one
        out.append([str(pname), direction, str(fpath or ""), kind.startswith("d")])
    return out


def stream_paths(names: Any, refs: Any, streams: dict[str, str]) -> dict[str, list[str]]:
    """{stream: [parameter, the user's path]} of a program task's stream parameters."""
    out: dict[str, list[str]] = {}
    for path, kind, obj in refs or ():
        if len(path) != 1 or kind not in ("f", "fo", "fio"):
            continue
        (pos,) = path
        pname = names[pos] if isinstance(pos, int) and pos < len(names) else pos
        stream = streams.get(pname)
        if stream is not None:
            _, fpath = obj[-1] if kind == "fio" else obj      # (old, new): the new one
            out[stream] = [str(pname), str(fpath)]
    return out
