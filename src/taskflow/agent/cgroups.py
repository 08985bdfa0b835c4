"""The node's control groups, as far as this agent may use them (Linux).

* **memory limits** (:mod:`.executor.limits`): a task with ``memory_limit`` runs in
  ``taskflow-<agent pid>/task-<id>``, made below its executor's own group where
  the node lets the agent use a memory controller (cgroup v2 with ``memory``
  enabled below that group, or the v1 ``memory`` hierarchy; root, or a
  delegated subtree), with the limit set there: the kernel enforces it. They
  are made when the first such task comes (:func:`memory_groups`) and removed
  when the agent ends (:func:`remove`).
* **tracking**, when asked (``TASKFLOW_NODE_TRACKING=cgroup``, :mod:`.tracking`):
  the agent moves itself into ``taskflow-<agent pid>-all`` (cgroup v2, or the
  v1 ``pids`` / ``freezer`` hierarchy) before it forks its executors, so
  everything below it is in that group whatever it does with its sessions and
  parents. Moving a process between groups takes the kernel milliseconds (6 to
  27 ms on this project's machine, cgroup v2): the default tracking is the
  sub-reaper, and executors inherit the group rather than join it.

``TASKFLOW_NODE_CGROUPS=off`` turns both off. Where a use is not allowed, the
reason is kept (a task's log quotes it).
"""
from __future__ import annotations

import os
import signal
import time
from typing import NamedTuple

CGROUPS_ENV = "TASKFLOW_NODE_CGROUPS"      # "off": neither tracking nor limits by cgroup
PREFIX = "taskflow-"
AGENT: list[int] = []          # the agent's pid (set before it forks: executors inherit it)


class Mount(NamedTuple):
    """One mounted hierarchy and this process's group in it."""

    version: int             # 1 or 2
    path: str                # the directory of this process's group
    controllers: frozenset[str]


class Group:
    """One control group (a directory of cgroupfs)."""

    __slots__ = ("path", "version")

    def __init__(self, path: str, version: int) -> None:
        self.path = path
        self.version = version

    def __repr__(self) -> str:
        return f"Group({self.path!r}, v{self.version})"

    def child(self, name: str) -> Group:
        return Group(os.path.join(self.path, name), self.version)

    def make(self) -> Group:
        os.makedirs(self.path, exist_ok=True)
        return self

    def read(self, name: str) -> str:
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def add(self, pid: int) -> None:
        """Move ``pid`` (a whole process) into this group."""
        self.write("cgroup.procs", str(pid))

    def stat(self, name: str, key: str) -> int:
        """One ``key value`` line of a flat-keyed file (memory.events, memory.oom_control)."""
        try:
            for line in self.read(name).splitlines():
                k, _, v = line.partition(" ")
                if k == key:
                    return int(v)
        except (OSError, ValueError):
            pass
        return 0

    def number(self, name: str) -> int:
        try:
            text = self.read(name).strip()
        except OSError:
            return 0
        return int(text) if text.isdigit() else 0

    def procs(self, deep: bool = True) -> list[int]:
        """The processes in this group (and in the groups below it)."""
        out: list[int] = []
        for here, _dirs, _ in os.walk(self.path) if deep else [(self.path, [], [])]:
            try:
                with open(os.path.join(here, "cgroup.procs")) as f:
                    out.extend(int(x) for x in f.read().split())
            except (OSError, ValueError):
                pass
        return out

    def signal_all(self, sig: int) -> int:
        """Send ``sig`` to every process in it; how many there were."""
        pids = [p for p in self.procs() if p != os.getpid()]
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        return len(pids)

    def end(self, grace: float) -> int:
        """SIGTERM what is in it, SIGKILL what is left after ``grace`` s; how many were."""
        n = self.signal_all(signal.SIGTERM)
        if not n:
            return 0
        deadline = time.monotonic() + grace
        while self.procs() and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in range(50):           # (a process may fork while it is being killed)
            if self.version == 2 and os.path.exists(os.path.join(self.path, "cgroup.kill")):
                try:
                    self.write("cgroup.kill", "1")
                except OSError:
                    self.signal_all(signal.SIGKILL)
            elif not self.signal_all(signal.SIGKILL):
                break
            if not self.procs():
                break
            time.sleep(0.02)
        return n

    def remove(self) -> bool:
        """rmdir it and the groups below it (False: a process is still in one)."""
        ok = True
        for here in sorted((d for d, _, _ in os.walk(self.path)), key=len, reverse=True):
            for _ in range(50):       # a killed process leaves its group a moment later
                try:
                    os.rmdir(here)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
            else:
                ok = False
        return ok


class MemoryGroups(NamedTuple):
    """Where a task with a memory limit goes: below ``base``; its executor comes back to
    ``home`` (the group it was in)."""

    base: Group
    home: Group


_memory: list[MemoryGroups | str] = []     # this process's answer, once found


