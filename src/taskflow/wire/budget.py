"""How much memory a node may use: the amounts of ``memory_budget`` and ``memory_pause``.

Both sides read these settings: the master checks them where the user gives
them (``Runtime(...)``, ``taskflow run``, the cluster file), the node's agent
turns them into bytes against its own memory. An amount is a number of GB
(as ``memory_size`` and the cluster file's ``memory`` are), a string with a
unit (``"512MB"``, ``"4 GiB"``), or a share of the node's memory (``"60%"``).
"""
from __future__ import annotations

import re
from typing import Final, Union

Amount = Union[int, float, str]

BUDGET_SHARE: Final = 0.6       # default budget: this share of the node's memory
PAUSE_OVER_BUDGET: Final = 4 / 3   # default pause mark: this many times the budget...
PAUSE_MAX_SHARE: Final = 0.95      # ...but at most this share of the node's memory

_UNITS = {"": 10**9, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_FORM = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(%|[a-zA-Z]*)\s*$")


def check(spec: Amount | None, what: str) -> None:
    """Raise ValueError naming ``what`` and the forms it may take, unless ``spec`` is one."""
    if spec is not None:
        to_bytes(spec, 1.0, what)


def to_bytes(spec: Amount, node_gb: float, what: str) -> int:
    """``spec`` in bytes on a node of ``node_gb`` GB (see the module doc)."""
    hint = (f"{what} must be a number of GB, an amount with a unit (\"512MB\", \"4GiB\") or a "
            f"share of the node's memory (\"60%\"), not {spec!r}")
    if isinstance(spec, bool):
        raise ValueError(hint)
    if isinstance(spec, (int, float)):
        if spec <= 0:
            raise ValueError(hint)
        return int(spec * 10**9)
    if not isinstance(spec, str):
        raise ValueError(hint)
    m = _FORM.match(spec)
    if m is None:
        raise ValueError(hint)
    number, unit = float(m.group(1)), m.group(2).lower()
    if unit == "%":
        if not 0 < number <= 100:
            raise ValueError(f"{what}: a share of the node's memory is above 0% and at most "
                             f"100%, not {spec!r}")
        return int(node_gb * 2**30 * number / 100)
    if unit not in _UNITS or number <= 0:
        raise ValueError(hint)
    return int(number * _UNITS[unit])


def marks(budget: Amount | None, pause: Amount | None, node_gb: float) -> tuple[int, int]:
    """(budget, pause mark) in bytes on a node of ``node_gb`` GB, defaults filled in.

    The pause mark is never below the budget: a pause mark given alone, below the
    default budget, lowers the budget to it; a budget given above a pause mark given
    raises the mark to it.
    """
    p = to_bytes(pause, node_gb, "memory_pause") if pause is not None else None
    if budget is not None:
        b = to_bytes(budget, node_gb, "memory_budget")
    else:
        b = int(node_gb * 2**30 * BUDGET_SHARE)
        if p is not None:
            b = min(b, p)
    if p is None:
        p = max(b, min(int(b * PAUSE_OVER_BUDGET), int(node_gb * 2**30 * PAUSE_MAX_SHARE)))
    return b, max(p, b)
