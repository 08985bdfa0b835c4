"""What a task does on its node that it should not get away with (issue 28).

Real programs and real processes, counted with psutil: a program's background
child ends with it (or is kept, and said so); a daemon a task started ends
with the run, tracked by a cgroup or by the agent as sub-reaper; a task past
its memory limit is stopped by the kernel where the node allows it; output
lines are cut into rows of at most 1 MiB, carriage returns rewrite a line, and
past 16 MiB a task's output goes to its job file. (Times are measured in
benchmarks/loglines_bench.py, not here.)
"""
from __future__ import annotations

import os
import sys
import time

import psutil
import pytest

import taskflow
from taskflow import TaskMemoryExceeded, binary, constraint, task, wait_on
from taskflow.agent.executor import loglines
from taskflow.agent.executor.loglines import CONTINUED, ROW_MAX, Lines
from taskflow.journal.reader import Journal

DAEMON = ("import os, sys, time\n"
          "if os.fork(): sys.exit(0)\n"
          "os.setsid()\n"
          "if os.fork(): sys.exit(0)\n"
          "os.close(1); os.close(2)\n"
          "time.sleep(float(sys.argv[1]))\n")


@binary(binary="sh", args="-c {{cmd}}")
@task(returns=int)
def sh(cmd):
    pass


@binary(binary="sh", args="-c {{cmd}}", keep_background=True)
@task(returns=int)
def sh_keep(cmd):
    pass


@binary(binary=sys.executable, args="-c {{code}} {{arg}}")
@task(returns=int)
def py_program(code, arg):
    pass


@task(returns=int)
def write_line(nbytes, char="x"):
    sys.stdout.write(char * nbytes)
    return nbytes


@task(returns=int)
def progress(n):
    for i in range(n):
        sys.stdout.write(f"\r{i + 1}/{n}")
        sys.stdout.flush()
    sys.stdout.write("\n")
    return n


@constraint(memory_size=0.1, memory_limit=True)
@task(returns=int)
def hog(mb):
    x = bytearray(mb * 2**20)
    for i in range(0, len(x), 4096):
        x[i] = 1
    return len(x)


@constraint(memory_size=0.1, memory_limit=True)
@binary(binary=sys.executable, args="-c {{code}} {{mb}}")
@task(returns=int)
def hog_program(code, mb):
    pass


HOG = ("import sys\nx = bytearray(int(sys.argv[1]) * 2**20)\n"
       "for i in range(0, len(x), 4096): x[i] = 1\nprint('allocated')\n")


