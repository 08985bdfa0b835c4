"""Progress: on a terminal a bar per task name (done, running, queued, failed, %, elapsed,
ETA); elsewhere plain lines, every few seconds and at each change of the run."""
from __future__ import annotations

import io
import re
import subprocess
import sys
import time

import pytest

import taskflow
from taskflow.console.bars import MAX_NAMES, Progress
from taskflow.console.occupancy import occupancy
from taskflow.console.lines import ProgressLines, clock

from support import observe_tasks as ot


def test_bars_per_name_with_counts(tmp_path):
    """(Given a stream that is not a terminal, the bars are printed once, when closed.)"""
    out = io.StringIO()
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        prog = Progress(rt, stream=out)
        futs = [ot.nap(0.0) for _ in range(3)]
        with pytest.raises(taskflow.TaskError):
            taskflow.wait_on(ot.boom(1))
        time.sleep(0.3)          # the bus has delivered nap and boom: they come first
        futs += [ot.named(f"step_{i:02d}")(0.0) for i in range(MAX_NAMES + 2)]
        taskflow.wait_on(futs)
        prog.close()
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0].startswith(f"taskflow run {rt.run_id}: 1 node(s), 2 slot(s)")
    (total,) = [ln for ln in lines if ln.startswith("all tasks")]    # printed once, complete
    assert f" {MAX_NAMES + 6}/{MAX_NAMES + 6} " in total and "1 failed" in total
    assert "100%" in total and "eta" in total
    (nap,) = [ln for ln in lines if ln.startswith("nap ")]
    assert " 3/3 " in nap and "100%" in nap and "failed" not in nap
    (boom,) = [ln for ln in lines if ln.startswith("boom ")]
    assert " 1/1 " in boom and "1 failed" in boom
    # the first MAX_NAMES names get a bar each (in the order they came), the rest share one
    named = [ln for ln in lines if ln.startswith("step_")]
    assert len(named) == MAX_NAMES - 2 and all(" 1/1 " in ln for ln in named)
    (other,) = [ln for ln in lines if ln.startswith("4 other names")]
    assert " 4/4 " in other


def test_running_tasks_are_counted_while_they_run(tmp_path):
    out = io.StringIO()
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        prog = Progress(rt, stream=out)
        slow = ot.named("slow")                 # a new function: not known to be short
        futs = [slow(1.5), slow(1.5), slow(0.0)]
        running = {}
        deadline = time.time() + 30
        while time.time() < deadline:
            running = prog._running()
            if running.get("slow") == 2:
                break
            time.sleep(0.05)
        assert running == {"slow": 2}              # two slots: two running, one waiting
        rt.bus.flush()
        prog._sync()
        bars = {t.description: t for t in prog.bars.tasks}
        assert bars["slow"].fields["running"] == 2 and bars["slow"].total == 3
        assert bars["slow"].fields["queued"] <= 1 and bars["slow"].fields["n_failed"] == 0
        taskflow.wait_on(futs)
        prog.close()


# -- off a terminal: plain lines (console/lines.py) --------------------------------
LINE = re.compile(r"^\[(\d\d):(\d\d)\] (\d+)/(\d+) done, (\d+) running, (\d+) queued, "
                  r"(\d+) waiting, (\d+) failed(?:, \d+ cancelled)?(?:, \d+ interrupted)?(?:; (.*))?$")


def test_plain_lines_every_few_seconds_and_at_each_change(tmp_path):
    out = io.StringIO()
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False,
                          retries=0) as rt:
        lines = ProgressLines(rt, stream=out, interval=0.3, poll=0.05)
        slow = ot.named("slow_lines")
        bad = ot.boom(1)                        # fails first, while the rest run
        futs = [slow(0.4) for _ in range(6)]
        with pytest.raises(taskflow.TaskError):
            taskflow.wait_on(bad)
        taskflow.wait_on(futs)
        lines.close()
    text = out.getvalue()
    first, *rest = text.splitlines()
    assert first == f"[00:00] run {rt.run_id}: 1 node(s), 2 slot(s)"
    parsed = [LINE.match(ln) for ln in rest]
    assert rest and all(parsed), text                         # every line is a counts line
    assert "\x1b" not in text and "\r" not in text            # no colour, no redraw
    # while it went on: some tasks ran on both slots, and never more than the slots
    assert any(int(m.group(5)) == 2 for m in parsed), text
    assert all(int(m.group(5)) <= 2 for m in parsed), text
    # the failure got its line, naming the task, as soon as it happened (not at the end)
    (fail,) = [m for m in parsed if m.group(9) and "failed: boom" in m.group(9)]
    assert fail.group(9) == "failed: boom (id 1)" and int(fail.group(3)) < 6, text
    # the last line: everything ended
    last = parsed[-1]
    assert last.group(3, 4, 5, 6, 7, 8) == ("6", "7", "0", "0", "0", "1"), text


