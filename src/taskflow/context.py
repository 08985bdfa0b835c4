"""What a process knows about itself: whether it runs tasks, and its host.

Both sides of the wire import this module (it depends on nothing else of
taskflow), so process-wide facts live here instead of in module globals that
one package writes into another's.
"""
from __future__ import annotations

import contextlib
import os
import stat
import threading
from typing import Any, Iterator

_in_worker = False
_nest: Any = None      # a Python task's executor: its nested calls (agent.executor.nested)
_inline_running = 0    # tasks an inline run runs now, in any of this process's threads
_inline_here = threading.local()     # ... in this thread (``depth``)
_inline_lock = threading.Lock()


INLINE_ENV = "TASKFLOW_INLINE"


def _absolute_python() -> str:
    """``sys.executable`` as an absolute path. Python leaves it relative when it was found
    through a relative ``PATH`` entry (``PATH=.venv/bin:$PATH``); a program that changes
    its directory before a run starts would then spawn agents and the journal's writer
    from a path that no longer exists. Resolved against the directory the interpreter
    started in (this module loads first), else the environment's own ``bin`` (a venv's
    ``sys.prefix`` is the venv)."""
    import sys
    exe = sys.executable
    if not exe or os.path.isabs(exe):
        return exe
    here = os.path.abspath(exe)
    if os.access(here, os.X_OK):
        return here
    there = os.path.join(sys.prefix, "bin", os.path.basename(exe))
    return there if os.access(there, os.X_OK) else here


PYTHON = _absolute_python()     # the interpreter that starts agents, writers and runs


def inline_wanted() -> bool:
    """``TASKFLOW_INLINE`` asks for inline runs (1, true, yes, on): every task in the calling
    thread (:mod:`taskflow.debugging.inline`), no agent to start."""
    return os.environ.get(INLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def own_dir(path: str) -> str:
    """``path``, a directory of this user's alone: made 0700 if missing; PermissionError
    when it is another user's, open to others or not a directory (adoption sockets, the
    agents' shared value files)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{path} is not a directory of this user's alone (mode "
                              f"{stat.S_IMODE(st.st_mode):o})")
    return path


def in_worker() -> bool:
    """True in a process that runs tasks (an executor, an MPI rank of a Python task), and
    in a thread of an inline run while it runs a task (:func:`running_inline`).

    A task function called there records a child task with the master
    (:func:`nest`), or runs inline where no executor can (an MPI rank).
    """
    return _in_worker or (_inline_running > 0 and getattr(_inline_here, "depth", 0) > 0)


@contextlib.contextmanager
def running_inline() -> Iterator[None]:
    """This thread runs a task of an inline run (:mod:`taskflow.debugging.node`): a task
    called meanwhile, in this thread only, runs inline as a plain call."""
    global _inline_running
    with _inline_lock:
        _inline_running += 1
    _inline_here.depth = getattr(_inline_here, "depth", 0) + 1
    try:
        yield
    finally:
        _inline_here.depth -= 1
        with _inline_lock:
            _inline_running -= 1


def enter_worker() -> None:
    """Mark this process as one that runs tasks (executors and MPI ranks call it first)."""
    global _in_worker
    _in_worker = True


def nest() -> Any:
    """In an executor running Python tasks: what records the tasks a task calls
    (:mod:`taskflow.agent.executor.nested`); None elsewhere (the master, an MPI rank, a
    container), where a task function called inside a task runs inline."""
    return _nest


_calls_inline = False


def keep_calls_inline(inline: bool = True) -> None:
    """A task function called inside a task runs inline in this process and its forks
    (PyCOMPSs's rule under runcompss, outside its agents mode: its apps add the values
    such calls return); set by a node agent of a ``--compat pycompss`` run before the
    forks, with ``inline=False`` under ``--agents`` (PyCOMPSs's agents submit such calls:
    they are child tasks, as in a native run)."""
    global _calls_inline
    _calls_inline = inline


def calls_inline() -> bool:
    """Whether a task called inside a task runs inline here (:func:`keep_calls_inline`)."""
    return _calls_inline


_nested_here = False


def keep_nested_here(on: bool) -> None:
    """Whether a short plain call in a task may run in its parent's executor here
    (:mod:`taskflow.agent.executor.runhere`): the master's ``Hello`` says, before the forks."""
    global _nested_here
    _nested_here = on


def nested_here() -> bool:
    return _nested_here


_streams: Any = None    # what publishes to and polls streams here (wire.streams.Client)


def streams() -> Any:
    """This process's stream client: the executor's (agent.executor.streams) in a task,
    the runtime's (runtime.streams) in the main program; None elsewhere."""
    return _streams


def set_streams(client: Any) -> None:
    """Set (or clear, with None) this process's stream client."""
    global _streams
    _streams = client


def set_nest(handler: Any) -> None:
    """The executor's nested-call handler (set once, by the executor, before any task)."""
    global _nest
    _nest = handler


def total_memory_gb() -> float:
    """This host's memory in GiB: from the OS where it says (Linux, macOS), else psutil.

    Neither the master nor a starting agent imports psutil (~20 ms here) just
    to learn the memory size.
    """
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        import psutil
        return float(psutil.virtual_memory().total) / 2**30


def private_dir(path: str) -> str:
    """Make ``path`` and its missing parents readable by this user only (0700).

    Run directories hold argv, parameters, task output and tracebacks: on a
    shared login node nobody else may read them, whatever the umask. Existing
    directories are left as they are (a ``--run-dir`` the user chose).
    """
    path = os.path.abspath(path)
    missing = []
    p = path
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)          # mkdir's mode is masked by the umask
    return path


def private_file(path: str) -> str:
    """Create ``path`` (if missing) readable by this user only (0600), whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path
