"""Short calls a running task makes, run in its own executor (work-first).

A call made in a task costs its node and the master a dispatch, a result and,
for the parent's ``wait_on``, a wait and a resume: most of the time of a
child that computes for microseconds. So a call that surely is short runs
here, in the parent's executor, and the master is told as it goes: the call
still becomes its task there (``NestHere``, made as a ``NestCall`` is, with
its journal row and parent edge; the master places it on the parent's node,
running) and its end follows (``NestHereEnd``: its value or its error, its
lines; one entry with the call, if it sent nothing of its own), in the frames
the parent's calls travel in (no round trip more).

What may run here (:meth:`RunHere.may`): a function with every default
(api.task.runs_here: no option, constraint, file, stream or failure policy),
called with scalars only, one value back, whose mean duration on this
executor is known and below ``SHORT`` (measured on the runs here and the
dispatched ones: a function never run here, or a long one, is dispatched, so
a fan-out of long children is never run one after the other here). Where:

- at the parent's ``wait_on`` of its last call, if that call is still held
  here (the earlier ones went to the master: they run elsewhere meanwhile),
  before the wait is sent (the parent still holds its slot: the node never
  runs more than its slots);
- and then every call made inside that run that may run here, at once (the
  calls inside such a run that may not are sent to the master as usual, as
  calls of the running task ``by`` that call: it waits for them as any task
  does, its slot lent meanwhile).

A call that fails here is told to the master as failed (``task_failed``, so
its retries and its TaskError are the master's); a ``wait_on`` of it asks
the master, which answers that TaskError naming the child, as for any child.
What the call prints goes with its end (at most ``LINES`` lines) and is its
own in the run's log. A resumed run runs nothing here (``Hello.nested_here``:
the master restores the calls that ended well before; one run here would run
again). ``TASKFLOW_NESTED_HERE=0`` turns it off (runtime/loop/hello.py).
"""
from __future__ import annotations

import io
import os
import pickle
import sys
import time
from typing import Any, Callable

from ...context import nested_here
from ...wire import messages as M
from ...wire import protocol as P
from ...wire import values as V
from ...wire.thresholds import EXEC_SHORT
from .capture import WRITING

# s; a function whose mean duration here is below this may run here (the environment's
# TASKFLOW_NESTED_HERE_SHORT where the agent starts, e.g. a test's: every one known)
SHORT = float(os.environ.get("TASKFLOW_NESTED_HERE_SHORT") or EXEC_SHORT)
OUTLIER = 10 * SHORT        # s; the most one run here weighs in its function's mean
LINES = 1000                # lines kept of what one call run here prints (then a count)
VALUE_SENT_AT = 2**20       # bytes of a value made here above which its function runs here no more
_SCALARS = frozenset({int, float, str, bool, type(None), bytes})