def test_taskflow_run_prints_lines_when_stderr_is_not_a_terminal(tmp_path):
    (tmp_path / "wf.py").write_text(
        "from taskflow import task, wait_on\n@task(returns=int)\ndef inc(x):\n"
        "    return x + 1\nprint(sum(wait_on([inc(i) for i in range(50)])))\n")
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "-w", "2", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert re.match(r"^\[00:00\] run \S+: 1 node\(s\), 2 slot\(s\)$", lines[0]), r.stderr
    assert "[00:00] 50/50 done, 0 running, 0 queued, 0 waiting, 0 failed" in lines, r.stderr
    assert "\x1b" not in r.stderr
    quiet = subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress", "-w", "2",
                            "--run-dir", str(tmp_path / "runs"), "wf.py"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert not any(LINE.match(ln) or ln.startswith("[00:00] run") for ln in
                   quiet.stderr.splitlines()), quiet.stderr


def test_a_node_never_shows_more_running_tasks_than_it_has_slots(tmp_path):
    """Short tasks are sent to a node hundreds deep; only as many as it has slots run."""
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        tiny = ot.named("tiny")
        taskflow.wait_on([tiny(0.001) for _ in range(20)])      # learned: short
        futs = [tiny(0.001) for _ in range(3000)]
        seen_queued = 0
        while not all(f.done() for f in futs[-50:]):
            occ = occupancy(rt)
            assert occ.n_running <= 2, occ
            seen_queued = max(seen_queued, occ.n_queued)
            time.sleep(0.01)
        taskflow.wait_on(futs)
    assert seen_queued > 2        # held on the node, not running: shown as queued


def test_clock():
    assert clock(0) == "[00:00]" and clock(75.9) == "[01:15]" and clock(3725) == "[1:02:05]"


def test_a_programs_lines_come_with_its_task_a_python_tasks_print_as_written(tmp_path):
    (tmp_path / "wf.py").write_text(
        "from taskflow import binary, task, wait_on\n"
        "@binary(binary='echo')\n@task()\ndef shout(word):\n    ...\n"
        "@task(returns=int)\ndef talk():\n    print('plain words')\n    return 1\n"
        "wait_on(shout('hello'))\nwait_on(talk())\n")
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress", "-w", "1",
                        "--run-dir", str(tmp_path / "runs"), "wf.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "[shout 1] hello" in lines and "plain words" in lines, r.stdout


def _through_a_pty(tmp_path, rows: int, cols: int) -> str:
    import fcntl
    import os
    import pty
    import struct
    import termios
    m, s = pty.openpty()
    if rows or cols:
        fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    p = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "-w", "2", "--run-dir",
                          str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, stdin=s, stdout=s,
                         stderr=s, close_fds=True)
    os.close(s)
    out = b""
    while True:
        try:
            got = os.read(m, 65536)
        except OSError:         # (the other side closed)
            break
        if not got:
            break
        out += got
    os.close(m)
    assert p.wait(timeout=120) == 0, out
    return out.decode(errors="replace")


def test_a_terminal_without_a_size_gets_lines_not_redrawn_bars(tmp_path):
    (tmp_path / "wf.py").write_text(
        "from taskflow import task, wait_on\n@task(returns=int)\ndef inc(x):\n"
        "    return x + 1\nprint(sum(wait_on([inc(i) for i in range(20)])))\n")
    sizeless = _through_a_pty(tmp_path, 0, 0)       # as `script` or a CI runner makes it
    assert "\x1b[1A" not in sizeless and "20/20 done" in sizeless, sizeless
    sized = _through_a_pty(tmp_path, 40, 120)
    assert "\x1b[1A" in sized and "all tasks" in sized, sized
