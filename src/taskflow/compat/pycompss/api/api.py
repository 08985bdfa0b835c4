"""``pycompss.api.api``: the synchronisation and runtime API of PyCOMPSs.

Every function works on the run that ``taskflow run --compat pycompss``
started (or starts one here, as taskflow does at a first task call). Calls
that take several files or objects give back the same shape: one value for
one argument, a list for several, and nested lists/tuples keep their nesting.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable

from ....api import sync
from ....context import in_worker, nest
from ....errors import UsageError
from ....runtime import current, embedded

log = logging.getLogger("taskflow.compat.pycompss")

TaskGroup = sync.TaskGroup


def _shaped(fn: Callable[[Any], Any], items: tuple[Any, ...]) -> Any:
    """Apply ``fn`` to every leaf of nested lists/tuples, keeping their shape."""
    def walk(x: Any) -> Any:
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, tuple):
            return tuple(walk(v) for v in x)
        return fn(x)
    out = [walk(x) for x in items]
    return out[0] if len(out) == 1 else out


def compss_start(log_level: str = "off", tracing: bool = False, interactive: bool = False,
                 disable_external: bool = False) -> None:
    """Start the runtime (a no-op under ``taskflow run``, where it is running already)."""
    if interactive:
        raise UsageError("compss_start(interactive=True): the Jupyter integration of PyCOMPSs "
                         "is not supported by taskflow's PyCOMPSs layer; use taskflow.start() "
                         "in a notebook.")
    embedded.get_or_start()


def compss_stop(code: int = 0, _hard_stop: bool = False) -> None:
    """Stop the run: wait for every task, or with a code other than 0 cancel every running
    and waiting task. As in PyCOMPSs the code is not the exit status: an application that
    then ends normally exits 0 (its own ``sys.exit(code)`` decides)."""
    rt = current.get()
    if rt is None:
        return
    if int(code):
        rt.cancel_all(f"the application called compss_stop({int(code)})")
        rt.stop(wait=False)
    else:
        rt.stop(wait=not _hard_stop)


def compss_file_exists(*file_name: Any) -> Any:
    """Whether each file exists or a task writes it (same shape as the arguments)."""
    return _shaped(lambda f: bool(sync.file_exists(f)), file_name)


def compss_open(file_name: Any, mode: str = "r") -> Any:
    """``open`` the file once the tasks writing it have ended."""
    return sync.open(file_name, mode)


def compss_delete_file(*file_name: Any) -> Any:
    return _shaped(sync.delete_file, file_name)


def _wait_file(name: Any) -> Any:
    """One name: wait for its last writer if a task reads or writes it; a name no task
    uses (never used, or deleted) is given back as it is, whether it exists or not."""
    if not isinstance(name, (str, os.PathLike)):
        return name
    rt = current.get()
    if rt is None:      # in a task: its children's files (--agents), else nothing to wait for
        return sync.wait_on_file(name) if in_worker() and nest() is not None else name
    if rt.registry.file_item(os.path.abspath(os.fspath(name))) is None:
        return name
    return sync.wait_on_file(name)


def compss_wait_on_file(*file_name: Any) -> Any:
    """Wait for the last writer of each file and put it at its path; gives the names back
    in the same nested shape."""
    return _shaped(_wait_file, file_name)


def compss_wait_on_directory(*directory_name: Any) -> Any:
    return _shaped(_wait_file, directory_name)


def compss_delete_object(*obj: Any) -> Any:
    """Forget objects the runtime tracks (a list that is not tracked itself: its items)."""
    def one(o: Any) -> Any:
        if sync.delete_object(o):
            return True
        if isinstance(o, (list, tuple)):
            return [one(x) for x in o]
        return False
    out = [one(o) for o in obj]
    return out[0] if len(out) == 1 else out


def compss_barrier(no_more_tasks: bool = False) -> None:
    """Wait for every task so far (``no_more_tasks`` is a hint with no effect here)."""
    sync.barrier()


def compss_barrier_group(group_name: str) -> None:
    """Wait for a group; a COMPSsException one of its tasks raised is raised here."""
    sync.barrier_group(group_name)


def compss_cancel_group(group_name: str) -> None:
    """Cancel the group's tasks that have not ended (running programs get SIGTERM)."""
    sync.cancel_group(group_name)


_SNAPSHOT_WARNED = False


