"""How the journal names a large argument: by its digest, size and type, not by its text.

A task's parameters are kept in the journal as text (``x=1, name='a'``: each value's
repr, cut at 60 characters). An argument whose pickle is larger than :data:`BY_DIGEST`
bytes is kept instead as its sha256, its size and its type
(``<list of 1,000,000 items, 5.9 MB, sha256:ab12cd34ef56…>``), and a crate names it by
that digest (docs/guide/record-outside.md).

The digest is of the pickle the argument already is: a mutable argument is pickled
once at the call (its snapshot, graph/builder.py), and that pickle is what a worker
gets, what the resume key reads and what the journal's writer process hashes. The
call itself only notes what the value is (its type and length, :func:`snapshot_ref`:
two attribute reads, and only for a pickle over the threshold); the sha256 is taken
in the journal's writer process (journal/text.py), not on the thread that calls tasks.
"""
from __future__ import annotations

from typing import Any, Optional

# bytes: an argument whose pickle is larger than this is kept by digest (one definition:
# the builder notes such values, the journal's writer is told it when it starts)
BY_DIGEST = 1024

# what a large argument is: (its type's name, its length where it has one)
What = tuple[str, Optional[int]]


class Snapshot(tuple):  # type: ignore[type-arg]
    """``(pickle bytes, [futures found inside])`` of an argument over :data:`BY_DIGEST`,
    as every snapshot reference is, with :attr:`what` it is (the journal shows it)."""

    what: What


def what(value: Any) -> What:
    """``value``'s type (``list``; ``numpy.ndarray``: module-qualified beyond builtins) and
    its length (None: it has none, or asking failed)."""
    t = type(value)
    name = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    n: Any = None
    if hasattr(t, "__len__"):
        try:
            n = len(value)
        except Exception:  # noqa: BLE001 - a program's __len__ (a 0-d array raises)
            n = None
    return name, n if type(n) is int else None


def snapshot_ref(value: Any, blob: bytes, found: list[Any]) -> tuple[bytes, list[Any]]:
    """A snapshot reference's data: ``(blob, found)``, a :class:`Snapshot` when the pickle
    is over :data:`BY_DIGEST` (the journal then names it by digest)."""
    if len(blob) <= BY_DIGEST:
        return blob, found
    snap = Snapshot((blob, found))
    snap.what = what(value)
    return snap


def same_kind(obj: tuple[bytes, list[Any]], found: list[Any]) -> tuple[bytes, list[Any]]:
    """``obj``'s pickle with other futures (a call made again: runtime/rules/lineage.py),
    still a :class:`Snapshot` when it was one."""
    blob = obj[0]
    if type(obj) is not Snapshot:
        return blob, found
    snap = Snapshot((blob, found))
    snap.what = obj.what
    return snap