def off() -> str | None:
    """Why cgroups are not to be used at all (None: they may be)."""
    if os.environ.get(CGROUPS_ENV, "").lower() in ("off", "0", "no"):
        return f"{CGROUPS_ENV}=off"
    return None


def memory_groups() -> MemoryGroups | str:
    """The memory groups of this agent, made at the first call (in an executor: its first
    task with a memory limit); a string says why there are none."""
    if not _memory:
        _memory.append(off() or _find_memory())
    got, *_ = _memory
    return got


def _name() -> str:
    pid, *_ = AGENT or [os.getppid()]     # (an executor's parent is its agent)
    return f"{PREFIX}{pid}"


def _find_memory() -> MemoryGroups | str:
    found = mounts()
    why = []
    u = found.get("unified")
    if u is not None:
        if "memory" in _read_words(os.path.join(u.path, "cgroup.subtree_control")):
            try:
                base = Group(os.path.join(u.path, _name()), 2).make()
                base.write("cgroup.subtree_control", "+memory")
                return MemoryGroups(base, Group(u.path, 2))
            except OSError as exc:
                why.append(f"cgroup v2 at {u.path} not writable ({exc.strerror})")
        else:
            why.append("cgroup v2 without the memory controller below this node's group")
    m = found.get("memory")
    if m is not None and m.version == 1:
        try:
            base = Group(os.path.join(m.path, _name()), 1).make()
            _clean_stale(m.path)
            return MemoryGroups(base, Group(m.path, 1))
        except OSError as exc:
            why.append(f"cgroup v1 memory at {m.path} not writable ({exc.strerror})")
    if not found:
        why.append("no cgroup hierarchy mounted")
    return "; ".join(why) or "no memory controller this node may use"


def tracking_group() -> Group | str:
    """Move this process (the agent, before it forks) into a new group of its own; a
    string says why it could not."""
    why = off()
    if why is not None:
        return why
    found = mounts()
    reasons = []
    for key in ("unified", "pids", "freezer", "name=systemd"):
        m = found.get(key)
        if m is None:
            continue
        g = Group(os.path.join(m.path, f"{_name()}-all"), m.version)
        try:
            g.make()
            _clean_stale(m.path)
            g.add(os.getpid())
            return g
        except OSError as exc:
            reasons.append(f"{key} at {m.path}: {exc.strerror or exc}")
            g.remove()
    return "; ".join(reasons) or "no cgroup hierarchy mounted"


def remove(track: Group | None) -> None:
    """The agent ends: end what is left in its groups and remove them (the memory groups
    its executors made included)."""
    if off() is not None:
        return
    for m in mounts().values():
        g = Group(os.path.join(m.path, _name()), m.version)
        if os.path.isdir(g.path):
            g.end(0.0)
            g.remove()
    if track is not None:
        leave(track)
        track.end(0.0)
        track.remove()


def leave(track: Group) -> None:
    """Move this process out of ``track`` (into its parent), so ending it spares us."""
    try:
        Group(os.path.dirname(track.path), track.version).add(os.getpid())
    except OSError:
        pass


def mounts() -> dict[str, Mount]:
    """The hierarchies this process sees: ``"unified"`` (v2) and v1 ones by controller."""
    try:
        with open("/proc/self/mountinfo") as f:
            info = f.read().splitlines()
        with open("/proc/self/cgroup") as f:
            own_lines = f.read().splitlines()
    except OSError:
        return {}
    own: dict[str, str] = {}
    for line in own_lines:
        _, names, where = line.split(":", 2)
        for c in (names.split(",") if names else ["unified"]):
            own[c] = where
    out: dict[str, Mount] = {}
    for line in info:
        pre, _, post = line.partition(" - ")
        fields = pre.split()
        fstype, _, super_opts = (post.split() + ["", "", ""])[:3]
        if fstype not in ("cgroup", "cgroup2") or len(fields) < 5:
            continue
        _, _, _, root, point, *_ = fields
        if fstype == "cgroup2":
            keys = ["unified"]
            ctrls = _read_words(os.path.join(point, "cgroup.controllers"))
        else:
            keys = [o for o in super_opts.split(",") if o not in ("rw", "ro")]
            ctrls = frozenset(keys)
        for key in keys:
            mine = own.get(key)
            if mine is None or key in out:
                continue
            rel = mine[len(root):] if root != "/" and mine.startswith(root) else mine
            out[key] = Mount(2 if fstype == "cgroup2" else 1,
                             os.path.normpath(point + "/" + rel.lstrip("/")), ctrls)
    return out


def _read_words(path: str) -> frozenset[str]:
    try:
        with open(path) as f:
            return frozenset(f.read().split())
    except OSError:
        return frozenset()


def _clean_stale(parent: str) -> None:
    """Remove empty groups of agents that are gone (killed before they removed theirs)."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(PREFIX)]
    except OSError:
        return
    for n in names:
        pid = n[len(PREFIX):].removesuffix("-all")
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            g = Group(os.path.join(parent, n), 1)
            if not g.procs():
                g.remove()
