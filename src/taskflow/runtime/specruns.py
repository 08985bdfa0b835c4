"""What the runtime derives from each task function, kept apart from what it declared.

A :class:`~taskflow.graph.spec.TaskSpec` is what the decorator declared; the
runtime never writes it. What runs learn from a function's calls (their mean
duration, the bytes they leave on their node) and what they make of the
function (its pickle and that pickle's digest: a node gets a function once, by
digest) is a :class:`SpecRun`, one per spec, made on first use.

Each run looks them up in its own :class:`SpecRuns` (``RunState.spec_runs``, a
plain dict keyed by the spec: one subscript per task on the hot path). A run's
first look-up of a spec takes the record earlier runs in this process left
(:data:`_LEARNED`, held weakly by the spec, so it lives exactly as long as the
spec, as it did when these were the spec's attributes): a second run starts
from what the first learned. A copy of a spec (a compat variant,
``compat.taskfn.make_variant``) is another key, so it starts with no history.

The scheduler reads the durations for every task it places, and the outcome
rules update them for every task that ends: plain slots, read directly, and
one method call per update.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..graph.spec import TaskSpec


class SpecRun:
    """One task function in this run: its calls so far, and its pickle once made."""

    __slots__ = ("n", "mean", "held_mean", "digest", "payload")

    def __init__(self) -> None:
        self.n = 0                  # calls that ended well (prefetch decisions, walltime fit)
        self.mean = 0.0             # their running mean duration, seconds
        self.held_mean = 0          # bytes a call leaves on its node (prefetch depth)
        self.digest: bytes | None = None     # of the pickle below: how nodes know it
        self.payload: bytes | None = None    # the function, pickled to ship (runtime.loop.outbox)

    def ran(self, seconds: float) -> None:
        """One more call ended well after ``seconds`` (the mean of about the last 50)."""
        n = self.n
        self.mean = seconds if n == 0 else \
            self.mean + (seconds - self.mean) / (n + 1 if n < 49 else 50)
        self.n = n + 1

    def left(self, nbytes: int) -> None:
        """A call left ``nbytes`` of values on its node."""
        self.held_mean = nbytes if not self.held_mean else (3 * self.held_mean + nbytes) // 4


# spec -> its SpecRun, across the runs of this process (entries go with their spec)
_LEARNED: weakref.WeakKeyDictionary[TaskSpec, SpecRun] = weakref.WeakKeyDictionary()


def learned(spec: TaskSpec) -> SpecRun | None:
    """What this process learned of ``spec``'s calls so far (any run), if anything."""
    return _LEARNED.get(spec)


class SpecRuns(dict["TaskSpec", SpecRun]):
    """One run's spec -> :class:`SpecRun` (``runs[spec]``: the process's record, made on
    first use). Read with ``get`` from outside the run's lock (the progress display),
    which adds nothing."""

    def __missing__(self, spec: TaskSpec) -> SpecRun:
        run = _LEARNED.get(spec)
        if run is None:
            run = _LEARNED[spec] = SpecRun()
        self[spec] = run
        return run
