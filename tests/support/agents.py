"""Node agent processes found by their working directory, as the tests that kill masters
see them: the agents (and executors) a run left behind, and waiting for them to go."""
from __future__ import annotations

import os
import time


def agents_in(path) -> list[int]:
    """Node agents whose working directory is ``path`` (they chdir to the master's)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            if b"taskflow.node" in cmd and os.readlink(f"/proc/{pid}/cwd") == str(path):
                out.append(int(pid))
        except OSError:
            continue
    return out


def agents_gone(path, timeout: float) -> None:
    """Wait until no node agent (or executor forked from one) works in ``path``; if some
    stay, fail describing each: what it is, its parent, its state, its age."""
    import psutil
    deadline = time.time() + timeout
    while agents_in(path):
        if time.time() >= deadline:
            break
        time.sleep(0.1)
    left = []
    for pid in agents_in(path):
        try:
            p = psutil.Process(pid)
            parent = p.parent()
            kind = "executor" if parent is not None and b"taskflow.node" in open(
                f"/proc/{parent.pid}/cmdline", "rb").read() else "agent"
            left.append(f"{kind} {pid} (parent {p.ppid()} {parent.name() if parent else ''}, "
                        f"{p.status()}, {time.time() - p.create_time():.0f} s old, "
                        f"{p.num_threads()} threads): {' '.join(p.cmdline())}")
        except (psutil.Error, OSError):
            continue
    assert not left, f"still there {timeout:g} s later:\n" + "\n".join(left)


def held_by(agent: int) -> int:
    """Bytes agent ``agent`` holds: its resident memory and its shared files (large values
    its executors made live in files of its own directory: agent.executor.sharedfiles)."""
    import psutil
    from taskflow.agent.executor import sharedfiles
    root = os.path.join(os.environ.get(sharedfiles.ENV) or sharedfiles.DEFAULT_BASE,
                        f"taskflow-{os.getuid()}")
    files = 0
    for d in os.listdir(root) if os.path.isdir(root) else ():
        if d.startswith(f"a{agent}-"):
            for f in os.scandir(os.path.join(root, d)):
                try:
                    files += f.stat().st_size
                except FileNotFoundError:       # (dropped meanwhile)
                    pass
    return psutil.Process(agent).memory_info().rss + files
