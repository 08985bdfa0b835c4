"""What the journal shows of a task's call: its parameters' text and its streams' paths.

Loaded by the master (:mod:`.wire`) and by the writer process, which loads
only this folder: the standard library only.

A value whose pickle is larger than the run's threshold (``by_digest``:
taskflow.graph.recorded.BY_DIGEST, given to the writer when it starts) is not
shown by its text but named by digest: ``<list of 1,000,000 items, 5.9 MB,
sha256:ab12cd34ef56…>``, and the whole of it (parameter, type, length, bytes,
sha256) kept beside the row (:data:`Kept`; the ``VALUES`` row). The digest is
the sha256 of the value's pickle: the snapshot the call made (protocol
``pickle.HIGHEST_PROTOCOL``, what the worker gets), or, for a string, bytes or a
tuple of them passed as it is, ``pickle.dumps(value, pickle.HIGHEST_PROTOCOL)``
made here, in the writer.
"""
from __future__ import annotations

import os
import pickle
from typing import Any

# a value kept by digest: [parameter, type, length (None: none), bytes, sha256 hex]
Kept = list[Any]
_SIZED = (str, bytes, bytearray)
_PICKLED_HERE = (tuple, frozenset)      # (scalars inside: their size is not their length)
SCALARS = frozenset({int, float, bool, type(None)})     # never kept by digest


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


def value_digest(blob: bytes) -> str:
    """The sha256 (hex) of a value's pickle: how the journal and a crate name a large one."""
    import hashlib      # (here: the master imports this module, and hashlib loads OpenSSL)
    return hashlib.sha256(blob).hexdigest()


def size_text(n: int) -> str:
    """``812 B``, ``7.6 MB``: a size in decimal units."""
    if n < 1000:
        return f"{n} B"
    x = float(n)
    for unit in ("kB", "MB", "GB"):
        x /= 1000
        if x < 999.95:
            return f"{x:.1f} {unit}"
    return f"{x / 1000:.1f} TB"


def digest_label(kind: str, length: int | None, size: int, sha256: str) -> str:
    """``<list of 1,000,000 items, 5.9 MB, sha256:ab12cd34ef56…>``: a value kept by digest."""
    if length is None or kind in ("bytes", "bytearray"):
        what = kind
    else:
        what = f"{kind} of {length:,} {'characters' if kind == 'str' else 'items'}"
    return f"<{what}, {size_text(size)}, sha256:{sha256[:12]}…>"


def _kept(label: Any, kind: str, length: int | None, blob: bytes, kept: list[Kept]) -> str:
    sha = value_digest(blob)
    kept.append([str(label), kind, length, len(blob), sha])
    return digest_label(kind, length, len(blob), sha)


def _snapshot(obj: Any, label: Any, by_digest: int | None, kept: list[Kept]) -> str:
    """A snapshot reference's text: ``<data>``, or by digest when its pickle is large."""
    blob = obj[0]
    if by_digest is None or blob is None or len(blob) <= by_digest:
        return "<data>"
    kind, length = obj[2] if len(obj) > 2 else ("data", None)
    return _kept(label, kind, length, blob, kept)


def _plain(v: Any, label: Any, by_digest: int | None, kept: list[Kept]) -> str:
    """A value passed as it is: its repr, cut; by digest when its pickle is large."""
    t = type(v)
    if by_digest is not None and ((t in _SIZED and len(v) * 4 > by_digest)
                                  or t in _PICKLED_HERE):
        try:
            blob = pickle.dumps(v, pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - never here (plain values), but text must not fail
            return short(v)
        if len(blob) > by_digest:
            return _kept(label, t.__name__, len(v), blob, kept)
    return short(v)


def ref_summary(refs: Any, by_digest: int | None = None,
                kept: list[Kept] | None = None) -> list[tuple[Any, str]] | None:
    """What the journal shows of a call's resolved arguments: (position, label) pairs;
    a large snapshot by digest (into ``kept``, labelled by its position)."""
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
            out.append((pos, "<data>" if kept is None else
                        _snapshot(obj, pos, by_digest, kept)))
        else:
            _, fpath = obj[-1] if kind in ("fio", "dio") else obj    # (old, new): the new one
            what = "dir" if kind.startswith("d") else "file"
            out.append((pos, f"<{what} {os.path.basename(fpath or '')}>"))
    return out


def params_text(names: Any, argv: Any, kwargs: Any, refs: Any, by_digest: int | None = None
                ) -> tuple[str, list[Kept]]:
    """``a=1, f=<file in.txt>, x=<data d3>`` for a task's call, and the values in it kept
    by digest (``by_digest``: the threshold in bytes of their pickle; None: none is)."""
    kept: list[Kept] = []
    names = names or ()
    if not refs and not kwargs and names and argv is not None and len(argv) <= len(names):
        parts = []
        for n, v in zip(names, argv):
            if type(v) in SCALARS:         # (most calls: their text is their repr)
                try:
                    r = repr(v)
                except Exception:  # noqa: BLE001 - an int too long to show: as short() says
                    r = short(v)
                parts.append(f"{n}={r}" if len(r) <= 60 else f"{n}={r[:57]}...")
            else:
                parts.append(f"{n}={_plain(v, n, by_digest, kept)}")
        return ", ".join(parts), _named(kept, names) if kept else kept
    shown = dict(ref_summary(refs, by_digest, kept) or ())
    parts = []
    for i, v in enumerate(argv or ()):
        label = names[i] if i < len(names) else f"arg{i}"
        parts.append(f"{label}={shown[i] if i in shown else _plain(v, label, by_digest, kept)}")
    for k, v in (kwargs or {}).items():
        parts.append(f"{k}={shown[k] if k in shown else _plain(v, k, by_digest, kept)}")
    return ", ".join(parts), _named(kept, names)


def _named(kept: list[Kept], names: Any) -> list[Kept]:
    """``kept`` with a snapshot's position replaced by its parameter's name."""
    for k in kept:
        pos = k[0]
        if pos.isdigit():
            i = int(pos)
            k[0] = names[i] if i < len(names) else f"arg{i}"
    return kept


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
