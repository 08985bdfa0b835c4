"""``pycompss.functions.map``: ``map`` that gives a list (calls of a task give futures)."""
from __future__ import annotations

import builtins
from typing import Any


def map(*args: Any) -> list[Any]:  # noqa: A001 - PyCOMPSs's name
    return list(builtins.map(*args))
