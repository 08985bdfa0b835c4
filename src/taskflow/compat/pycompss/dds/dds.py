"""The Distributed Data Set: PyCOMPSs's ``pycompss.dds.DDS``, written over the PyCOMPSs API.

Operations that transform (``map``, ``filter``, ``map_partitions``, ...) add
one task per partition and return the DDS itself, so they chain; operations
that answer (``collect``, ``count``, ``reduce``, ``sum``, ...) wait for the
values. Functions given to it travel to the workers by value.
"""
from __future__ import annotations

import itertools
import os
from collections import deque
from typing import Any, Callable, Iterable

from ..api.api import compss_barrier, compss_wait_on
from . import tasks as T

_NONE = object()


def _sizes(total: int, parts: int) -> list[int]:
    parts = max(1, parts)
    sizes = [total // parts] * parts
    for i in range(total % parts):
        sizes[i] += 1
    return sizes


class DDS:
    """A data set split into partitions (futures of lists)."""

    def __init__(self, iterator: Iterable[Any] | None = None, num_of_parts: int = 3) -> None:
        self.partitions: list[Any] = []
        if iterator is not None:
            self.load(iterator, num_of_parts)

    # -- loading ----------------------------------------------------------------------
    def load(self, iterator: Iterable[Any], num_of_parts: int = 3) -> DDS:
        """Split ``iterator``'s values over ``num_of_parts`` partitions (``-1``: it is a
        list of partitions already)."""
        if self.partitions:
            raise ValueError("DDS: the partitions are loaded already; make a new DDS.")
        if num_of_parts == -1:
            self.partitions = list(iterator)
            return self
        items = iterator if isinstance(iterator, (list, tuple, str)) else list(iterator)
        start = 0
        for size in _sizes(len(items), num_of_parts):
            self.partitions.append(T.load(items[start:start + size]))
            start += size
        return self

    def load_file(self, file_path: str, chunk_size: int = 1024, worker_read: bool = False
                  ) -> DDS:
        """The file's text in chunks of ``chunk_size`` characters, one per partition."""
        if worker_read:
            total = T.file_size(file_path)
            for start in range(0, total, chunk_size):
                self.partitions.append(T.read_chunk(os.path.abspath(file_path), start,
                                                    chunk_size))
            return self
        with open(file_path) as f:
            while True:
                chunk = f.read(chunk_size)
                if not chunk:
                    break
                self.partitions.append(T.load([chunk]))
        return self

    def load_text_file(self, file_name: str, chunk_size: int = 1024, in_bytes: bool = True
                       ) -> DDS:
        """The file's lines (without their newline), ``chunk_size`` bytes of them (or
        lines, ``in_bytes=False``) per partition."""
        part: list[str] = []
        size = 0
        with open(file_name) as f:
            for line in f:
                part.append(line.rstrip("\n"))
                size += len(line.encode()) if in_bytes else 1
                if size >= chunk_size:
                    self.partitions.append(T.load(part))
                    part, size = [], 0
        if part:
            self.partitions.append(T.load(part))
        return self

    def load_files_from_dir(self, dir_path: str, num_of_parts: int = 3) -> DDS:
        """(path, content) of every file of the directory, over ``num_of_parts``."""
        files = sorted(os.path.join(dir_path, f) for f in os.listdir(dir_path))
        start = 0
        for size in _sizes(len(files), num_of_parts):
            self.partitions.append(T.read_files(files[start:start + size]))
            start += size
        return self

    # -- transformations ----------------------------------------------------------------
    def map_partitions(self, f: Callable[[list[Any]], Iterable[Any]]) -> DDS:
        self.partitions = [T.map_partition(f, p) for p in self.partitions]
        return self

    def map(self, f: Callable[[Any], Any]) -> DDS:
        return self.map_partitions(_Mapped(f))

    def map_and_flatten(self, f: Callable[[Any], Iterable[Any]]) -> DDS:
        return self.map_partitions(_Flat(f))

    flat_map = map_and_flatten

    def filter(self, f: Callable[[Any], bool]) -> DDS:
        return self.map_partitions(_Filtered(f))

    def key_by(self, f: Callable[[Any], Any]) -> DDS:
        return self.map(_KeyBy(f))

    def keys(self) -> DDS:
        return self.map(_item(0))

    def values(self) -> DDS:
        return self.map(_item(1))

    def map_values(self, f: Callable[[Any], Any]) -> DDS:
        return self.map(_MapValue(f))

    def flatten_by_key(self, f: Callable[[Any], Iterable[Any]]) -> DDS:
        return self.map_and_flatten(_FlatValues(f))

    def union(self, *others: DDS) -> DDS:
        for o in others:
            self.partitions.extend(o.partitions)
        return self

    def partition_by(self, partition_func: Callable[[Any], int] | None = None,
                     num_of_partitions: int = -1) -> DDS:
        """Regroup the values: value x goes to partition ``partition_func(x) % n``."""
        n = len(self.partitions) if num_of_partitions == -1 else num_of_partitions
        key = partition_func or _default_hash
        self.partitions = [T.concat([T.bucket(p, key, n, i) for p in self.partitions])
                           for i in range(n)]
        return self

    def distinct(self) -> DDS:
        pairs: DDS = self.map(_pair_none).reduce_by_key(_first)
        return pairs.keys()

    def combine_by_key(self, creator_func: Callable[[Any], Any],
                       combiner_func: Callable[[Any, Any], Any],
                       merger_function: Callable[[Any, Any], Any], partitions: int = -1,
                       as_dict: bool = False) -> Any:
        """Per key: ``creator_func`` on its first value, ``combiner_func`` for the next in a
        partition, ``merger_function`` across partitions (a tree)."""
        n = len(self.partitions) if partitions < 0 else partitions
        todo = deque(T.combine(p, creator_func, combiner_func) for p in self.partitions)
        if not todo:
            return {} if as_dict else self
        while len(todo) > 1:
            todo.append(T.merge(todo.popleft(), todo.popleft(), merger_function))
        last = todo[0]
        if as_dict:
            return compss_wait_on(last)
        self.partitions = [T.slice_of_dict(last, max(n, 1), i) for i in range(max(n, 1))]
        return self

    def reduce_by_key(self, f: Callable[[Any, Any], Any], as_dict: bool = False) -> Any:
        return self.combine_by_key(_identity, f, f, as_dict=as_dict)

    def group_by_key(self, num_of_parts: int = -1) -> DDS:
        grouped: DDS = self.combine_by_key(_listed, _append, _extend, num_of_parts)
        return grouped

    def count_by_key(self, as_dict: bool = False) -> Any:
        return self.keys().count_by_value(as_dict=as_dict)

    def count_by_value(self, as_dict: bool = False) -> Any:
        return self.map(_pair_one).reduce_by_key(_add, as_dict=as_dict)

    def sort_by_key(self, ascending: bool = True, num_of_parts: int | None = None) -> DDS:
        """(key, value) pairs sorted by key, over ``num_of_parts`` partitions."""
        items = sorted(self.collect(), key=_item(0), reverse=not ascending)
        self.partitions = []
        return self.load(items, num_of_parts or max(1, len(self.partitions) or 3))

    # -- answers ------------------------------------------------------------------------
    def collect(self, keep_partitions: bool = False, future_objects: bool = False) -> Any:
        if future_objects:
            return self.partitions
        parts = compss_wait_on(list(self.partitions))
        if keep_partitions:
            return [list(p) for p in parts]
        return list(itertools.chain.from_iterable(parts))

    def collect_as_dict(self) -> dict[Any, Any]:
        return dict(self.collect())

    def num_of_partitions(self) -> int:
        return len(self.partitions)

    def reduce(self, f: Callable[[Any, Any], Any], initial: Any = _NONE, arity: int = -1,
               collect: bool = True) -> Any:
        """``f`` over all values: per partition, then a tree of ``arity`` at a time."""
        level: list[Any] = [T.reduce_partition(f, p) for p in self.partitions]
        if initial is not _NONE:
            level.insert(0, T.load([initial]))
            level[0] = T.reduce_partition(f, level[0])
        k = arity if arity > 1 else max(2, len(level))
        while len(level) > 1:
            level = [T.reduce_values(f, level[i:i + k]) for i in range(0, len(level), k)]
        if not level:
            raise ValueError("DDS.reduce: the data set is empty and no initial value was given")
        if collect:
            value = compss_wait_on(level[0])
            if isinstance(value, T._Empty):
                raise ValueError("DDS.reduce: the data set is empty and no initial value "
                                 "was given")
            return value
        self.partitions = [T.map_partition(_as_list, level[0])]
        return self

    def sum(self) -> Any:
        return sum(self.map_partitions(_sum_list).collect())

    def count(self) -> int:
        return int(self.map_partitions(_len_list).sum())

    def max(self, key: Callable[[Any], Any] | None = None) -> Any:
        return self.reduce(_Pick(max, key))

    def min(self, key: Callable[[Any], Any] | None = None) -> Any:
        return self.reduce(_Pick(min, key))

    def take(self, num: int) -> list[Any]:
        values: list[Any] = self.collect()
        return values[:num]

    def foreach(self, f: Callable[[Any], Any]) -> None:
        self.map(f)
        compss_barrier()


# Picklable helpers (the functions a DDS sends to its tasks).
class _Mapped:
    def __init__(self, f: Callable[[Any], Any]) -> None:
        self.f = f

    def __call__(self, part: list[Any]) -> list[Any]:
        return [self.f(x) for x in part]


class _Flat(_Mapped):
    def __call__(self, part: list[Any]) -> list[Any]:
        return [y for x in part for y in self.f(x)]


class _Filtered(_Mapped):
    def __call__(self, part: list[Any]) -> list[Any]:
        return [x for x in part if self.f(x)]


class _KeyBy(_Mapped):
    def __call__(self, x: Any) -> Any:
        return self.f(x), x


class _MapValue(_Mapped):
    def __call__(self, kv: Any) -> Any:
        return kv[0], self.f(kv[1])


class _FlatValues(_Mapped):
    def __call__(self, kv: Any) -> Any:
        return [(kv[0], v) for v in self.f(kv[1])]


class _Pick:
    def __init__(self, how: Callable[..., Any], key: Callable[[Any], Any] | None) -> None:
        self.how, self.key = how, key

    def __call__(self, a: Any, b: Any) -> Any:
        return self.how(a, b) if self.key is None else self.how(a, b, key=self.key)


class _item:  # noqa: N801 - used like operator.itemgetter
    def __init__(self, i: int) -> None:
        self.i = i

    def __call__(self, x: Any) -> Any:
        return x[self.i]


def _default_hash(x: Any) -> int:
    return hash(x[0] if isinstance(x, tuple) and len(x) == 2 else x)


def _identity(x: Any) -> Any:
    return x


def _first(a: Any, _: Any) -> Any:
    return a


def _add(a: Any, b: Any) -> Any:
    return a + b


def _listed(x: Any) -> list[Any]:
    return [x]


def _append(acc: list[Any], x: Any) -> list[Any]:
    acc.append(x)
    return acc


def _extend(a: list[Any], b: list[Any]) -> list[Any]:
    return a + b


def _pair_none(x: Any) -> tuple[Any, None]:
    return x, None


def _pair_one(x: Any) -> tuple[Any, int]:
    return x, 1


def _sum_list(part: list[Any]) -> list[Any]:
    return [sum(part)]


def _len_list(part: list[Any]) -> list[int]:
    return [len(part)]


def _as_list(value: Any) -> list[Any]:
    return [] if isinstance(value, T._Empty) else [value]
