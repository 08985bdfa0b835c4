"""The tasks a :class:`~.dds.DDS` runs: one per partition (plain PyCOMPSs tasks)."""
from __future__ import annotations

import os
from collections import defaultdict
from typing import Any, Callable

from ..api.parameter import COLLECTION_IN
from ..api.task import task


@task(returns=1)
def load(items: Any) -> list[Any]:
    return list(items)


@task(returns=1)
def map_partition(f: Callable[[Any], Any], partition: list[Any]) -> list[Any]:
    out = f(partition)
    return list(out) if out is not None else []


@task(returns=1)
def reduce_partition(f: Callable[[Any, Any], Any], partition: list[Any]) -> Any:
    return _fold(f, partition)


@task(returns=1, values=COLLECTION_IN)
def reduce_values(f: Callable[[Any, Any], Any], values: list[Any]) -> Any:
    return _fold(f, values)


def _fold(f: Callable[[Any, Any], Any], values: list[Any]) -> Any:
    """``f`` over the values left to right; empty partitions (EMPTY) do not count."""
    vals = [v for v in values if not isinstance(v, _Empty)]
    if not vals:
        return EMPTY
    acc = vals[0]
    for v in vals[1:]:
        acc = f(acc, v)
    return acc


class _Empty:
    """A partition with nothing to reduce (skipped by the next level)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Empty)

    def __hash__(self) -> int:
        return 0


EMPTY = _Empty()


@task(returns=1)
def combine(partition: list[Any], creator: Callable[[Any], Any],
            combiner: Callable[[Any, Any], Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for k, v in partition:
        out[k] = combiner(out[k], v) if k in out else creator(v)
    return out


@task(returns=1)
def merge(a: dict[Any, Any], b: dict[Any, Any], merger: Callable[[Any, Any], Any]
          ) -> dict[Any, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = merger(out[k], v) if k in out else v
    return out


@task(returns=1)
def bucket(partition: list[Any], key: Callable[[Any], int], n: int, i: int) -> list[Any]:
    return [x for x in partition if key(x) % n == i]


@task(returns=1, parts=COLLECTION_IN)
def concat(parts: list[list[Any]]) -> list[Any]:
    out: list[Any] = []
    for p in parts:
        out.extend(p)
    return out


@task(returns=1)
def slice_of_dict(d: dict[Any, Any], n: int, i: int) -> list[Any]:
    items = sorted(d.items(), key=lambda kv: repr(kv[0]))
    return items[i::n]


@task(returns=1)
def count_values(partition: list[Any]) -> dict[Any, int]:
    counts: dict[Any, int] = defaultdict(int)
    for x in partition:
        counts[x] += 1
    return dict(counts)


@task(returns=1)
def read_files(paths: list[str]) -> list[tuple[str, str]]:
    out = []
    for p in paths:
        with open(p) as f:
            out.append((p, f.read()))
    return out


@task(returns=1)
def read_chunk(path: str, start: int, size: int) -> list[str]:
    with open(path) as f:
        f.seek(start)
        return [f.read(size)]


def file_size(path: str) -> int:
    return os.path.getsize(path)
