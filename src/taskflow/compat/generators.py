"""Generators cross between the master and the nodes as PyCOMPSs sends them.

A generator passed to a task, or given back by one (a task may be a generator
function), travels as its remaining values and is a generator again on the
other side. Registered with :mod:`copyreg` under ``--compat pycompss`` only
(:func:`taskflow.compat.importhook.install`, on the master and on every
worker that loads a PyCOMPSs task), so every pickler taskflow uses honours
it. Sending a generator consumes it, as it does in PyCOMPSs.
"""
from __future__ import annotations

import copyreg
import types
from typing import Any, Iterator


def rebuild(values: list[Any]) -> Iterator[Any]:
    """A generator over ``values`` (what a sent generator becomes)."""
    return (v for v in values)


def _reduce(gen: Iterator[Any]) -> tuple[Any, tuple[list[Any]]]:
    return rebuild, (list(gen),)


def register() -> None:
    """Make generators picklable in this process (idempotent)."""
    copyreg.pickle(types.GeneratorType, _reduce)
