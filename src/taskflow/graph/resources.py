"""Named, fractional and alternative resources a task asks for (``@constraint``).

A node declares resources beside its cores and memory (the cluster file's
``resources:``, ``LocalProvider(resources=...)``): a *counted* one is a
number of interchangeable tokens (``license: 4``), an *indexed* one a list
of devices (``gpu: [0, 1]``, ``socket: [0, 1]``). A task asks with
``@constraint(resources={"gpu": 0.25, "license": 1})``, or gives
alternatives, ``variants=[{"gpus": 1, "cores": 4}, {"cores": 16}]``, of
which the first that fits when the task starts is taken
(:mod:`taskflow.runtime.scheduling.resources`).

Amounts are kept as integers in units of ``1 / FRACTION`` (an exact sum:
four tasks of 0.25 fill a device, never 1.0000000001 of it). A fraction
below 1 of an indexed resource is a share of one device, which other tasks
may share up to 1.0; a whole number asks for that many devices of its own.
What this module checks needs no node (the numbers, the keys); what needs
the nodes (a name none has, a fraction of a counted resource, a request no
node can ever meet) is checked when the task is called
(:func:`taskflow.runtime.scheduling.resources.check`).
"""
from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

from ..errors import UsageError

FRACTION = 10_000               # amounts are counted in 1/10,000ths (4 decimal places)
ALIASES = {"gpus": "gpu"}       # the name a request or a node may also use -> the name
CORES = ("cores", "computing_units")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


class Variant(NamedTuple):
    """One way a task can run: its cores (``None``: the task's own ``computing_units``) and
    resources."""

    cus: int | None
    amounts: tuple[tuple[str, int], ...]      # (name, amount in 1/FRACTION), sorted by name


def canonical(name: str) -> str:
    """The name a resource is known by (``gpus`` is ``gpu``)."""
    return ALIASES.get(name, name)


def check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise UsageError(f"{where}: resource name {name!r} must be a word (letters, digits, "
                         f"'_', '-', '.'), such as 'gpu' or 'license'.")
    return canonical(name)


def units(amount: Any, where: str) -> int:
    """``amount`` (a number > 0) in 1/FRACTION; fractions above 1 must be whole."""
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) \
            or not math.isfinite(amount):
        raise UsageError(f"{where} must be a number > 0, not {amount!r}.")
    if amount <= 0:
        raise UsageError(f"{where} is {amount!r}: ask for an amount > 0 (leave the resource "
                         f"out to ask for none).")
    u = round(amount * FRACTION)
    if abs(u - amount * FRACTION) > 1e-6 * max(1.0, amount):
        raise UsageError(f"{where} is {amount!r}: amounts have at most 4 decimal places "
                         f"(0.25, 0.3333).")
    if u > FRACTION and u % FRACTION:
        raise UsageError(f"{where} is {amount!r}: above 1 an amount must be whole (whole "
                         f"devices); a fraction below 1 shares one device.")
    return u


def shown(u: int) -> int | float:
    """An amount in 1/FRACTION as the user wrote it (1, 0.25)."""
    return u // FRACTION if u % FRACTION == 0 else u / FRACTION


def amounts(resources: Any, where: str) -> tuple[tuple[str, int], ...]:
    """A ``resources={name: amount}`` mapping, checked, as sorted (name, units)."""
    if not isinstance(resources, dict):
        raise UsageError(f"{where}: resources must be a dict {{name: amount}} such as "
                         f"{{'gpu': 0.25, 'license': 1}}, not {resources!r}.")
    out: dict[str, int] = {}
    for name, amount in resources.items():
        key = check_name(name, f"{where}: resources")
        if key in out:
            raise UsageError(f"{where}: resources names {key!r} twice ({name!r} is "
                             f"{key!r}).")
        out[key] = units(amount, f"{where}: resources[{name!r}]")
    return tuple(sorted(out.items()))


def from_text(items: list[str], where: str) -> dict[str, int | float]:
    """``["gpu=0.25", "license=1"]`` (a command line's ``--resource NAME=AMOUNT``) as the
    mapping ``resources=`` takes, checked as :func:`amounts` checks it."""
    out: dict[str, int | float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"{where}: {item!r} is not NAME=AMOUNT (such as gpu=0.25 or "
                             f"license=1).")
        try:
            value: int | float = int(text) if text.strip().isdigit() else float(text)
        except ValueError:
            raise UsageError(f"{where}: {item!r}: the amount {text!r} is not a number.") \
                from None
        out[name] = value
    amounts(out, where)
    return out


def variant(v: Any, where: str) -> Variant:
    """One entry of ``variants=``: ``cores`` (or ``computing_units``) and resource names
    (``gpus``, ``license``...) with their amounts. Memory is the task's own
    ``memory_size``, the same in every variant."""
    if not isinstance(v, dict) or not v:
        raise UsageError(f"{where} must be a non-empty dict such as {{'gpus': 1, "
                         f"'cores': 4}}, not {v!r}.")
    cus: int | None = None
    rest: dict[str, Any] = {}
    for key, value in v.items():
        if key in CORES:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{where}: {key} must be an int >= 1, not {value!r}.")
            cus = value
        elif key in ("memory_size", "memory"):
            raise UsageError(f"{where}: {key} is the task's own (@constraint(memory_size=...)), "
                             f"the same in every variant; variants choose cores and resources.")
        else:
            rest[key] = value
    return Variant(cus, amounts(rest, where) if rest else ())


def request(resources: Any, variants: Any, where: str) -> tuple[Variant, ...] | None:
    """What a task asks for beyond its cores and memory: one variant per alternative
    (``resources`` is the one variant without ``variants``, and is added to each of them
    with); None: nothing (the plain path)."""
    base = amounts(resources, where) if resources is not None else ()
    if variants is None:
        return (Variant(None, base),) if base else None
    if not isinstance(variants, (list, tuple)) or not variants:
        raise UsageError(f"{where}: variants must be a non-empty list of dicts such as "
                         f"[{{'gpus': 1, 'cores': 4}}, {{'cores': 16}}], not {variants!r}.")
    out = []
    for i, v in enumerate(variants):
        one = variant(v, f"{where}: variants[{i}]")
        if base:
            mine = dict(one.amounts)
            clash = sorted(set(mine) & {n for n, _ in base})
            if clash:
                raise UsageError(f"{where}: variants[{i}] names {clash[0]!r}, which "
                                 f"resources= asks for already; say it in one place.")
            one = one._replace(amounts=tuple(sorted({**dict(base), **mine}.items())))
        out.append(one)
    return tuple(out)


def describe(v: Variant, cus: int, mem: float) -> str:
    """``2 cores, 4 GB, gpu 0.25, license 1`` (``cus``/``mem``: the task's own)."""
    c = v.cus if v.cus is not None else cus
    parts = [f"{c} core{'s' if c != 1 else ''}"]
    if mem:
        parts.append(f"{mem:g} GB")
    parts += [f"{n} {shown(u)}" for n, u in v.amounts]
    return ", ".join(parts)


def as_json(v: tuple[Variant, ...]) -> list[dict[str, Any]]:
    """The request as the journal's ``constraints`` records it."""
    out = []
    for one in v:
        d: dict[str, Any] = dict((n, shown(u)) for n, u in one.amounts)
        if one.cus is not None:
            d["cores"] = one.cus
        out.append(d)
    return out
