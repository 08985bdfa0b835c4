"""A task's memory limit: enforced by the kernel where the node allows it, else measured.

``@constraint(memory_size=..., memory_limit=True)`` (or ``Runtime(memory_limit=
True)`` for every task with a ``memory_size``) sends the task with the option
``mem_limit`` (GB, as ``memory_size``; 1 GB = 2**30 bytes here). The first of
these that the node allows applies, and the task's log says which:

1. **a control group** (:mod:`.cgroups`: cgroup v2 with the memory controller
   below the agent's group, or the v1 ``memory`` hierarchy; root or a
   delegated subtree): the task runs in ``task-<id>`` with ``memory.max`` /
   ``memory.limit_in_bytes`` set to the limit. A Python task's executor joins
   the group while the task runs (what it allocates then counts); a program
   starts in it (the executor joins it only for the spawn), its children
   with it. Past the limit the kernel reclaims, then kills the process (the
   program, or the executor): the task ends with
   :class:`~taskflow.errors.TaskMemoryExceeded`, with the group's peak.
2. **systemd-run --user --scope** (a program, where no group can be made but
   the user's systemd runs): the program runs in a transient scope with
   ``MemoryMax``.
3. **RLIMIT_AS** (the fallback, no privilege needed): while the task runs, the
   executor's address space may grow by the limit over what it was when the
   task began (the previous limit comes back after the task); an allocation
   past it fails, which Python and numpy raise as ``MemoryError``. It counts
   address space, not resident memory (memory mapped and not touched counts,
   as do thread stacks); a program the task runs inherits it.
"""
from __future__ import annotations

import os
from typing import Any

from ...errors import TaskMemoryExceeded
from ...wire import messages as M
from .. import cgroups
from .programs import STATE

try:
    import resource
except ImportError:             # pragma: no cover - not a POSIX system: no limits
    resource = None  # type: ignore[assignment]

GB = 2**30
SYSTEMD_ENV = "TASKFLOW_NODE_SYSTEMD_RUN"      # "off": never through systemd-run
_systemd: list[str] | None = None              # the prefix that works here ([]: none)


