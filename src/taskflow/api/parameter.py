"""Parameter directions and types: the constants users put in ``@task(...)``.

Every constant is a :class:`Param`: a content kind (object, file, directory,
collection), a direction, and optionally a stream, a prefix and a depth. The
dictionary form ``{Type: FILE_IN, StdIOStream: STDIN, Prefix: "--in="}`` is
normalised to the same :class:`Param` by :func:`parse_param`.

Example::

    from taskflow import FILE_IN, FILE_OUT_STDOUT, STDIN, StdIOStream, Type, binary, task

    @binary(binary="sort")
    @task(src={Type: FILE_IN, StdIOStream: STDIN}, out=FILE_OUT_STDOUT)
    def sort_lines(src: str, out: str) -> None: ...   # src as FILE_IN_STDIN: sort < src
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import ParameterError
from ..graph.param import (COLLECTION_KIND, D_COMMUTATIVE, D_CONCURRENT, D_IN, D_IN_DELETE,
                           D_INOUT, D_OUT, DIRECTORY_KIND, FILE_KIND, OBJECT_KIND, READS,
                           STREAM_KIND, WRITES, Param)

# Dictionary-form keys (PyCOMPSs spells them the same way).
Type = "type"
Direction = "direction"
StdIOStream = "stream"
Prefix = "prefix"
Depth = "depth"
Weight = "weight"
Keep = "keep"

# Streams.
STDIN = "stdin"
STDOUT = "stdout"
STDERR = "stderr"
UNSPECIFIED = None


_IN, _OUT, _INOUT, _CONCURRENT, _COMMUTATIVE, _IN_DELETE = (
    D_IN, D_OUT, D_INOUT, D_CONCURRENT, D_COMMUTATIVE, D_IN_DELETE)

__all__ = ["Param", "ParameterError", "READS", "WRITES", "OBJECT_KIND", "FILE_KIND",
           "DIRECTORY_KIND", "COLLECTION_KIND"]


def _p(name: str, kind: str, direction: str, **kw: Any) -> Param:
    return Param(kind=kind, direction=direction, name=name, **kw)


IN = _p("IN", OBJECT_KIND, _IN)
OUT = _p("OUT", OBJECT_KIND, _OUT)
INOUT = _p("INOUT", OBJECT_KIND, _INOUT)
CONCURRENT = _p("CONCURRENT", OBJECT_KIND, _CONCURRENT)
COMMUTATIVE = _p("COMMUTATIVE", OBJECT_KIND, _COMMUTATIVE)
IN_DELETE = _p("IN_DELETE", OBJECT_KIND, _IN_DELETE)

FILE = _p("FILE", FILE_KIND, _IN)
FILE_IN = _p("FILE_IN", FILE_KIND, _IN)
FILE_OUT = _p("FILE_OUT", FILE_KIND, _OUT)
FILE_INOUT = _p("FILE_INOUT", FILE_KIND, _INOUT)
FILE_CONCURRENT = _p("FILE_CONCURRENT", FILE_KIND, _CONCURRENT)
FILE_COMMUTATIVE = _p("FILE_COMMUTATIVE", FILE_KIND, _COMMUTATIVE)

FILE_IN_STDIN = _p("FILE_IN_STDIN", FILE_KIND, _IN, stream=STDIN)
FILE_OUT_STDOUT = _p("FILE_OUT_STDOUT", FILE_KIND, _OUT, stream=STDOUT)
FILE_OUT_STDERR = _p("FILE_OUT_STDERR", FILE_KIND, _OUT, stream=STDERR)
FILE_INOUT_STDOUT = _p("FILE_INOUT_STDOUT", FILE_KIND, _INOUT, stream=STDOUT)
FILE_INOUT_STDERR = _p("FILE_INOUT_STDERR", FILE_KIND, _INOUT, stream=STDERR)

DIRECTORY = _p("DIRECTORY", DIRECTORY_KIND, _IN)
DIRECTORY_IN = _p("DIRECTORY_IN", DIRECTORY_KIND, _IN)
DIRECTORY_OUT = _p("DIRECTORY_OUT", DIRECTORY_KIND, _OUT)
DIRECTORY_INOUT = _p("DIRECTORY_INOUT", DIRECTORY_KIND, _INOUT)

COLLECTION = _p("COLLECTION", COLLECTION_KIND, _IN)
COLLECTION_IN = _p("COLLECTION_IN", COLLECTION_KIND, _IN)
COLLECTION_OUT = _p("COLLECTION_OUT", COLLECTION_KIND, _OUT)
COLLECTION_INOUT = _p("COLLECTION_INOUT", COLLECTION_KIND, _INOUT)
COLLECTION_FILE_IN = _p("COLLECTION_FILE_IN", COLLECTION_KIND, _IN, elem_kind=FILE_KIND)
COLLECTION_FILE_OUT = _p("COLLECTION_FILE_OUT", COLLECTION_KIND, _OUT, elem_kind=FILE_KIND)
COLLECTION_FILE_INOUT = _p("COLLECTION_FILE_INOUT", COLLECTION_KIND, _INOUT, elem_kind=FILE_KIND)

# Streams between running tasks (taskflow.Stream, FileStream: docs/guide/streams.md):
# not a data dependency; the task publishes (STREAM_OUT) or polls (STREAM_IN) while it runs.
STREAM_IN = _p("STREAM_IN", STREAM_KIND, _IN)
STREAM_OUT = _p("STREAM_OUT", STREAM_KIND, _OUT)

_BY_NAME = {p.name: p for p in (
    IN, OUT, INOUT, CONCURRENT, COMMUTATIVE, IN_DELETE,
    FILE, FILE_IN, FILE_OUT, FILE_INOUT, FILE_CONCURRENT, FILE_COMMUTATIVE,
    FILE_IN_STDIN, FILE_OUT_STDOUT, FILE_OUT_STDERR, FILE_INOUT_STDOUT,
    FILE_INOUT_STDERR, DIRECTORY, DIRECTORY_IN, DIRECTORY_OUT, DIRECTORY_INOUT,
    COLLECTION, COLLECTION_IN, COLLECTION_OUT, COLLECTION_INOUT,
    COLLECTION_FILE_IN, COLLECTION_FILE_OUT, COLLECTION_FILE_INOUT, STREAM_IN, STREAM_OUT)}
_DIRECTION_PARAMS = {_IN: IN, _OUT: OUT, _INOUT: INOUT, _CONCURRENT: CONCURRENT,
                     _COMMUTATIVE: COMMUTATIVE, _IN_DELETE: IN_DELETE}
_DICT_KEYS = {Type, Direction, StdIOStream, Prefix, Depth, Weight, Keep}
_STREAMS = {STDIN, STDOUT, STDERR, None}

PARAM_NAMES = sorted(_BY_NAME)


def parse_param(value: Any, where: str) -> Param:
    """Normalise a direction given to ``@task`` into a :class:`Param`.

    ``where`` names the function and parameter for the error message.
    """
    if isinstance(value, Param):
        return value
    if isinstance(value, str) and value.upper() in _BY_NAME:
        return _BY_NAME[value.upper()]
    if isinstance(value, dict):
        return _parse_dict(value, where)
    hint = ""
    if isinstance(value, str):
        import difflib
        close = difflib.get_close_matches(value.upper(), PARAM_NAMES, n=1)
        if close:
            hint = f" Did you mean {close[0]}?"
    raise ParameterError(
        f"{where}: unknown direction {value!r}.{hint} Use one of the constants "
        f"importable from taskflow (IN, OUT, INOUT, FILE_IN, FILE_OUT, "
        f"COLLECTION_IN, ...) or the dictionary form {{Type: FILE_IN, StdIOStream: STDIN}}.")


def _parse_dict(d: dict[Any, Any], where: str) -> Param:
    unknown = set(d) - _DICT_KEYS
    if unknown:
        raise ParameterError(
            f"{where}: unknown key(s) {sorted(map(str, unknown))} in the dictionary form; "
            f"allowed keys are Type, Direction, StdIOStream, Prefix, Depth, Weight.")
    base = parse_param(d.get(Type, IN), where) if Type in d else IN
    changes: dict[str, Any] = {}
    if Direction in d:
        dirp = parse_param(d[Direction], where)
        if dirp.kind != OBJECT_KIND and Type in d and dirp.kind != base.kind:
            raise ParameterError(f"{where}: Direction {dirp!r} contradicts Type {base!r}.")
        changes["direction"] = dirp.direction
        if Type not in d:
            base = dirp
    if StdIOStream in d:
        stream = d[StdIOStream]
        if stream not in _STREAMS:
            raise ParameterError(
                f"{where}: StdIOStream must be STDIN, STDOUT or STDERR, not {stream!r}.")
        changes["stream"] = stream
    if Prefix in d:
        changes["prefix"] = prefix_value(d[Prefix], where)
    if Depth in d:
        changes["depth"] = depth_value(d[Depth], where)
    p = replace(base, name="", **changes) if changes else base
    if p.stream is not None:
        if p.kind != FILE_KIND:
            raise ParameterError(
                f"{where}: a StdIOStream parameter must be a file (Type: FILE_IN / FILE_OUT / "
                f"FILE_INOUT), not {p.kind}.")
        if p.stream == STDIN and p.direction != _IN:
            raise ParameterError(f"{where}: STDIN can only be read (use FILE_IN).")
        if p.stream in (STDOUT, STDERR) and p.direction not in (_OUT, _INOUT):
            raise ParameterError(
                f"{where}: {p.stream.upper()} is written by the program: use FILE_OUT or FILE_INOUT.")
    return p


def prefix_value(value: Any, where: str) -> str:
    """A dictionary form's Prefix, checked (also for the PyCOMPSs layer's)."""
    if not isinstance(value, str):
        raise ParameterError(f"{where}: Prefix must be a string, not {value!r}.")
    return value


def depth_value(value: Any, where: str) -> int:
    """A dictionary form's Depth, checked (also for the PyCOMPSs layer's)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ParameterError(f"{where}: Depth must be an int >= 1, not {value!r}.")
    return value
