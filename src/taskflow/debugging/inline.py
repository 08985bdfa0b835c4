"""Inline runs: every task runs in the calling thread, in call order (``TASKFLOW_INLINE=1``,
``taskflow run --inline``).

:class:`InlineRuntime` is the whole master with one node, the one of
:mod:`.node`, which the calling thread serves itself: a call records its task
as in any run (file versions, dependencies, the journal, the resume log) and
returns only once that task has ended, having run it right there; a wait
(``wait_on``, the end of the run) serves the node too. So ``breakpoint()``
in a task stops in the script's own process, with the task's arguments as
the task gets them in a normal run (files at their version paths, INOUT
objects to update, programs spawned with their resolved command lines).

The journal records the run's one node as ``inline`` (``taskflow nodes``)
and a line saying the run was inline.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Iterable

from ..context import inline_wanted
from ..future import FINISHED, AllDone, Future
from ..graph.spec import TaskSpec
from ..runtime.runtime import Runtime
from .node import HereProvider, Runner

SERVE_STEP = 0.05           # s: a wait serves the node at least this often
SERVE_FIRST = 0.0005        # s: ... and looks again this soon after the node did something


wanted = inline_wanted      # TASKFLOW_INLINE asks for inline runs (context.inline_wanted)


def _futures(value: Any) -> list[Future]:
    if isinstance(value, Future):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, Future)]
    return []


class InlineRuntime(Runtime):
    """A runtime whose tasks run in the thread that calls them (see the module docstring).

    ``Runtime``'s keywords apply, but ``workers`` only sets the slots a task's
    ``computing_units`` are checked against, and ``providers``/``nodes`` are not taken.
    A task's ``time_out`` and memory limit are not enforced (a debugger session would
    trip the one, and the other would cap the master's own process).
    """

    mode = "inline"

    def __init__(self, workers: int | None = None, *, runner: Runner | None = None,
                 **kwargs: Any) -> None:
        for key in ("providers", "nodes"):
            kwargs.pop(key, None)
        slots = workers or os.cpu_count() or 1
        self.here = HereProvider(slots, runner)
        super().__init__(slots, providers=[self.here], **kwargs)

    def start(self) -> InlineRuntime:
        if self.started:
            return self
        super().start()
        self.node_event("log", "inline", ("info", f"{self.mode} run: every task runs in the "
                                                  f"master's process (pid {os.getpid()})"))
        return self

    def submit(self, spec: TaskSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        value = super().submit(spec, args, kwargs)
        futs = _futures(value)
        if futs:
            self._until_done(futs)
        return value

    def _until_done(self, futs: Iterable[Future]) -> None:
        with self.lock:
            pending = [f for f in futs if f._state is not FINISHED]
            if not pending:
                return
            w = AllDone(len(pending))
            for f in pending:
                f.add_waiter(w)
        self._block(w.event, None)

    def _block(self, ev: threading.Event, timeout: float | None, value: bool = True) -> bool:
        """Wait for ``ev`` serving the node meanwhile: the waiting thread runs the tasks the
        master sends (one thread at a time; another waits its turn)."""
        node = self.here.node
        if node is None or node.closed:
            return super()._block(ev, timeout, value)
        deadline = None if timeout is None else time.time() + timeout
        # what the node just did (a result sent) sets ``ev`` from the loop thread a moment
        # later: look again soon after any activity, then less and less often
        delay = SERVE_FIRST
        while not ev.is_set():
            if self.dispatcher.crashed or self.stopped:
                return super()._block(ev, 0.0, value)
            step = delay if deadline is None else min(delay, deadline - time.time())
            if step <= 0:
                return False
            busy = False
            if node.serving.acquire(blocking=False):
                try:
                    busy = node.serve(step)
                finally:
                    node.serving.release()
            else:
                ev.wait(step)
            delay = SERVE_FIRST if busy else min(2 * delay, SERVE_STEP)
        return True