def compss_snapshot() -> None:
    """Save what has finished so far: the files of ended tasks put in place and, in a
    resumable run (every run unless ``--no-resumable``), every finished task's record written to
    the resume log now, whatever the checkpoint policy; ``--resume`` restarts from there.
    """
    global _SNAPSHOT_WARNED
    rt = current.get()
    if rt is None:
        return
    rt.put_in_place()
    if rt.resumable:
        rt.keep_records()
    elif not _SNAPSHOT_WARNED:
        _SNAPSHOT_WARNED = True
        log.warning("compss_snapshot: the files of finished tasks are in place; this run "
                    "is not resumable, so nothing can restart from the snapshot (it was "
                    "started --no-resumable: runs keep finished tasks for taskflow run "
                    "--resume by default)")


def compss_wait_on(*args: Any, **kwargs: Any) -> Any:
    """Values of futures, recursively inside lists, tuples and dicts (several: a list);
    anything else (a function, a generator, ...) comes back as it is, as in PyCOMPSs
    (libraries wait on every attribute of a model: ``{k: compss_wait_on(v) ...}``)."""
    mode = kwargs.pop("mode", "rw")
    if kwargs:
        raise UsageError(f"compss_wait_on: unknown keyword(s) {sorted(kwargs)}; only mode= "
                         f"('r' or 'rw').")
    if mode not in ("r", "rw", "w", "r+"):
        raise UsageError(f"compss_wait_on: mode={mode!r} must be 'r' or 'rw'.")
    if not args:
        return None
    value = sync.wait_on(*args, in_place=False, strict=False)   # the object passed keeps its content
    return list(value) if len(args) > 1 else value


def compss_wait_on_any(*args: Any, timeout: float | None = None) -> Any:
    """PyCOMPSs 4.0: wait until one of the futures given (anywhere inside lists, tuples and
    dicts) has ended and return its value (its error is raised here); the others go on,
    to be waited for later. Values already there: the first of them."""
    import concurrent.futures as cf

    from ....future import Future
    rt = current.get()
    futs: list[Future] = []
    if rt is not None:
        for a in args:
            sync._collect(a, rt.registry, futs)
    if not futs:
        return compss_wait_on(*args) if args else None
    done = [f for f in futs if f.done()]
    if not done:
        end = None if timeout is None else time.time() + timeout
        while not done:
            step = 0.5 if end is None else max(0.0, min(0.5, end - time.time()))
            finished, _ = cf.wait(futs, timeout=step, return_when=cf.FIRST_COMPLETED)
            done = [f for f in futs if f in finished]
            if not done and end is not None and time.time() >= end:
                raise cf.TimeoutError(f"compss_wait_on_any: nothing ended within {timeout} s")
    return compss_wait_on(done[0])


def compss_get_number_of_resources() -> int:
    return sync.number_of_resources()


def _elastic(n: int, what: str) -> bool:
    rt = embedded.get_or_start()
    for p in rt.providers:
        if getattr(p, "mode", None) == "pilot" and hasattr(p, "target"):
            p.target = max(1, p.target + n)       # the pilot loop submits or lets jobs end
            return True
    log.warning("%s: this run's nodes are fixed (no elastic provider such as --slurm pilot); "
                "nothing changes", what)
    return False


def compss_request_resources(num_resources: int, group_name: str | None = None) -> None:
    """Ask for more nodes: the target of a Slurm pilot run grows; fixed runs say so."""
    _elastic(int(num_resources), f"compss_request_resources({num_resources})")


def compss_free_resources(num_resources: int, group_name: str | None = None) -> None:
    """Give nodes back: the target of a Slurm pilot run shrinks (idle pilots end)."""
    _elastic(-int(num_resources), f"compss_free_resources({num_resources})")


def compss_set_wall_clock(wall_clock_limit: int) -> None:
    """From now, the run may last ``wall_clock_limit`` more seconds: then every task is
    cancelled and the application stopped (as ``runcompss --wall_clock_limit``)."""
    from ...wall_clock_limit import arm
    arm(float(wall_clock_limit))


def compss_add_logger(logger_name: str) -> logging.Logger:
    """A logger whose lines go where taskflow's go (stderr, or the task's log in a task)."""
    lg = logging.getLogger(logger_name)
    if not lg.handlers and not logging.getLogger().handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        lg.addHandler(h)
        lg.setLevel(logging.INFO)
    return lg


__all__ = ["compss_start", "compss_stop", "compss_file_exists", "compss_open",
           "compss_delete_file", "compss_wait_on_file", "compss_wait_on_directory",
           "compss_delete_object", "compss_barrier", "compss_barrier_group",
           "compss_cancel_group", "compss_snapshot", "compss_wait_on", "compss_wait_on_any",
           "compss_get_number_of_resources", "compss_request_resources",
           "compss_free_resources", "compss_set_wall_clock", "compss_add_logger", "TaskGroup"]
