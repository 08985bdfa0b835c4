"""``pycompss.api.parameter``: every direction and type constant of PyCOMPSs.

Each constant is a :class:`CompatParam` (type, direction, stream, prefix,
depth and the hints ``keep_rename``, ``cache``, ``weight``); the dictionary
form (``{Type: FILE_IN, StdIOStream: STDIN, Prefix: "--in=", Depth: 2}``)
and the older ``Parameter(TYPE.FILE, DIRECTION.IN, IOSTREAM.STDIN)`` form
give the same thing. :func:`to_native` turns any of them into taskflow's
:class:`~taskflow.graph.param.Param` when a task is declared, where a
mistake is reported naming the task and the parameter.

Differences from taskflow's own constants (PyCOMPSs behaviour):

- collections and dictionaries are followed to any depth unless ``Depth``
  says otherwise (taskflow's own default is one level);
- ``FILE_CONCURRENT_*`` / ``FILE_COMMUTATIVE_*`` stream files append, as
  ``FILE_INOUT_*`` (taskflow orders those accesses like INOUT);
- ``STDIN``, ``STDOUT`` and ``STDERR`` given alone are files bound to that
  stream (``FILE_IN_STDIN``, ``FILE_OUT_STDOUT``, ``FILE_OUT_STDERR``);
- ``Keep_rename=True`` on a file (or a ``COLLECTION_FILE``) gives the task the
  runtime's version name (``d<id>v<version>_<stamp>.IT``,
  :mod:`taskflow.agent.executor.invokers.renames`); without it a file keeps its name;
- ``Cache`` and ``Weight`` are hints: accepted, and without effect here;
- ``STREAM_IN`` / ``STREAM_OUT`` take the streams of
  ``pycompss.streams.distro_stream`` (taskflow's own streams underneath:
  docs/guide/streams.md); ``EXTERNAL_STREAM`` is not supported.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any

from ....api.parameter import depth_value, prefix_value
from ....errors import UsageError
from ....graph.param import (COLLECTION_KIND, DIRECTORY_KIND, FILE_KIND, OBJECT_KIND,
                             STREAM_KIND, Param)

UNLIMITED = sys.maxsize


class _Named(int):
    """An int constant that prints as its name (TYPE.FILE, DIRECTION.IN, IOSTREAM.STDOUT)."""

    _group = ""

    def __new__(cls, value: int, name: str) -> "_Named":
        obj = super().__new__(cls, value)
        obj._name = name       # type: ignore[attr-defined]
        return obj

    def __repr__(self) -> str:
        return f"{self._group}.{self._name}"     # type: ignore[attr-defined]

    __str__ = __repr__

    def __reduce__(self) -> Any:
        return (type(self), (int(self), self._name))   # type: ignore[attr-defined]


class _Type(_Named):
    _group = "TYPE"


class _Direction(_Named):
    _group = "DIRECTION"


class _IOStream(_Named):
    _group = "IOSTREAM"


class TYPE:
    """Content types (the numbers are PyCOMPSs's; only their names matter here)."""

    BOOLEAN = _Type(0, "BOOLEAN")
    CHAR = _Type(1, "CHAR")
    BYTE = _Type(2, "BYTE")
    SHORT = _Type(3, "SHORT")
    INT = _Type(4, "INT")
    LONG = _Type(5, "LONG")
    FLOAT = _Type(6, "FLOAT")
    DOUBLE = _Type(7, "DOUBLE")
    STRING = _Type(8, "STRING")
    FILE = _Type(9, "FILE")
    OBJECT = _Type(10, "OBJECT")
    PSCO = _Type(11, "PSCO")
    EXTERNAL_PSCO = _Type(12, "EXTERNAL_PSCO")
    BINDING_OBJECT = _Type(13, "BINDING_OBJECT")
    WCHAR = _Type(14, "WCHAR")
    WSTRING = _Type(15, "WSTRING")
    STRING_64 = _Type(16, "STRING_64")
    DIRECTORY = _Type(17, "DIRECTORY")
    NULL = _Type(18, "NULL")
    COLLECTION = _Type(19, "COLLECTION")
    DICT_COLLECTION = _Type(20, "DICT_COLLECTION")
    STREAM = _Type(21, "STREAM")
    EXTERNAL_STREAM = _Type(22, "EXTERNAL_STREAM")
    ENUM = _Type(23, "ENUM")


class DIRECTION:
    IN = _Direction(0, "IN")
    OUT = _Direction(1, "OUT")
    INOUT = _Direction(2, "INOUT")
    CONCURRENT = _Direction(3, "CONCURRENT")
    COMMUTATIVE = _Direction(4, "COMMUTATIVE")
    IN_DELETE = _Direction(5, "IN_DELETE")


class IOSTREAM:
    STDIN = _IOStream(0, "STDIN")
    STDOUT = _IOStream(1, "STDOUT")
    STDERR = _IOStream(2, "STDERR")
    UNSPECIFIED = _IOStream(3, "UNSPECIFIED")


class PREFIX:
    PREFIX = "null"


# Keys of the dictionary form.
Type = "type"
Direction = "direction"
StdIOStream = "stream"
Prefix = "prefix"
Depth = "depth"
Weight = "weight"
Keep_rename = "keep_rename"
Cache = "cache"
# The MPI collection layout keys (@mpi(col_layout={block_count: 4, block_length: 2, stride: 1})).
block_count = "block_count"
block_length = "block_length"
stride = "stride"

_DIR_NAMES = {d: d._name for d in vars(DIRECTION).values()   # type: ignore[attr-defined]
              if isinstance(d, _Direction)}
_STREAM_NAMES = {IOSTREAM.STDIN: "stdin", IOSTREAM.STDOUT: "stdout", IOSTREAM.STDERR: "stderr",
                 IOSTREAM.UNSPECIFIED: None}
_KIND = {TYPE.FILE: FILE_KIND, TYPE.DIRECTORY: DIRECTORY_KIND, TYPE.COLLECTION: COLLECTION_KIND,
         TYPE.DICT_COLLECTION: COLLECTION_KIND}


@dataclass(frozen=True)
class CompatParam:
    """A PyCOMPSs parameter description (what every constant of this module is)."""

    content_type: Any = None            # a TYPE, or None for an object
    direction: Any = DIRECTION.IN
    stream: Any = IOSTREAM.UNSPECIFIED
    prefix: str | None = None
    depth: int = UNLIMITED
    keep_rename: bool = True
    cache: bool = True
    weight: float = 1.0
    elem_file: bool = False             # COLLECTION_FILE_*: the leaves are files
    name: str = ""

    def __repr__(self) -> str:
        return self.name or f"Parameter({self.content_type}, {self.direction}, {self.stream})"


def _p(name: str, content_type: Any = None, direction: Any = DIRECTION.IN,
       stream: Any = IOSTREAM.UNSPECIFIED, **kw: Any) -> CompatParam:
    return CompatParam(content_type, direction, stream, name=name, **kw)


_D = DIRECTION
_S = IOSTREAM
IN = _p("IN")
OUT = _p("OUT", direction=_D.OUT)
INOUT = _p("INOUT", direction=_D.INOUT)
CONCURRENT = _p("CONCURRENT", direction=_D.CONCURRENT)
COMMUTATIVE = _p("COMMUTATIVE", direction=_D.COMMUTATIVE)
IN_DELETE = _p("IN_DELETE", direction=_D.IN_DELETE)

FILE = _p("FILE", TYPE.FILE, keep_rename=False, cache=False)
FILE_IN = _p("FILE_IN", TYPE.FILE, keep_rename=False, cache=False)
FILE_OUT = _p("FILE_OUT", TYPE.FILE, _D.OUT, keep_rename=False, cache=False)
FILE_INOUT = _p("FILE_INOUT", TYPE.FILE, _D.INOUT, keep_rename=False, cache=False)
FILE_CONCURRENT = _p("FILE_CONCURRENT", TYPE.FILE, _D.CONCURRENT, keep_rename=False)
FILE_COMMUTATIVE = _p("FILE_COMMUTATIVE", TYPE.FILE, _D.COMMUTATIVE, keep_rename=False)

FILE_STDIN = _p("FILE_STDIN", TYPE.FILE, _D.IN, _S.STDIN)
FILE_STDOUT = _p("FILE_STDOUT", TYPE.FILE, _D.OUT, _S.STDOUT)
FILE_STDERR = _p("FILE_STDERR", TYPE.FILE, _D.OUT, _S.STDERR)
_STREAM_FAMILY: dict[str, CompatParam] = {}
for _dname, _dir in (("IN", _D.IN), ("OUT", _D.OUT), ("INOUT", _D.INOUT),
                     ("CONCURRENT", _D.CONCURRENT), ("COMMUTATIVE", _D.COMMUTATIVE)):
    for _sname, _stream in (("STDIN", _S.STDIN), ("STDOUT", _S.STDOUT), ("STDERR", _S.STDERR)):
        _name = f"FILE_{_dname}_{_sname}"
        _STREAM_FAMILY[_name] = _p(_name, TYPE.FILE, _dir, _stream, keep_rename=False,
                                   cache=False)
globals().update(_STREAM_FAMILY)

DIRECTORY = _p("DIRECTORY", TYPE.DIRECTORY, keep_rename=False)
DIRECTORY_IN = _p("DIRECTORY_IN", TYPE.DIRECTORY, keep_rename=False)
DIRECTORY_OUT = _p("DIRECTORY_OUT", TYPE.DIRECTORY, _D.OUT, keep_rename=False)
DIRECTORY_INOUT = _p("DIRECTORY_INOUT", TYPE.DIRECTORY, _D.INOUT, keep_rename=False)

COLLECTION = _p("COLLECTION", TYPE.COLLECTION)
COLLECTION_IN = _p("COLLECTION_IN", TYPE.COLLECTION)
COLLECTION_IN_DELETE = _p("COLLECTION_IN_DELETE", TYPE.COLLECTION, _D.IN_DELETE)
COLLECTION_OUT = _p("COLLECTION_OUT", TYPE.COLLECTION, _D.OUT)
COLLECTION_INOUT = _p("COLLECTION_INOUT", TYPE.COLLECTION, _D.INOUT)
COLLECTION_FILE = _p("COLLECTION_FILE", TYPE.COLLECTION, elem_file=True, keep_rename=False)
COLLECTION_FILE_IN = _p("COLLECTION_FILE_IN", TYPE.COLLECTION, elem_file=True,
                        keep_rename=False)
COLLECTION_FILE_OUT = _p("COLLECTION_FILE_OUT", TYPE.COLLECTION, _D.OUT, elem_file=True,
                         keep_rename=False)
COLLECTION_FILE_INOUT = _p("COLLECTION_FILE_INOUT", TYPE.COLLECTION, _D.INOUT,
                           elem_file=True, keep_rename=False)

DICTIONARY = _p("DICTIONARY", TYPE.DICT_COLLECTION)
DICTIONARY_IN = _p("DICTIONARY_IN", TYPE.DICT_COLLECTION)
DICTIONARY_IN_DELETE = _p("DICTIONARY_IN_DELETE", TYPE.DICT_COLLECTION, _D.IN_DELETE)
DICTIONARY_OUT = _p("DICTIONARY_OUT", TYPE.DICT_COLLECTION, _D.OUT)
DICTIONARY_INOUT = _p("DICTIONARY_INOUT", TYPE.DICT_COLLECTION, _D.INOUT)

STREAM_IN = _p("STREAM_IN", TYPE.STREAM)
STREAM_OUT = _p("STREAM_OUT", TYPE.STREAM, _D.OUT)

# Streams alone (``@task(fds=STDOUT)``) and as the StdIOStream value of the dictionary form.
STDIN = IOSTREAM.STDIN
STDOUT = IOSTREAM.STDOUT
STDERR = IOSTREAM.STDERR
UNSPECIFIED = IOSTREAM.UNSPECIFIED


def Parameter(p_type: Any = None, p_direction: Any = DIRECTION.IN,  # noqa: N802 - PyCOMPSs name
              p_stream: Any = IOSTREAM.UNSPECIFIED, p_prefix: Any = PREFIX.PREFIX,
              p_depth: int = UNLIMITED, **kw: Any) -> CompatParam:
    """The older form: ``Parameter(TYPE.FILE, DIRECTION.INOUT, IOSTREAM.STDOUT)``."""
    prefix = None if p_prefix in (None, PREFIX.PREFIX) else str(p_prefix)
    ctype = None if p_type in (None, TYPE.OBJECT) else p_type
    return CompatParam(ctype, p_direction, p_stream, prefix, p_depth,
                       elem_file=bool(kw.get("p_elem_file", False)))


_BY_NAME: dict[str, CompatParam] = {
    k: v for k, v in dict(globals()).items() if isinstance(v, CompatParam)}
_DICT_KEYS = {Type, Direction, StdIOStream, Prefix, Depth, Weight, Keep_rename, Cache}


def _from_dict(d: dict[Any, Any], where: str) -> CompatParam:
    unknown = set(d) - _DICT_KEYS
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {sorted(map(str, unknown))} in the dictionary "
                         f"form; allowed: Type, Direction, StdIOStream, Prefix, Depth, Weight, "
                         f"Keep_rename, Cache.")
    base = _as_compat(d[Type], where) if Type in d else IN
    changes: dict[str, Any] = {"name": ""}
    if Direction in d:
        dv = d[Direction]
        if isinstance(dv, CompatParam):
            if Type not in d:
                base = dv
            changes["direction"] = dv.direction
        elif isinstance(dv, _Direction):
            changes["direction"] = dv
        else:
            raise UsageError(f"{where}: Direction must be IN, OUT, INOUT, ... (or "
                             f"DIRECTION.x), not {dv!r}.")
    if StdIOStream in d:
        sv = d[StdIOStream]
        if not isinstance(sv, _IOStream):
            raise UsageError(f"{where}: StdIOStream must be STDIN, STDOUT or STDERR, not {sv!r}.")
        changes["stream"] = sv
    if Prefix in d:
        changes["prefix"] = prefix_value(d[Prefix], where)
    if Depth in d:
        changes["depth"] = depth_value(d[Depth], where)
    for key in (Keep_rename, Cache):
        if key in d:
            changes[key] = bool(d[key])
    if Weight in d:
        try:
            changes["weight"] = float(d[Weight])
        except (TypeError, ValueError):
            raise UsageError(f"{where}: Weight must be a number, not {d[Weight]!r}.") from None
    return replace(base, **changes)


