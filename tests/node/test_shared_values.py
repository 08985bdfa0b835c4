"""Large values between an agent and its executors go through files of the node's
shared directory (agent.executor.sharedfiles), not through the pipes."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import taskflow
from taskflow import wait_on
from taskflow.agent.executor import sharedfiles
from taskflow.wire import messages as M

from support import shared_tasks as ST

N = 1_000_000                   # 8 MB arrays
SUM = float(N * (N - 1) // 2)


def _until(cond, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return bool(cond())


def _agent_dirs(base) -> list[str]:
    root = base / f"taskflow-{os.getuid()}"
    return sorted(os.listdir(root)) if root.is_dir() else []


def _files(base) -> list[str]:
    root = base / f"taskflow-{os.getuid()}"
    return [str(root / d / f) for d in _agent_dirs(base) for f in os.listdir(root / d)]


def test_a_large_value_goes_through_a_private_file_and_goes_with_the_value(
        tmp_path, monkeypatch):
    """A value made on one executor is read intact on both (a reader that zeroes its
    input changes nobody else's); while the node holds it, it is one user-only file in
    a user-only directory; dropped: the file goes; the run over: the directory goes."""
    base = tmp_path / "shm"
    base.mkdir()
    monkeypatch.setenv(sharedfiles.ENV, str(base))
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as rt:
        a = ST.ramp(N)
        got = wait_on([ST.where_and_sum(a, zero=i % 3 == 0) for i in range(12)])
        assert [s for _, s in got] == [0.0 if i % 3 == 0 else SUM for i in range(12)]
        assert len({pid for pid, _ in got}) == 2, "both executors read it"
        (path,) = _files(base)
        (agent_dir,) = _agent_dirs(base)
        assert agent_dir.startswith(f"a{rt.nodes[0].info['pid']}-")
        assert os.stat(path).st_mode & 0o777 == 0o600
        assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
        assert os.stat(os.path.dirname(os.path.dirname(path))).st_mode & 0o777 == 0o700
        del a
        assert _until(lambda: not _files(base)), "the dropped value's file is still there"
        b = ST.ramp(N)
        assert float(wait_on(b).sum()) == SUM           # the master's copy, from the file
        (path,) = _files(base)
        os.unlink(path)         # (removed from outside, as logind's RemoveIPC does): the pipe
        got = wait_on([ST.where_and_sum(b) for i in range(8)])
        assert [s for _, s in got] == [SUM] * 8 and len({pid for pid, _ in got}) == 2
    assert _agent_dirs(base) == []


def test_a_value_whose_file_cannot_be_written_goes_down_the_pipe(tmp_path, monkeypatch):
    """No room for the file (its executor may not write past 1 MB: the write fails half
    way) or no shared directory at all: the value travels as before, whole."""
    base = tmp_path / "shm"
    base.mkdir()
    monkeypatch.setenv(sharedfiles.ENV, str(base))
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as rt:
        a = ST.ramp(N, limit_bytes=2**20)
        got = wait_on([ST.where_and_sum(a) for i in range(4)])
        assert [s for _, s in got] == [SUM] * 4
        assert len(_agent_dirs(base)) == 1 and _files(base) == [], \
            "a part of a value was left behind"
        assert rt.tally.retries == 0
    monkeypatch.setenv(sharedfiles.ENV, str(tmp_path / "no-such-dir"))
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs2")):
        assert [s for _, s in wait_on([ST.where_and_sum(ST.ramp(N)) for _ in range(2)])] \
            == [SUM] * 2


def test_the_directories_of_agents_that_are_gone_are_removed_by_the_next(
        tmp_path, monkeypatch):
    """An agent killed leaves its directory: the next agent on the machine removes it (and
    leaves a live agent's alone, and a directory not this user's only is not used)."""
    base = tmp_path / "shm"
    root = base / f"taskflow-{os.getuid()}"
    root.mkdir(parents=True, mode=0o700)
    dead = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        stale = root / f"a{dead.pid}-{sharedfiles._started(dead.pid)}"
    finally:
        dead.kill()
        dead.wait()
    stale.mkdir(mode=0o700)
    (stale / "v1-0").write_bytes(b"x" * 100)
    live = root / f"a{os.getppid()}-{sharedfiles._started(os.getppid())}"
    live.mkdir(mode=0o700)
    monkeypatch.setenv(sharedfiles.ENV, str(base))
    monkeypatch.setattr(sharedfiles, "DIR", "")
    mine = sharedfiles.setup()
    try:
        assert mine is not None and os.path.isdir(mine)
        assert not stale.exists() and live.exists()
    finally:
        sharedfiles.cleanup()
    assert not os.path.exists(mine)
    os.chmod(root, 0o755)                   # (anybody may enter it: not used)
    assert sharedfiles.setup() is None and sharedfiles.DIR == ""


@pytest.mark.parametrize("nbufs", [1, 3])
def test_a_value_in_a_file_is_the_value_written(tmp_path, monkeypatch, nbufs):
    """Written by one process, adopted by another (read only) and read copy-on-write by a
    third: the same arrays, aligned; a reader's change stays its own; the owner's end
    unlinks the file."""
    import numpy as np
    from taskflow.wire import values as V
    monkeypatch.setenv(sharedfiles.ENV, str(tmp_path))
    monkeypatch.setattr(sharedfiles, "DIR", "")
    assert sharedfiles.setup()
    try:
        value = [np.full(70_000 + i, float(i)) for i in range(nbufs)] + ["small"]
        payload = V.dump(value)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:            # another process writes it and sends its name
            code = 1
            try:
                marker = sharedfiles.put(payload)
                os.write(w, f"{marker.name} {marker.size}".encode())
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        name, size = os.read(r, 200).decode().split()
        os.close(r)
        assert os.waitpid(pid, 0)[1] == 0
        marker = M.Shared(name, int(size))
        held = sharedfiles.adopt(marker)
        assert len(held) == len(payload)
        mine = V.load(sharedfiles.read(sharedfiles.marker(held)), take=True)
        for i in range(nbufs):
            assert mine[i].ctypes.data % 64 == 0 and np.all(mine[i] == float(i))
            mine[i][:] = -1.0
        again = V.load(held)
        assert [float(x[0]) for x in again[:nbufs]] == [float(i) for i in range(nbufs)]
        assert again[-1] == "small"
        path = held.file.path
        del held
        assert not os.path.exists(path)
    finally:
        sharedfiles.cleanup()


def test_spilling_a_shared_value_moves_it_to_the_nodes_disk(tmp_path, monkeypatch):
    """Above the budget (shared files count in it), held values go to the spill directory
    and their shared files go; they come back whole for their readers."""
    base = tmp_path / "shm"
    base.mkdir()
    monkeypatch.setenv(sharedfiles.ENV, str(base))
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"),
                          memory_budget="1MB") as rt:
        arrays = [ST.ramp(N) for _ in range(3)]
        assert [s for _, s in wait_on([ST.where_and_sum(a) for a in arrays])] == [SUM] * 3
        (node,) = rt.nodes
        assert _until(lambda: node.memory is not None and node.memory.spilled >= 3 * 8 * N)
        assert _files(base) == [], "a spilled value's shared file is still there"
        spill_dir = os.path.join(rt.data_dir, f"spill-{node.name}-{node.info['pid']}")
        assert len(os.listdir(spill_dir)) == 3
        assert [s for _, s in wait_on([ST.where_and_sum(a) for a in arrays])] == [SUM] * 3
