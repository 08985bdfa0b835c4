"""A record that cannot be written fails the run loudly (issue 26): a full disk (a small
tmpfs mounted for the test) and a journal another process holds locked."""
from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import textwrap

import pytest


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs at tmp_path/disk (root and a kernel that lets us mount, else skip)."""
    where = tmp_path / "disk"
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs",
                        str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN): "
                    f"{r.stderr.strip() or r.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _tf(cwd, *args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "taskflow", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _state(run_dir):
    db = sqlite3.connect(os.path.join(run_dir, "journal.db"))
    try:
        return db.execute("SELECT state, reason FROM run").fetchone()
    finally:
        db.close()


BLOBS = textwrap.dedent('''
    from taskflow import task, wait_on

    @task(returns=bytes)
    def blob(i):
        return bytes([i % 256]) * 20_000

    vals = wait_on([blob(i) for i in range(300)])
    print("values", sum(len(v) for v in vals), flush=True)
''')


@pytest.mark.parametrize("mode,size", [("process", 20_000), ("thread", 20_000),
                                       ("process", 300_000)])
def test_a_full_disk_fails_the_run_loudly_and_keeps_the_values(tmp_path, small_disk, mode,
                                                               size):
    """The run's directory fills up while tasks end: the run says which file and which disk,
    exits non-zero, and its journal does not say finished; the values it had are right.
    (300 kB: values that stay on their nodes, fetched by wait_on, whose writes to the resume
    log fail on the thread that keeps them: runtime/loop/keepfetched.py.)"""
    (tmp_path / "wf.py").write_text(BLOBS.replace("20_000", str(size))
                                    .replace("range(300)", f"range({6_000_000 // size})"))
    runs = small_disk / "runs"
    r = _tf(tmp_path, "run", "--run-dir", str(runs), "wf.py",
            env={"TASKFLOW_JOURNAL": mode})
    assert r.returncode == 1, r.stderr
    assert "values 6000000" in r.stdout                 # what finished is kept
    assert "the disk is full" in r.stderr and f"free on {small_disk}" in r.stderr
    assert "NodeLost" not in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.rstrip().splitlines()[-1].startswith("taskflow: run ")
    assert " FAILED in " in r.stderr.rstrip().splitlines()[-1]
    (rid,) = os.listdir(runs)
    st = _tf(tmp_path, "status", "--run-dir", str(runs))
    assert st.returncode == 1                           # never "finished"
    state, why = _state(runs / rid)     # (written in the room the journal kept for it)
    assert state == "failed" and "the disk is full" in why
    assert st.stdout.startswith(f"run {rid}: failed") and "why: " in st.stdout


def test_a_spill_onto_a_full_disk_names_the_run_directory_not_a_lost_node(tmp_path,
                                                                         small_disk):
    (tmp_path / "wf.py").write_text(textwrap.dedent('''
        from taskflow import task, wait_on

        @task(returns=bytes)
        def blob(i):
            return bytes([i]) * 400_000

        @task(returns=int)
        def size(b):
            return len(b)

        blobs = [blob(i) for i in range(8)]
        print("sizes", sum(wait_on([size(b) for b in blobs])), flush=True)
    '''))
    runs = small_disk / "runs"
    r = _tf(tmp_path, "run", "--run-dir", str(runs), "--memory-budget", "1MB",
            "--no-resumable", "wf.py")
    assert "sizes 3200000" in r.stdout, r.stderr
    assert r.returncode == 0, r.stderr              # values stayed in memory: nothing lost
    said = [ln for ln in r.stderr.splitlines() if "could not spill values" in ln]
    assert said and f"the run's directory {runs}" in said[0]
    assert "No space left on device" in said[0] and "NodeLost" not in r.stderr


def test_a_file_version_written_onto_a_full_disk_is_the_tasks_error(tmp_path, small_disk):
    (tmp_path / "wf.py").write_text(textwrap.dedent('''
        from taskflow import task, wait_on_file, FILE_OUT

        @task(out=FILE_OUT)
        def write(out):
            with open(out, "wb") as f:
                f.write(b"x" * 4_000_000)

        write("big.bin")
        wait_on_file("big.bin")
    '''))
    runs = small_disk / "runs"
    r = _tf(tmp_path, "run", "--run-dir", str(runs), "--no-resumable", "wf.py")
    assert r.returncode == 1
    assert "task write (id 1) FAILED" in r.stderr and "No space left on device" in r.stderr
    # f.write's error names no file: the folder of the file version is the one named
    (rid,) = os.listdir(runs)
    said = [ln for ln in r.stderr.splitlines() if "No space left on device" in ln][0]
    assert f"(the disk holding {runs / rid / 'data'}" in said, said
    assert re.search(r"is full: [0-9.]+ k?B free\)", said), said  # (the journal's room moves)
    assert "NodeLost" not in r.stderr and "WorkerDied" not in r.stderr


def test_a_full_disk_a_task_writes_to_is_named_not_the_working_directorys(tmp_path,
                                                                         small_disk):
    """A task writes a file of its own (not a parameter) onto a full disk while the run's
    directory and the working directory are on a roomy one: the full one is named."""
    (tmp_path / "wf.py").write_text(textwrap.dedent(f'''
        import os
        from taskflow import task, wait_on

        @task(returns=int)
        def write(d):
            with open(os.path.join(d, "big.bin"), "wb") as f:
                f.write(b"x" * 4_000_000)
            return 1

        wait_on(write({str(small_disk)!r}))
    '''))
    r = _tf(tmp_path, "run", "--run-dir", str(tmp_path / "runs"), "--no-resumable", "wf.py")
    assert r.returncode == 1
    said = [ln for ln in r.stderr.splitlines() if "No space left on device" in ln]
    assert said and f"(the disk holding {small_disk} is full: " in said[0], r.stderr
    assert re.search(r"is full: [0-9.]+ k?B free\)", said[0]), said[0]


def test_an_output_that_cannot_be_put_in_place_fails_the_run_and_is_kept(tmp_path,
                                                                        small_disk):
    (tmp_path / "wf.py").write_text(textwrap.dedent(f'''
        from taskflow import task, FILE_OUT

        @task(out=FILE_OUT)
        def write(out):
            with open(out, "wb") as f:
                f.write(b"y" * 2_000_000)

        write({str(small_disk / "big.bin")!r})
    '''))
    r = _tf(tmp_path, "run", "--run-dir", str(tmp_path / "runs"), "--no-resumable", "wf.py")
    assert r.returncode == 1, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "could not put" in ln]
    assert said and "the disk is full" in said[0] and "the task's file is kept at " in said[0]
    kept = said[0].rsplit("the task's file is kept at ", 1)[1].strip()
    assert os.path.getsize(kept) == 2_000_000           # nothing the task made is lost
    (rid,) = os.listdir(tmp_path / "runs")
    state, why = _state(tmp_path / "runs" / rid)
    assert state == "failed" and "could not put" in why


LOCKED = textwrap.dedent('''
    import os, subprocess, sys, time
    from taskflow import task, wait_on
    import taskflow.runtime.current as current

    @task(returns=int)
    def inc(x):
        time.sleep(0.02)
        return x + 1

    print("first", sum(wait_on([inc(i) for i in range(4)])), flush=True)
    journal = os.path.join(current.get().run_dir, "journal.db")
    hold = float(sys.argv[1])
    locker = subprocess.Popen([sys.executable, "-c", f"""
    import sqlite3, time
    db = sqlite3.connect({journal!r}, isolation_level=None)
    db.execute('BEGIN IMMEDIATE')
    print('locked', flush=True)
    time.sleep({hold})
    """], stdout=subprocess.PIPE, text=True)
    assert locker.stdout.readline().strip() == "locked"
    print("second", sum(wait_on([inc(i) for i in range(40)])), flush=True)
    time.sleep(hold + 1.5)
    print("third", sum(wait_on([inc(i) for i in range(4)])), flush=True)
    locker.wait()
''')


def test_a_journal_locked_past_the_wait_fails_the_run_and_says_why(tmp_path):
    (tmp_path / "wf.py").write_text(LOCKED)
    runs = tmp_path / "runs"
    r = _tf(tmp_path, "run", "--run-dir", str(runs), "wf.py", "4",
            env={"TASKFLOW_JOURNAL_LOCK_WAIT": "1"})
    assert r.returncode == 1
    assert "first 10" in r.stdout and "second 820" in r.stdout      # results kept
    assert "third" not in r.stdout                  # nothing new started after the failure
    said = [ln for ln in r.stderr.splitlines() if "locked by another process" in ln]
    assert said and "for more than 1 s" in said[0] and "journal.db" in said[0]
    assert "cannot rollback" not in r.stderr and "Traceback" not in r.stderr
    (rid,) = os.listdir(runs)
    state, why = _state(runs / rid)
    assert state == "failed" and "locked by another process" in why
    st = _tf(tmp_path, "status", "--run-dir", str(runs))
    assert st.returncode == 1 and "why: journal" in st.stdout


def test_a_journal_locked_for_less_than_the_wait_loses_nothing(tmp_path):
    (tmp_path / "wf.py").write_text(LOCKED)
    runs = tmp_path / "runs"
    r = _tf(tmp_path, "run", "--run-dir", str(runs), "wf.py", "1.5",
            env={"TASKFLOW_JOURNAL_LOCK_WAIT": "20"})
    assert r.returncode == 0, r.stderr
    assert "third 10" in r.stdout
    (rid,) = os.listdir(runs)
    db = sqlite3.connect(runs / rid / "journal.db")
    try:
        assert db.execute("SELECT COUNT(*) FROM task_rows WHERE state='DONE'").fetchone() \
            == (48,)
        assert db.execute("SELECT state, reason FROM run").fetchone() == ("finished", None)
    finally:
        db.close()


def test_a_run_that_cannot_keep_its_journal_does_not_start(tmp_path, small_disk):
    with open(small_disk / "filler", "wb") as f:       # the disk full before the run
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    (tmp_path / "wf.py").write_text("print('ran')\n")
    r = _tf(tmp_path, "run", "--run-dir", str(small_disk / "runs"), "wf.py")
    assert r.returncode == 2 and "ran" not in r.stdout
    (line,) = [ln for ln in r.stderr.splitlines() if "could not start the runtime" in ln]
    assert ("journal " in line or "resume log " in line) and "the disk is full" in line
    assert "give another --run-dir" in line