class RunHere:
    """This executor's runs of calls in their parent's executor (one per process)."""

    def __init__(self, nest: Any) -> None:      # (nested._Nest, which holds this)
        self.nest = nest
        self.stack: list[int] = []      # the calls running here now (numbers), innermost last
        self.inner: list[float] = []    # ... the seconds of each spent in calls run here
        self.sent: list[int] = []       # ... the calls they sent the master (numbers) ...
        self.marks: list[int] = []      # ... from this index on for each (its barrier's)
        # payloads of the calls run here that ended well, while their handles live
        self.values: dict[tuple[int, int], Any] = {}
        # the last call held that may run here: (parent, seq, its NestCall, function, args)
        self.last: tuple[int, int, M.NestCall, Any, tuple[Any, ...]] | None = None
        self.means: dict[bytes, float] = {}     # the executor's (loop.py), by digest
        self.funcs: dict[bytes, Any] = {}       # ... and its functions
        self.digests: dict[str, bytes] = {}     # key -> digest, as found in funcs
        self.error_info: Callable[[BaseException], M.ErrorInfo] | None = None
        self.big: set[str] = set()      # functions that made a large value here: dispatched

    def attach(self, means: dict[bytes, float], funcs: dict[bytes, Any],
               error_info: Callable[[BaseException], M.ErrorInfo]) -> None:
        self.means, self.funcs, self.error_info = means, funcs, error_info

    def may(self, key: str, func: Any, shape: str, args: tuple[Any, ...],
            kwargs: dict[str, Any], written: Any) -> bool:
        """Whether this call may run here (see the module's docstring)."""
        if func is None or shape != "one" or kwargs or written or not nested_here() or \
                key in self.big:
            return False
        for a in args:
            if type(a) not in _SCALARS:
                return False
        digest = self.digests.get(key)
        if digest is None:              # (a function not run here yet: none known)
            module, _, name = key.partition(":")
            for d, f in self.funcs.items():
                if getattr(f, "__qualname__", None) == name and \
                        getattr(f, "__module__", None) == module:
                    digest = self.digests[key] = d
                    break
            else:
                return False
        m = self.means.get(digest)
        return m is not None and m < SHORT

    def at_wait(self, parent: int, seqs: list[int]) -> None:
        """The parent waits for ``seqs``: its last call, if held here still and one of
        them, runs here now (its NestCall becomes a NestHere in place)."""
        last, self.last = self.last, None
        assert last is not None
        p, seq, call, func, args = last
        if p != parent or seq not in seqs:
            return
        pending = self.nest.pending
        with WRITING:                   # (the holding thread may be sending them)
            if not pending or pending[-1] is not call:
                return                  # sent: the master places it
            pending[-1] = entry = M.NestHere(parent, seq, call.key, call.payload, 0,
                                             time.time())
        nest = self.nest
        if nest.results or nest.logs:   # results owed go first (this may take a while)
            nest.send([], P.encode(M.RESULTS, (nest.results, nest.logs)))
            nest.results.clear()
            nest.logs.clear()
        self.run(parent, seq, call.key, func, args, time.time(), entry)

    def call(self, parent: int, seq: int, key: str, payload: bytes, func: Any,
             args: tuple[Any, ...]) -> None:
        """A call made inside a run here that may run here: it runs now."""
        ts = time.time()
        entry = M.NestHere(parent, seq, key, payload, self.stack[-1], ts)
        self.nest._held(entry)
        self.run(parent, seq, key, func, args, ts, entry)

    def run(self, parent: int, seq: int, key: str, func: Any, args: tuple[Any, ...],
            ts: float, entry: M.NestHere) -> None:
        """Run call ``seq`` here (made at ``ts``); its end (value or error, lines) goes to
        the master."""
        stack = self.stack
        out, err = sys.stdout, sys.stderr
        lines = _Lines()
        sys.stdout, sys.stderr = lines.stream("STDOUT"), lines.stream("STDERR")
        stack.append(seq)
        self.marks.append(len(self.sent))
        inner = self.inner
        inner.append(0.0)
        waited = self.nest.waited
        t0 = time.time()
        try:
            value = func(*args)
        except BaseException as exc:  # noqa: BLE001 - the call's own failure, for the master
            t1 = time.time()
            self._end(entry, None, exc, t0, t1, lines)
            if not isinstance(exc, Exception):
                raise                   # (an interrupt, an exit: the parent's too)
        else:
            t1 = time.time()
            self._end(entry, value, None, t0, t1, lines)
        finally:
            stack.pop()
            del self.sent[self.marks.pop():]
            below = inner.pop()
            sys.stdout, sys.stderr = out, err
        # the function's mean duration here: its own time (neither the calls it ran here
        # nor its waits), as a dispatched run's
        # (at most OUTLIER: a run this executor was not scheduled through, on a loaded
        # machine, weighs as a long one, no more; a long function stays long)
        d = min(t1 - t0 - below - (self.nest.waited - waited), OUTLIER)
        # (all of it, what telling the master costs too) is left out of the duration of
        # the call that ran it here, as waits are (a dispatched task's: loop.py)
        if inner:
            inner[-1] += time.time() - ts
        else:
            self.nest.waited += time.time() - ts
        digest = self.digests.get(key)
        if digest is not None:
            m = self.means.get(digest)
            self.means[digest] = d if m is None else 0.8 * m + 0.2 * d

    def _end(self, call: M.NestHere, value: Any, exc: BaseException | None, t0: float,
             t1: float, lines: _Lines) -> None:
        """The call's end, held to go to the master: with the call itself in one entry
        if the call is still the last entry held (it made no call that went out)."""
        parent, seq = call.parent, call.seq
        result = None
        if exc is None:
            try:
                result = pickle.dumps(value, P.PROTOCOL) if type(value) in _SCALARS \
                    else V.dump(value)
                if type(result) is not bytes:   # (its buffers in band: one NEST frame)
                    result = pickle.dumps(value, P.PROTOCOL)
            except Exception:  # noqa: BLE001 - what only cloudpickle pickles (a lambda)
                try:
                    import cloudpickle
                    result = cloudpickle.dumps(value, P.PROTOCOL)
                except Exception as why:  # noqa: BLE001 - it cannot travel: its failure
                    exc = TypeError(f"its value ({type(value).__name__}) cannot be pickled: "
                                    f"{why}")
        info = None
        if exc is not None:
            assert self.error_info is not None
            info = self.error_info(exc)
        else:
            self.values[(parent, seq)] = result
        nest = self.nest
        pending = nest.pending
        rows = lines.rows()
        with WRITING:                   # (the holding thread may be sending them)
            alone = not pending or pending[-1] is not call
            if not alone:
                pending[-1] = M.NestHereEnd(parent, seq, result, info, t0, t1, rows, call)
        if alone:
            nest._held(M.NestHereEnd(parent, seq, result, info, t0, t1, rows))
        if result is not None and len(result) > VALUE_SENT_AT:
            # a large value goes to the master with the calls held, at once; the function's
            # later calls are dispatched (their values stay on the node until read)
            self.big.add(call.key)
            nest.flush()
        elif len(nest.pending) >= 64:
            nest.flush()


class _Lines:
    """What a call run here prints, line by line, bounded (the call's own lines)."""

    def __init__(self) -> None:
        self.kept: list[tuple[float, str, str]] = []
        self.more = 0
        self.part: dict[str, str] = {}

    def stream(self, level: str) -> _Stream:
        return _Stream(self, level)

    def add(self, level: str, s: str) -> None:
        text = self.part.pop(level, "") + s
        *whole, rest = text.split("\n")
        if rest:
            self.part[level] = rest
        now = time.time()
        for line in whole:
            if len(self.kept) < LINES:
                self.kept.append((now, level, line))
            else:
                self.more += 1

    def rows(self) -> list[tuple[float, str, str]]:
        for level, rest in list(self.part.items()):
            self.add(level, rest + "\n")
        if self.more:
            self.kept.append((time.time(), "STDERR",
                              f"taskflow: {self.more} more lines this call printed were not "
                              f"kept (at most {LINES})"))
            self.more = 0
        return self.kept


class _Stream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` while a call runs here."""

    def __init__(self, lines: _Lines, level: str) -> None:
        self.lines = lines
        self.level = level

    def write(self, s: str) -> int:
        if s:
            self.lines.add(self.level, s)
        return len(s)

    def writable(self) -> bool:
        return True
