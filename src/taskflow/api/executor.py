"""``taskflow.Executor``: the standard :class:`concurrent.futures.Executor` over taskflow.

Code written for ``ProcessPoolExecutor``, Dask's or Parsl's executors runs on
taskflow's nodes unchanged: ``submit(fn, *args)`` records a task and returns
a taskflow :class:`~taskflow.Future`, which *is* a
:class:`concurrent.futures.Future` (``wait``, ``as_completed``,
``add_done_callback`` work); a future given as an argument makes the new task
wait for it, as in Dask and Parsl. Decorated ``@task`` calls and submissions
mix in one run: the executor uses the runtime that is running (``taskflow
run``, ``taskflow.start()``) or starts its own, which ``shutdown`` stops.

Where it differs from the standard library, on purpose:

- a failed call's error is both :class:`~taskflow.TaskError` and the
  function's own exception class (``except ZeroDivisionError`` catches it);
- a failure nobody looked at (no ``result()``, ``exception()`` or ``wait_on``
  met it) fails the run at its end instead of vanishing;
- ``Future.cancel()`` returns False (a recorded task is not withdrawn);
  ``shutdown(cancel_futures=True)`` cancels what has not been sent to a node
  (a node takes a few tasks ahead of its free slots: those run).
"""
from __future__ import annotations

import concurrent.futures as cf
import functools
import inspect
import itertools
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

from ..errors import UsageError
from ..future import Future
from ..graph import task as T
from ..graph.spec import TaskSpec
from ..runtime import current

if TYPE_CHECKING:
    from ..runtime.runtime import Runtime

log = logging.getLogger("taskflow")
PRUNE_EVERY = 4096      # submissions between two passes that forget finished futures
SPECS_KEPT = 1024       # declarations kept for the functions submitted (a lambda made per
#                         call is a new function each time: the oldest go, made again if met)