def _alive(tag: str) -> list[int]:
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if tag in (p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(p.pid)
    return out


def _gone(tag: str, within: float = 5.0) -> bool:
    deadline = time.time() + within
    while time.time() < deadline:
        if not _alive(tag):
            return True
        time.sleep(0.05)
    return False


def _tag() -> str:
    """A sleep duration no other process here has: the processes' name in these tests."""
    return f"{300 + (time.time_ns() // 1000) % 100000 / 1000:.3f}"


def _logs(rt, tid):
    """Task ``tid``'s lines (a run's task ids count from 1 in the order of the calls)."""
    with Journal(rt.run_dir) as j:
        return j.logs(task=tid)


# -- lines ------------------------------------------------------------------------------
def test_lines_are_rewritten_by_carriage_returns_and_cut_at_one_mib():
    out = Lines("")
    assert out.add("a") == [] and out.add("b\nc") == ["ab"] and out.flush() == ["c"]
    got = []
    for i in range(5):
        got += out.add(f"\r{i}0%")
    assert got + out.add("\n") == ["40%"]               # a progress bar: its last state
    assert Lines("").add("dos\r\nline\r") == ["dos"]    # CRLF is a line end
    crlf = Lines("")
    assert crlf.add("abc\r") == [] and crlf.add("\n") == ["abc"]
    rows = Lines("").add("é" * ROW_MAX + "\n")           # 2 MiB of UTF-8 in one line
    assert all(len(r.encode()) <= ROW_MAX for r in rows) and len(rows) == 3
    assert rows[0].endswith(CONTINUED) and not rows[-1].endswith(CONTINUED)
    assert "".join(r.replace(CONTINUED, "") for r in rows) == "é" * ROW_MAX
    kept = Lines(b"", "/x/job7.out")                      # a program with a job file
    rows = []
    for _ in range(40):
        rows += kept.add(b"y" * 65536)
    rows += kept.add(b"rest\nnext\n")
    assert len(rows) == 2 and len(rows[0]) == ROW_MAX and rows[1] == b"next"
    assert rows[0].endswith(b"the whole line is in /x/job7.out]")
    junk = Lines(b"").add(b"\x80" * (2 * ROW_MAX) + b"\n")   # not UTF-8: cut anyway
    assert [len(r) for r in junk][:2] == [ROW_MAX, ROW_MAX]


def test_long_lines_and_progress_bars_in_the_journal(tmp_path, monkeypatch):
    """Rows of at most 1 MiB with a marker; 60,000 \\r updates are one row; past 16 MiB a
    Python task's output is in its job file; a program's long line is in its job file."""
    monkeypatch.chdir(tmp_path)
    big = 3 * ROW_MAX + 17
    past = loglines.TASK_BYTES + 3 * ROW_MAX
    line = "import sys\nsys.stdout.write('z' * int(sys.argv[1]) + '\\nafter\\n')\n"
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        a, b, c, d = write_line(big, "é"), progress(60000), write_line(past), \
            py_program(line, big)
        assert wait_on([a, b, c, d]) == [big, 60000, past, 0]
    rows = _logs(rt, 1)
    assert all(len(r["line"].encode()) <= ROW_MAX for r in rows) and len(rows) == 7
    assert "".join(r["line"].replace(CONTINUED, "") for r in rows) == "é" * big
    assert [r["line"] for r in _logs(rt, 2)] == ["60000/60000"]
    rows = _logs(rt, 3)
    note = [r["line"] for r in rows if r["level"] == "RAW"]
    assert len(note) == 1 and "past 16 MiB of output is in" in note[0], note
    spill = note[0].split(" is in ")[1].split(" on this")[0]
    kept = sum(len(r["line"].replace(CONTINUED, "")) for r in rows if r["level"] == "STDOUT")
    assert kept + os.path.getsize(spill) - 1 == past      # (the file ends the line)
    assert all(len(r["line"].encode()) <= ROW_MAX for r in rows)
    rows = _logs(rt, 4)
    job = os.path.join(rt.run_dir, "jobs", "job4.out")
    assert [len(r["line"].encode()) for r in rows] == [ROW_MAX, 5]
    assert rows[0]["line"].endswith(f"the whole line is in {job}]") and rows[1]["line"] == "after"
    assert os.path.getsize(job) == big + len("\nafter\n")


# -- programs and their children --------------------------------------------------------
def test_a_program_ends_when_it_exits_and_its_background_child_with_it(rt):
    tag = _tag()
    assert wait_on(sh(f"sleep {tag} & echo started")) == 0      # not after the child's sleep
    assert _gone(tag), "the background child outlived its program's task"


def test_background_children_kept_on_request_and_said_so_end_with_the_run(tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    tag = _tag()
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        f = sh_keep(f"sleep {tag} & echo started")
        assert wait_on(f) == 0
        kept = _alive(tag)
        assert len(kept) == 1, "keep_background=True: the child runs on"
    assert _gone(tag), "a kept background child outlived the run"
    (note,) = [r["line"] for r in _logs(rt, 1) if r["level"] == "RAW"]
    assert f"pid {kept[0]}" in note and "keep_background=True" in note


@pytest.mark.parametrize("tracking", ["subreaper", "cgroup"])
def test_a_daemonised_grandchild_ends_with_the_run(tmp_path, monkeypatch, tracking):
    """setsid and a double fork leave the program's group: the agent as sub-reaper (the
    default) or its cgroup (TASKFLOW_NODE_TRACKING=cgroup) still ends it with the run."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TASKFLOW_NODE_TRACKING", tracking)
    tag = _tag()
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), echo_logs=False):
        assert wait_on(py_program(DAEMON, tag)) == 0
        (pid,) = _alive(tag)
        assert os.getsid(pid) != os.getsid(0), "the grandchild is in a session of its own"
        (agent,) = [p for p in psutil.Process().children() if "taskflow.node" in p.cmdline()]
        if tracking == "subreaper":
            assert psutil.Process(pid).ppid() == agent.pid      # given to the agent, not init
        else:
            groups = open(f"/proc/{pid}/cgroup").read()
            if f"taskflow-{agent.pid}-all" not in groups:
                pytest.skip(f"this node lets the agent make no cgroup: {groups.strip()}")
    assert _gone(tag), "a task's daemon outlived the run"


def test_processes_after_a_run_none_of_a_task_left(tmp_path, monkeypatch):
    """psutil: after the run no process of the run is left besides this one."""
    monkeypatch.chdir(tmp_path)
    tag = _tag()
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False):
        wait_on([sh(f"sleep {tag} & sleep {tag} & echo two"), sh_keep(f"sleep {tag} &"),
                 py_program(DAEMON, tag)])
    time.sleep(0.2)
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before
            and p.status() != psutil.STATUS_ZOMBIE]
    assert not left and _gone(tag, within=2.0), [p.cmdline() for p in left]


# -- memory limits the kernel enforces --------------------------------------------------
def test_a_task_past_its_memory_limit_is_stopped_by_the_kernel(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        small = hog(20)
        assert wait_on(small) == 20 * 2**20
        (how,) = [r["line"] for r in _logs_live(rt, 1) if r["level"] == "RAW"]
        if "enforced by the kernel" not in how:
            pytest.skip(f"this node allows no kernel memory limit: {how}")
        assert "memory limit 0.1 GB (memory_size): enforced by the kernel: cgroup v" in how
        with pytest.raises(TaskMemoryExceeded) as py_err:
            wait_on(hog(400))
        with pytest.raises(TaskMemoryExceeded) as prog_err:
            wait_on(hog_program(HOG, 400))
        assert wait_on(hog_program(HOG, 20)) == 0          # within the limit: it runs
        assert wait_on(hog(30)) == 30 * 2**20               # the executors go on
    for info, what in ((py_err, "its executor"), (prog_err, "its program")):
        msg = str(info.value)
        assert "memory limit of 0.1 GB" in msg and "enforced by the kernel" in msg
        assert f"the kernel killed {what}" in msg and "Raise memory_size" in msg
        assert info.value.limit == int(0.1 * 2**30) and info.value.peak > 0.09 * 2**30
    assert rt.tally.retries == 0


def _logs_live(rt, tid):
    """The task's lines while the run goes on (the journal is written every 0.1 s)."""
    for _ in range(100):
        rows = _logs(rt, tid)
        if rows:
            return rows
        time.sleep(0.05)
    return []
