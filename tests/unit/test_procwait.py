"""Waiting for a child's exit, woken by the exit (taskflow/procwait.py): real processes."""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from taskflow.procwait import wait_exit


def test_the_exit_status_of_a_process_that_exits():
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert wait_exit(proc, 60) == 3 and proc.returncode == 3
    assert wait_exit(proc, 60) == 3         # (reaped already: the same status)


def test_a_process_that_does_not_exit_in_time_is_said_and_left_running():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            wait_exit(proc, 0.2)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_another_thread_reaping_it_meanwhile_gives_the_same_status():
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(5)"])
    reaper = threading.Thread(target=proc.wait)     # (the journal's watcher does this)
    reaper.start()
    assert wait_exit(proc, 60) == 5
    reaper.join(60)
    assert proc.returncode == 5