class Executor(cf.Executor):
    """A :class:`concurrent.futures.Executor` whose calls are taskflow tasks.

    ``Executor()`` runs on this machine (as many slots as cores; ``max_workers``
    sets how many), or on the runtime already running. ``cluster="nodes.yaml"``
    runs on a cluster file's nodes, ``slurm={"mode": "pilot", "nodes": 2, ...}``
    on Slurm (the cluster file's ``slurm`` section as a mapping); other keywords
    go to :class:`~taskflow.Runtime` (``retries=``, ``run_dir=``, ...).
    Its methods may be called from several threads at once.

    Example::

        import concurrent.futures
        from taskflow import Executor

        def square(x: int) -> int:
            return x * x

        with Executor(max_workers=2) as ex:
            futures = [ex.submit(square, i) for i in range(4)]
            print([f.result() for f in concurrent.futures.as_completed(futures)])
            print(list(ex.map(square, range(4), chunksize=2)))   # [0, 1, 4, 9]
    """

    def __init__(self, max_workers: int | None = None, *, cluster: str | None = None,
                 slurm: Mapping[str, object] | None = None, **runtime_options: object) -> None:
        if max_workers is not None and (isinstance(max_workers, bool)
                                        or not isinstance(max_workers, int) or max_workers < 1):
            raise UsageError(f"Executor(max_workers={max_workers!r}): give how many tasks run "
                             f"at once on this machine (an int >= 1), or None for one per core")
        self._lock = threading.Lock()
        self._specs: dict[Any, TaskSpec] = {}
        self._futures: list[Future] = []        # submitted and maybe not finished
        self._since_prune = 0
        self._shutdown = False
        running = current.get()
        if running is not None:
            if cluster is not None or slurm is not None or runtime_options:
                raise UsageError(
                    "Executor(...): a taskflow runtime is already running (taskflow run, "
                    "taskflow.start()): Executor() uses it, and its nodes and options are "
                    "that run's; give them to taskflow run (or start()) instead")
            if max_workers is not None:     # a script written for a pool, run by taskflow run
                log.warning("Executor(max_workers=%d): the run's nodes decide how many tasks "
                            "run at once (%d slots now)", max_workers,
                            sum(n.slots for n in running.nodes if n.alive))
            self._rt: Runtime = running
            self._own = False
            return
        self._rt = _start_runtime(max_workers, cluster, slurm, runtime_options)
        self._own = True

    @property
    def runtime(self) -> Runtime:
        """The runtime its tasks run in."""
        return self._rt

    # -- concurrent.futures.Executor ------------------------------------------------
    def submit(self, fn: Callable[..., object], /, *args: Any, **kwargs: Any) -> Future:
        """Run ``fn(*args, **kwargs)`` as a task; its future at once."""
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            spec = self._spec(fn)
            fut: Future = self._rt.submit(spec, args, kwargs)
            self._keep(fut)
        return fut

    def map(self, fn: Callable[..., object], *iterables: Iterable[object],
            timeout: float | None = None, chunksize: int = 1) -> Iterator[Any]:
        """``fn`` over the items of ``iterables`` (zipped), results in order.

        ``chunksize`` > 1 runs that many calls in one task (for calls much shorter
        than a task's cost); ``timeout`` (s, from this call) raises
        :class:`TimeoutError` from the iterator when a result is late.
        """
        if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
            raise UsageError(f"Executor.map(chunksize={chunksize!r}): an int >= 1")
        if chunksize == 1:
            return super().map(fn, *iterables, timeout=timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        items = zip(*iterables)
        futs = []
        while True:
            chunk = list(itertools.islice(items, chunksize))
            if not chunk:
                break
            futs.append(self.submit(map_chunk, fn, chunk))
        return _chunk_results(futs, deadline)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more submissions; ``cancel_futures`` cancels the tasks not sent to a node
        yet (waiting for inputs or for a slot);
        ``wait`` waits for the others. An executor that started its runtime stops it
        (then the run's end is reported as ``taskflow.stop()`` reports it)."""
        with self._lock:
            first = not self._shutdown
            self._shutdown = True
            futs, self._futures = self._futures, []
        if cancel_futures:
            self._cancel_unstarted(futs)
        if wait:
            self._rt.wait_futures(futs)
        if first and self._own and (wait or cancel_futures):
            rt = self._rt
            rt.stop(wait=wait)
            # failures nobody met are said, as a plain script's run says them at its end
            from ..console import plainscript
            plainscript.report_at_exit(rt)

    # -- internals ------------------------------------------------------------------
    def _spec(self, fn: Callable[..., Any]) -> TaskSpec:
        spec = self._specs.get(fn)
        if spec is not None:
            return spec
        task_spec = getattr(fn, "spec", None)
        if isinstance(task_spec, TaskSpec):          # a @task function: its declaration
            if task_spec.nout != 1:
                raise UsageError(
                    f"Executor.submit({task_spec.name}): it returns {task_spec.nout} values "
                    f"(returns={task_spec.nout}); a submission has one future: call the task "
                    f"itself for a future per value")
            spec = task_spec
        elif not callable(fn):
            raise UsageError(f"Executor.submit({fn!r}): give a function to call, not a "
                             f"{type(fn).__name__}")
        else:
            spec = TaskSpec(_signed(fn), {}, None, False, None, "RETRY", None)
        specs = self._specs
        if len(specs) >= SPECS_KEPT:
            del specs[next(iter(specs))]
        specs[fn] = spec
        return spec

    def _keep(self, fut: Future) -> None:
        self._futures.append(fut)
        self._since_prune += 1
        if self._since_prune >= PRUNE_EVERY:       # bounded: finished ones are let go
            self._since_prune = 0
            self._futures = [f for f in self._futures if not f.done()]

    def _cancel_unstarted(self, futs: list[Future]) -> None:
        from ..runtime.rules.cancel import cancel_tasks
        rt = self._rt
        cbs: list[Any] = []
        with rt.lock:
            tasks = [f._producer for f in futs if f._producer is not None
                     and f._producer.state in (T.SUBMITTED, T.READY)]
            cancel_tasks(rt, tasks, "its executor was shut down with cancel_futures=True",
                         cbs)
        for fn, fut in cbs:
            fn(fut)

    def __repr__(self) -> str:
        state = "shut down" if self._shutdown else "running"
        return f"<taskflow.Executor {state} on run {self._rt.run_id}>"


def _start_runtime(max_workers: int | None, cluster: str | None,
                   slurm: Mapping[str, object] | None, options: dict[str, Any]) -> Runtime:
    from ..providers.cluster import runtime_options, slurm_provider
    from ..runtime.runtime import Runtime
    if cluster is not None and slurm is not None:
        raise UsageError("Executor(cluster=..., slurm=...): give one of them (a cluster "
                         "file may hold a slurm section)")
    opts = dict(options)
    if cluster is not None:
        opts = {**runtime_options(cluster, opts.pop("placement", "locality")), **opts}
    elif slurm is not None:
        opts["providers"] = [slurm_provider(dict(slurm), "Executor(slurm=...)")]
    return Runtime(workers=max_workers, **opts).start()


def _signed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, or a function of the same name calling it when Python cannot say its
    signature (some builtins, C extensions): a task's declaration needs one."""
    try:
        inspect.signature(fn)
        return fn
    except (TypeError, ValueError):
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)
        del call.__wrapped__            # (else its signature is fn's again)
        return call


def map_chunk(fn: Callable[..., Any], chunk: list[tuple[Any, ...]]) -> list[Any]:
    """One task of ``Executor.map(chunksize=N)``: N calls in a row."""
    return [fn(*args) for args in chunk]


def _chunk_results(futs: list[Future], deadline: float | None) -> Iterator[Any]:
    futs.reverse()              # (popped from the end: the caller's references go as it reads)
    try:
        while futs:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            yield from futs.pop().result(left)
    finally:
        futs.clear()