def _status(field: str) -> int:
    """A ``/proc/self/status`` figure in bytes (0 when unknown)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _reset_peak() -> None:
    """Start VmHWM again from the current resident size (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def task_group(tid: int) -> cgroups.Group | str:
    """The memory group of task ``tid`` on this node (a string: why there is none)."""
    found = cgroups.memory_groups()
    if isinstance(found, str):
        return found
    return found.base.child(f"task-{tid}")


class GroupUse:
    """What a task's memory group recorded: kills, peak."""

    __slots__ = ("group",)

    def __init__(self, group: cgroups.Group) -> None:
        self.group = group

    def kills(self) -> int:
        g = self.group
        if g.version == 2:
            return g.stat("memory.events", "oom_kill")
        n = g.stat("memory.oom_control", "oom_kill")
        return n if n else (1 if g.number("memory.failcnt") and g.stat(
            "memory.oom_control", "under_oom") else 0)

    def peak(self) -> int:
        g = self.group
        return g.number("memory.peak" if g.version == 2 else "memory.max_usage_in_bytes")


class MemoryLimit:
    """``with MemoryLimit(gb, tid, python):`` around one task's call (``python``: the
    executor runs the function itself; else it starts programs)."""

    __slots__ = ("limit", "saved", "base_rss", "peak", "group", "python", "how", "killed",
                 "prefix", "why")

    def __init__(self, gb: float, tid: int = 0, python: bool = True) -> None:
        self.limit = int(gb * GB)
        self.saved: tuple[int, int] | None = None
        self.base_rss = 0
        self.peak = 0
        self.python = python
        got = task_group(tid) if tid else "no task id"
        self.group = None if isinstance(got, str) else got
        self.why = got if isinstance(got, str) else ""
        self.how = ""
        self.killed = False      # the kernel killed the task's process at the limit
        self.prefix: list[str] | None = None

    def __enter__(self) -> MemoryLimit:
        why = ""
        if self.group is not None:
            try:
                self._join()
                return self
            except OSError as exc:
                why = f"; {self.group.path}: {exc.strerror or exc}"
                self.group = None
        if not self.python:
            prefix = systemd_prefix()
            if prefix:
                self.prefix = prefix + [f"--property=MemoryMax={self.limit}",
                                        "--property=MemorySwapMax=0", "--"]
                STATE.spawn_prefix = self.prefix
                self.how = (f"enforced by the kernel: systemd-run --user --scope with "
                            f"MemoryMax={self.limit}")
                return self
        self.how = (f"measured: RLIMIT_AS on the growth of the executor's address space "
                    f"(no kernel limit here: {self.why or 'no cgroup'}{why})")
        if resource is None:
            return self
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = _status("VmSize:") + self.limit
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        _reset_peak()
        self.base_rss = _status("VmRSS:")
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        self.saved = (soft, hard)
        return self

    def _join(self) -> None:
        g = self.group
        assert g is not None
        g.make()
        if g.version == 2:
            g.write("memory.max", str(self.limit))
            try:
                g.write("memory.swap.max", "0")
            except OSError:
                pass
        else:
            g.write("memory.limit_in_bytes", str(self.limit))
            try:
                g.write("memory.memsw.limit_in_bytes", str(self.limit))
            except OSError:
                pass
        if self.python:
            g.add(os.getpid())
        else:
            STATE.spawn_group = g
        self.how = (f"enforced by the kernel: cgroup v{g.version} memory controller, "
                    f"{g.path}")

    def __exit__(self, *exc: Any) -> None:
        g = self.group
        if g is not None:
            STATE.spawn_group = None
            if self.python:
                found = cgroups.memory_groups()
                if not isinstance(found, str):
                    try:
                        found.home.add(os.getpid())
                    except OSError:
                        pass
            use = GroupUse(g)
            self.killed = use.kills() > 0
            self.peak = use.peak()
            g.remove()          # (kept background processes: removed when the agent ends)
            return
        if self.prefix is not None:
            STATE.spawn_prefix = None
            return
        if self.saved is not None and resource is not None:
            resource.setrlimit(resource.RLIMIT_AS, self.saved)
            self.saved = None
        self.peak = _status("VmHWM:")

    def describe(self) -> str:
        """The log line that says which limit applies to the task."""
        return f"[taskflow] memory limit {self.limit / GB:g} GB (memory_size): {self.how}"

    def message(self, name: str, exc: BaseException | None) -> str:
        """Why the task was stopped: its limit, its peak, what it asked for."""
        if self.group is not None or self.prefix is not None:
            what = "its executor" if self.python else "its program"
            peak = f"peak {self.peak / 1e6:.0f} MB; " if self.peak else ""
            return (f"task {name} grew past its memory limit of {self.limit / GB:g} GB "
                    f"(memory_size, {self.how}): the kernel killed {what} ({peak}"
                    f"pid {os.getpid()} ran it). Raise memory_size or process the data in "
                    f"smaller pieces")
        asked = f" ({type(exc).__name__}: {exc})" if exc is not None and str(exc) else ""
        return (f"task {name} grew past its memory limit of {self.limit / GB:g} GB "
                f"(memory_size, enforced with RLIMIT_AS on the growth of its executor's "
                f"address space, pid {os.getpid()}): peak {self.peak / 1e6:.0f} MB resident, "
                f"{self.base_rss / 1e6:.0f} MB of it there before the task; an allocation "
                f"past the limit failed{asked}. Raise memory_size or process the data in "
                f"smaller pieces")


def systemd_prefix() -> list[str]:
    """``systemd-run --user --scope ...`` where it works on this node ([]: it does not)."""
    global _systemd
    if _systemd is None:
        import shutil
        import subprocess
        _systemd = []
        exe = shutil.which("systemd-run")
        if exe and os.environ.get(SYSTEMD_ENV, "").lower() not in ("off", "0", "no"):
            cmd = [exe, "--user", "--scope", "--quiet", "--collect"]
            try:
                ok = subprocess.run(cmd + ["true"], capture_output=True, timeout=5).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if ok:
                _systemd = cmd
    return _systemd


def executor_killed(tid: int, limit_gb: float) -> M.ErrorInfo | None:
    """The agent found the executor of task ``tid`` dead: the error, when its memory group
    says the kernel killed it at the task's limit (None: something else killed it). The
    group is removed."""
    g = task_group(tid)
    if isinstance(g, str) or not os.path.isdir(g.path):
        return None
    use = GroupUse(g)
    killed, peak = use.kills() > 0, use.peak()
    g.end(0.0)
    g.remove()
    if not killed:
        return None
    msg = (f"the task grew past its memory limit of {limit_gb:g} GB (memory_size, enforced "
           f"by the kernel: cgroup v{g.version} memory controller, {g.path}): the kernel "
           f"killed its executor (peak {peak / 1e6:.0f} MB). Raise memory_size or process the "
           f"data in smaller pieces")
    import pickle
    err = TaskMemoryExceeded(msg, task_id=tid, kind="memory")
    err.limit, err.peak = int(limit_gb * GB), peak
    try:
        blob: bytes | None = pickle.dumps(err)
    except Exception:       # noqa: BLE001 - the message says it all
        blob = None
    return M.ErrorInfo("TaskMemoryExceeded", msg, "", blob)
