"""Where a map's items come from: ``--range``, ``--each-line``, ``--from-json``.

Every source can be read again from its start (a cross product reads the
inner ones once per outer item) and knows its length before anything runs,
without holding its items: a range is arithmetic, a file of lines is read
line by line (its lines are counted once, in chunks), and a JSON list is the
one source held in memory (``json`` has no streaming reader; a list too large
for memory belongs in a file of lines). An item of several sources is the
tuple of one value from each, in the order the options were given; the
first source varies slowest (as GNU Parallel's ``:::`` and HyperQueue's
arrays nest).
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Iterator, Sequence

from ..errors import UsageError

_RANGE_PART = re.compile(r"^\s*(\d+)(?:\s*-\s*(\d+))?(?:\s*:\s*(\d+))?\s*$")


class Source:
    """One option's items; ``values()`` yields them from the start, every time."""

    option: str = ""
    fields: frozenset[str] = frozenset()     # the names {name} may take (JSON objects)

    def __len__(self) -> int:
        raise NotImplementedError

    def values(self) -> Iterator[Any]:
        raise NotImplementedError


class RangeSource(Source):
    """``--range 1-10000[:step]``, or several parts: ``1-10,20,30-40:5`` (HyperQueue's)."""

    option = "--range"

    def __init__(self, text: str) -> None:
        self.text = text
        parts: list[range] = []
        for part in text.split(","):
            m = _RANGE_PART.match(part)
            if m is None:
                raise UsageError(f"--range {text!r}: write START-END[:STEP] (e.g. 1-100, "
                                 f"0-98:2), several separated by commas; {part.strip()!r} is "
                                 f"not one")
            start = int(m.group(1))
            end = int(m.group(2)) if m.group(2) is not None else start
            step = int(m.group(3)) if m.group(3) is not None else 1
            if step < 1:
                raise UsageError(f"--range {text!r}: the step must be 1 or more, not {step}")
            if end < start:
                raise UsageError(f"--range {text!r}: {part.strip()} is empty (its end {end} is "
                                 f"below its start {start}); write {end}-{start}")
            parts.append(range(start, end + 1, step))
        self.parts = parts

    def __len__(self) -> int:
        return sum(len(r) for r in self.parts)

    def values(self) -> Iterator[Any]:
        for r in self.parts:
            yield from r


class LinesSource(Source):
    """``--each-line FILE``: every line of the file, its end of line taken off (an empty
    line is an item too: an empty argument); read line by line, never whole."""

    option = "--each-line"

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        try:
            self._n = _count_lines(self.path)
        except OSError as exc:
            raise UsageError(f"--each-line {path}: cannot read it ({exc.strerror or exc})") \
                from None
        if self._n == 0:
            raise UsageError(f"--each-line {path}: the file has no lines, so the map would "
                             f"have no items")

    def __len__(self) -> int:
        return self._n

    def values(self) -> Iterator[Any]:
        with open(self.path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            for line in f:
                if line.endswith("\n"):
                    line = line[:-2] if line.endswith("\r\n") else line[:-1]
                elif line.endswith("\r"):
                    line = line[:-1]
                yield line


def _count_lines(path: str) -> int:
    n = 0
    last = b"\n"
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


class JsonSource(Source):
    """``--from-json FILE``: the items of a JSON list (objects give ``{field}`` names)."""

    option = "--from-json"

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as exc:
            raise UsageError(f"--from-json {path}: cannot read it ({exc.strerror or exc})") \
                from None
        except UnicodeDecodeError as exc:
            raise UsageError(f"--from-json {path}: not UTF-8 text ({exc.reason} at byte "
                             f"{exc.start})") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"--from-json {path}: not valid JSON at line {exc.lineno}, column "
                             f"{exc.colno}: {exc.msg}") from None
        if not isinstance(data, list):
            raise UsageError(f"--from-json {path}: the file holds a JSON "
                             f"{type(data).__name__ if not isinstance(data, dict) else 'object'}"
                             f"; it must hold a list (one item per element)")
        if not data:
            raise UsageError(f"--from-json {path}: the list is empty, so the map would have "
                             f"no items")
        self.items: list[Any] = data
        self.fields = frozenset(k for it in data if isinstance(it, dict) for k in it)

    def __len__(self) -> int:
        return len(self.items)

    def values(self) -> Iterator[Any]:
        return iter(self.items)


def total(sources: Sequence[Source]) -> int:
    """How many items the cross product of ``sources`` has."""
    n = 1
    for s in sources:
        n *= len(s)
    return n


def product(sources: Sequence[Source]) -> Iterator[tuple[Any, ...]]:
    """The cross product, lazily: the first source varies slowest; the others are read
    again from their start for each of its items (nothing is held but the current tuple)."""
    if not sources:
        return
    head, rest = sources[0], sources[1:]
    for v in head.values():
        if not rest:
            yield (v,)
            continue
        for tail in product(rest):
            yield (v, *tail)
