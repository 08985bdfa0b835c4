"""The node's control groups, as far as this agent may use them (Linux).

Two uses, each found when the agent starts (:func:`find`):

* **tracking**: the agent makes ``taskflow-<agent pid>`` under its own group
  (cgroup v2, or the v1 ``pids`` / ``freezer`` / ``memory`` hierarchy) and
  every executor joins it (v2: its ``executors`` child), so whatever a task
  starts, daemons that called ``setsid`` included, is in it and ends with
  the agent (:mod:`.tracking`);
* **memory limits**: a task with ``memory_limit`` runs in ``task-<id>`` below
  a group whose memory controller the agent may use (v2 with ``memory`` in the
  controllers below it, or the v1 ``memory`` hierarchy), with the limit set
  there: the kernel enforces it (:mod:`.limits`).

A hierarchy is usable when the agent can make a group in it (root, or a
subtree delegated to the user); otherwise that use is off and the agent says
why (:attr:`NodeGroups.why`). ``TASKFLOW_NODE_CGROUPS=off`` turns both off.
"""
from __future__ import annotations

import os
import signal
import time
from typing import NamedTuple

CGROUPS_ENV = "TASKFLOW_NODE_CGROUPS"      # "off": neither tracking nor limits by cgroup
PREFIX = "taskflow-"


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
        for here, _, _ in sorted(os.walk(self.path), key=lambda w: -len(w[0])):
            for _ in range(20):       # a killed process leaves its group a moment later
                try:
                    os.rmdir(here)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            else:
                ok = False
        return ok


class NodeGroups(NamedTuple):
    """What this agent may use: a group its executors join, a base for memory limits."""

    track: Group | None      # where executors go (None: not tracked by cgroup)
    base: Group | None       # taskflow-<pid> in the tracking hierarchy (removed at the end)
    memory: Group | None     # task-<id> groups with a memory limit go below it
    home: Group | None       # the memory group executors are in (they come back to it)
    why: str                 # why tracking / limits are off, when they are


NODE: NodeGroups | None = None     # set by the agent before it forks executors (they inherit it)


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


def find(agent_pid: int) -> NodeGroups:
    """The groups this agent makes for itself (made here; nothing when not allowed)."""
    if os.environ.get(CGROUPS_ENV, "").lower() in ("off", "0", "no"):
        return NodeGroups(None, None, None, None, f"{CGROUPS_ENV}=off")
    found = mounts()
    name = f"{PREFIX}{agent_pid}"
    why: list[str] = []
    track = base = memory = home = None
    unified = found.get("unified")
    if unified is not None:
        try:
            base = Group(os.path.join(unified.path, name), 2).make()
            _clean_stale(unified.path)
            track = base.child("executors").make()
            if "memory" in _read_words(os.path.join(base.path, "cgroup.controllers")):
                try:
                    base.write("cgroup.subtree_control", "+memory")
                    memory, home = base, track
                except OSError as exc:
                    why.append(f"cgroup v2 memory controller not delegated ({exc.strerror})")
            else:
                why.append("cgroup v2 without the memory controller below this agent's group")
        except OSError as exc:
            why.append(f"cgroup v2 at {unified.path} not writable ({exc.strerror})")
            base = track = None
    if track is None:
        for key in ("pids", "freezer", "memory", "name=systemd"):
            m = found.get(key)
            if m is None:
                continue
            try:
                base = track = Group(os.path.join(m.path, name), 1).make()
                _clean_stale(m.path)
                break
            except OSError as exc:
                why.append(f"cgroup v1 {key} at {m.path} not writable ({exc.strerror})")
    if memory is None and "memory" in found and found["memory"].version == 1:
        m = found["memory"]
        try:
            memory = Group(os.path.join(m.path, name), 1).make()
            if track is not None and track.path == memory.path:
                home = track                 # executors are tracked in this very group
            else:
                _clean_stale(m.path)
                home = Group(m.path, 1)
        except OSError as exc:
            why.append(f"cgroup v1 memory at {m.path} not writable ({exc.strerror})")
            memory = None
    if not found:
        why.append("no cgroup hierarchy mounted")
    return NodeGroups(track, base, memory, home, "; ".join(why))


def _clean_stale(parent: str) -> None:
    """Remove empty groups of agents that are gone (killed before they removed theirs)."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(PREFIX)]
    except OSError:
        return
    for n in names:
        pid = n[len(PREFIX):]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            g = Group(os.path.join(parent, n), 1)
            if not g.procs():
                g.remove()