def _as_compat(value: Any, where: str) -> CompatParam:
    if isinstance(value, CompatParam):
        return value
    if isinstance(value, dict):
        return _from_dict(value, where)
    if isinstance(value, _IOStream) and value != IOSTREAM.UNSPECIFIED:
        return {IOSTREAM.STDIN: FILE_STDIN, IOSTREAM.STDOUT: FILE_STDOUT,
                IOSTREAM.STDERR: FILE_STDERR}[value]
    if isinstance(value, _Direction):
        return replace(IN, direction=value, name=repr(value))
    if isinstance(value, _Type):
        return CompatParam(None if value == TYPE.OBJECT else value)
    if isinstance(value, str) and value.upper() in _BY_NAME:
        return _BY_NAME[value.upper()]
    import difflib
    close = difflib.get_close_matches(str(value).upper(), list(_BY_NAME), n=1)
    hint = f" Did you mean {close[0]}?" if close else ""
    raise UsageError(f"{where}: {value!r} is not a PyCOMPSs parameter direction.{hint} Use the "
                     f"constants of pycompss.api.parameter (IN, INOUT, FILE_IN, COLLECTION_IN, "
                     f"...), the dictionary form or Parameter(TYPE.x, DIRECTION.y).")


def to_native(value: Any, where: str) -> Param:
    """Any PyCOMPSs parameter description -> taskflow's Param (UsageError naming ``where``)."""
    cp = _as_compat(value, where)
    ctype = cp.content_type
    if ctype == TYPE.EXTERNAL_STREAM:
        raise UsageError(f"{where}: {cp!r}: external streams are not supported by taskflow's "
                         f"PyCOMPSs layer; use STREAM_IN / STREAM_OUT with an "
                         f"ObjectDistroStream or a FileDistroStream.")
    if ctype == TYPE.STREAM:
        direction = "OUT" if _DIR_NAMES.get(cp.direction, "IN") == "OUT" else "IN"
        return Param(kind=STREAM_KIND, direction=direction, name=cp.name)
    if ctype in (TYPE.PSCO, TYPE.EXTERNAL_PSCO):
        raise UsageError(f"{where}: {cp!r}: persistent objects (storage) are not supported by "
                         f"taskflow's PyCOMPSs layer.")
    kind = _KIND.get(ctype, OBJECT_KIND)
    direction = _DIR_NAMES.get(cp.direction, "IN")
    stream = _STREAM_NAMES.get(cp.stream)
    if stream is not None:
        kind = FILE_KIND
        if stream == "stdin" and direction != "IN":
            raise UsageError(f"{where}: {cp!r}: standard input is only read; use FILE_IN_STDIN "
                             f"(a task cannot write a file through its stdin).")
        if stream in ("stdout", "stderr"):
            if direction == "IN":
                raise UsageError(f"{where}: {cp!r}: the program writes its {stream}; use "
                                 f"FILE_OUT_{stream.upper()} (or FILE_INOUT_{stream.upper()} to "
                                 f"append).")
            if direction in ("CONCURRENT", "COMMUTATIVE"):
                direction = "INOUT"       # appended to, one task after the other
    if kind == COLLECTION_KIND:
        return Param(kind=kind, direction=direction, depth=cp.depth, prefix=cp.prefix,
                     elem_kind=FILE_KIND if cp.elem_file else OBJECT_KIND, name=cp.name)
    return Param(kind=kind, direction=direction, stream=stream, prefix=cp.prefix,
                 name=cp.name)


def renamed(value: Any, where: str) -> bool:
    """Whether a parameter description asks for COMPSs's version names (``Keep_rename``
    on a file or a collection of files)."""
    cp = _as_compat(value, where)
    return cp.keep_rename and cp.stream == IOSTREAM.UNSPECIFIED and (
        cp.content_type == TYPE.FILE or cp.elem_file)


def is_file_like(p: Param) -> bool:
    return p.kind in (FILE_KIND, DIRECTORY_KIND)


__all__ = sorted([*_BY_NAME, "TYPE", "DIRECTION", "IOSTREAM", "PREFIX", "Type", "Direction",
                  "StdIOStream", "Prefix", "Depth", "Weight", "Keep_rename", "Cache",
                  "block_count", "block_length", "stride", "STDIN", "STDOUT", "STDERR",
                  "UNSPECIFIED", "Parameter"])
