"""What the commands say of a run whose journal could not be written or read.

A journal locked past the wait fails the run; when even the run's end cannot be
written, `taskflow status` says the run failed and why (not that its master was
SIGKILLed). A damaged journal.db does not keep `taskflow run --resume` (no run id)
from finding the run by its intact resume.log."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap


def _tf(cwd, *args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "taskflow", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _damage_header(path):
    """Overwrite the first bytes of a file (an SQLite database's header)."""
    with open(path, "r+b") as f:
        f.write(b"this is not what was written here" * 4)


LOCKED_TO_THE_END = textwrap.dedent('''
    import os, subprocess, sys
    from taskflow import task, wait_on
    import taskflow.runtime.current as current

    @task(returns=int)
    def inc(x):
        return x + 1

    print("first", sum(wait_on([inc(i) for i in range(4)])), flush=True)
    journal = os.path.join(current.get().run_dir, "journal.db")
    locker = subprocess.Popen([sys.executable, "-c", f"""
    import sqlite3, time
    db = sqlite3.connect({journal!r}, isolation_level=None)
    db.execute('BEGIN IMMEDIATE')
    print('locked', flush=True)
    time.sleep(120)
    """], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    assert locker.stdout.readline().strip() == "locked"
    with open("locker.pid", "w") as f:
        f.write(str(locker.pid))
    print("second", sum(wait_on([inc(i) for i in range(40)])), flush=True)
''')


def test_a_journal_locked_to_the_end_reads_as_failed_because_it_could_not_be_written(
        tmp_path):
    (tmp_path / "wf.py").write_text(LOCKED_TO_THE_END)
    runs = tmp_path / "runs"
    try:
        r = _tf(tmp_path, "run", "--no-progress", "--run-dir", str(runs), "wf.py",
                env={"TASKFLOW_JOURNAL_LOCK_WAIT": "1"})
        assert r.returncode == 1 and "locked by another process" in r.stderr
        # the locker still holds the journal: the run's row could not say how it ended
        st = _tf(tmp_path, "status", "--run-dir", str(runs))
    finally:
        pid = (tmp_path / "locker.pid").read_text()
        os.kill(int(pid), signal.SIGTERM)
    head = st.stdout.splitlines()[:2]
    assert " failed " in head[0], st.stdout
    assert "locked by another process for more than 1 s" in head[1]
    assert "the journal could not be written" in head[1]
    assert "SIGKILL" not in st.stdout and "killed" not in st.stdout


WF = textwrap.dedent('''
    from taskflow import task, wait_on
    @task(returns=int)
    def step(i):
        with open("ran.log", "a") as f:
            f.write(f"{i}\\n")
        return i
    print(sum(wait_on([step(i) for i in range(5)])))
''')


def test_a_damaged_journal_does_not_hide_a_resumable_run_from_resume(tmp_path):
    (tmp_path / "wf.py").write_text(WF)
    (tmp_path / "other.py").write_text(WF)
    runs = tmp_path / "runs"
    assert _tf(tmp_path, "run", "--no-progress", "--run-dir", str(runs), "wf.py").returncode == 0
    (rid,) = os.listdir(runs)
    journal = runs / rid / "journal.db"
    _damage_header(journal)
    (tmp_path / "ran.log").unlink()
    r = _tf(tmp_path, "run", "--no-progress", "--run-dir", str(runs), "--resume", "wf.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "10"
    assert not (tmp_path / "ran.log").exists()          # every call restored
    said = [ln for ln in r.stderr.splitlines() if f"{journal} is damaged" in ln]
    assert len(said) == 1 and f"run {rid} is resumed all the same" in said[0], r.stderr
    assert f"resumed run {rid}: 5 task(s) restored, 0 ran again" in r.stderr
    # another script's resume does not take it
    other = _tf(tmp_path, "run", "--no-progress", "--run-dir", str(runs), "--resume",
                "other.py")
    assert other.returncode != 0 and "no earlier resumable run of other.py" in other.stderr
