"""A run's record tells the truth: how it ended (taskflow run and plain python), output
that could be lost, damaged records, odd task errors (issue 26)."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from support import tasks_lib as L
import taskflow
from taskflow import TaskError, UsageError, wait_on

HEAD = textwrap.dedent('''
    import sys, time
    from taskflow import task, wait_on

    @task(returns=int)
    def inc(x):
        return x + 1

    print(wait_on([inc(i) for i in range(3)]), flush=True)
''')

ENDS = {
    "raise": ('raise RuntimeError("boom")', 1, "the script raised RuntimeError at wf.py:10"),
    "exit3": ("sys.exit(3)", 3, "the script exited with status 3"),
    # met by a with block in a function on its way up: still how the program ended
    "exit4-with": ("def main():\n    with open(__file__):\n        sys.exit(4)\nmain()", 4,
                   "the script exited with status 4"),
    "exit0": ("sys.exit(0)", 0, None),
    # unittest.main's way: sys.exit(not ok); a bool is the number it stands for
    "exitTrue": ("sys.exit(True)", 1, "the script exited with status 1"),
    "caught": ("try:\n    sys.exit(2)\nexcept SystemExit:\n    pass\n"
               "print(wait_on(inc(10)))", 0, None),
}


def _tf(tmp_path, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "taskflow", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout)


def _run_row(run_dir):
    db = sqlite3.connect(os.path.join(run_dir, "journal.db"))
    try:
        return db.execute("SELECT state, reason FROM run").fetchone()
    finally:
        db.close()


def _only_run(root):
    (rid,) = os.listdir(root)
    return os.path.join(root, rid)


@pytest.mark.parametrize("how", ["taskflow run", "python"])
@pytest.mark.parametrize("end", sorted(ENDS))
def test_the_journal_says_how_the_script_ended(tmp_path, how, end):
    """A script that raises or exits non-zero is a failed run, with the reason, in the
    journal, `taskflow runs` and `taskflow status` (exit 1), under `taskflow run` and
    under plain `python script.py`; the process exits with the script's own status."""
    code, status, reason = ENDS[end]
    (tmp_path / "wf.py").write_text(HEAD + code + "\n")
    runs = tmp_path / "runs"
    if how == "python":
        r = subprocess.run([sys.executable, "wf.py"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120, env={**os.environ,
                                                        "TASKFLOW_RUN_DIR": str(runs)})
    else:
        r = _tf(tmp_path, "run", "--run-dir", str(runs), "wf.py")
    assert r.returncode == status, r.stderr
    state, why = _run_row(_only_run(runs))
    assert (state, why) == (("failed", reason) if reason else ("finished", None))
    st = _tf(tmp_path, "status", "--run-dir", str(runs))
    assert st.returncode == (1 if reason else 0)
    assert st.stdout.startswith(f"run {os.listdir(runs)[0]}: {state}")
    if reason:
        assert f"why: {reason}" in st.stdout
    listed = _tf(tmp_path, "runs", "--run-dir", str(runs))
    assert f" {state} " in listed.stdout


def test_a_killed_master_reads_as_interrupted_with_why(tmp_path):
    (tmp_path / "wf.py").write_text(HEAD + "time.sleep(60)\n")
    runs = tmp_path / "runs"
    p = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--run-dir", str(runs),
                          "wf.py"], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().startswith("[1, 2, 3]")
    os.kill(p.pid, signal.SIGKILL)
    p.communicate(timeout=30)
    st = _tf(tmp_path, "status", "--run-dir", str(runs))
    assert st.returncode == 1
    assert ": interrupted" in st.stdout and "ended without closing the run" in st.stdout
    (run_id,) = os.listdir(runs)        # ... and the command that continues it
    assert f"  continue it with: taskflow run --resume {run_id} --run-dir {runs} wf.py\n" \
        in st.stdout
    assert " interrupted " in _tf(tmp_path, "runs", "--run-dir", str(runs)).stdout


def test_file_out_onto_a_directory_is_refused_at_the_call(rt, tmp_path):
    """FILE_OUT given a directory (or DIRECTORY_OUT given a file) would lose the output at
    the run's end: an error when the task is called, naming the parameter and the path."""
    (tmp_path / "outdir").mkdir()
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError, match=r"task write_file, parameter 'out' is FILE_OUT.* "
                       + str(tmp_path / "outdir") + " is a directory"):
        L.write_file(str(tmp_path / "outdir"), "data")
    with pytest.raises(UsageError, match=r"task make_dir, parameter 'out' is DIRECTORY_OUT.*"
                                         r"afile is a file, not a directory"):
        L.make_dir(str(tmp_path / "afile"), 2)
    assert os.listdir(tmp_path / "outdir") == [] and (tmp_path / "afile").read_text() == "x"


def test_a_file_out_in_a_new_folder_is_put_there_without_a_warning(tmp_path):
    (tmp_path / "wf.py").write_text(textwrap.dedent('''
        from taskflow import task, FILE_OUT
        @task(f=FILE_OUT)
        def write(f):
            with open(f, "w") as fh:
                fh.write("hello")
        write("new/sub/x.txt")
    '''))
    r = _tf(tmp_path, "run", "--run-dir", str(tmp_path / "runs"), "wf.py")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "new" / "sub" / "x.txt").read_text() == "hello"
    assert "could not put" not in r.stderr


def test_a_task_error_whose_str_raises_is_the_tasks_own_failure(rt):
    with pytest.raises(TaskError) as info:
        wait_on(L.raise_unprintable(1))
    first = str(info.value).split("\n", 1)[0]
    assert "UnprintableError: <its __str__ raised RuntimeError: no text" in first
    assert "WorkerDied" not in str(info.value) and rt.tally.retries == 0
    assert wait_on(L.inc(1)) == 2           # the executor lived


def _damage(path, at=0):
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(b"this is not what was written here" * 8)


def test_a_damaged_journal_is_one_line_from_every_command(tmp_path):
    (tmp_path / "wf.py").write_text(HEAD)
    runs = tmp_path / "runs"
    assert _tf(tmp_path, "run", "--run-dir", str(runs), "wf.py").returncode == 0
    path = os.path.join(_only_run(runs), "journal.db")
    _damage(path)
    for cmd in (["status"], ["logs"], ["report"], ["graph"], ["trace"], ["explain"]):
        r = _tf(tmp_path, *cmd, "--run-dir", str(runs))
        assert r.returncode == 1, (cmd, r.stdout)
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, \
            (cmd, r.stderr)
        assert f"{path} is damaged (file is not a database)" in r.stderr, (cmd, r.stderr)
    listed = _tf(tmp_path, "runs", "--run-dir", str(runs))
    assert listed.returncode == 0 and " damaged " in listed.stdout


def _frames(log):
    """Where each frame of a resume log starts (runtime/recovery/frames.py's format)."""
    from taskflow.runtime.recovery.frames import HEAD, MAGIC
    data = open(log, "rb").read()
    pos, out = len(MAGIC), []
    while pos < len(data):
        out.append(pos)
        _, hlen, blen, _, _ = HEAD.unpack_from(data, pos)
        pos += HEAD.size + hlen + blen
    return out


def test_a_damaged_resume_log_is_said_and_what_came_before_it_counts(tmp_path):
    (tmp_path / "wf.py").write_text(textwrap.dedent('''
        import time
        from taskflow import task, wait_on
        @task(returns=int)
        def step(i):
            with open("ran.log", "a") as f:
                f.write(f"{i}\\n")
            return i
        first = wait_on([step(i) for i in range(3)])
        time.sleep(0.5)                 # (their records go out in a frame of their own)
        print(sum(first) + sum(wait_on([step(i) for i in range(3, 6)])))
    '''))
    runs = tmp_path / "runs"
    assert _tf(tmp_path, "run", "--run-dir", str(runs), "wf.py").returncode == 0
    first = _only_run(runs)
    log = os.path.join(first, "resume.log")
    _damage(log, _frames(log)[-1] + 12)     # the last frame's header: it is complete
    (tmp_path / "ran.log").unlink()
    r = _tf(tmp_path, "run", "--run-dir", str(runs), "--resume", "wf.py")
    assert r.returncode == 0 and r.stdout.strip() == "15", r.stderr
    said = [ln for ln in r.stderr.splitlines() if "resume.log is damaged at byte" in ln]
    assert len(said) == 1 and "the calls the damaged frames held run again" in said[0]
    again = (tmp_path / "ran.log").read_text().split()
    assert 0 < len(again) < 6               # the records before the damage were used
    # (the other run; not the id that sorts last: ids are named to the second, and both
    # runs may have started in the same one)
    (resumed,) = [d for d in os.listdir(runs) if d != os.path.basename(first)]
    db = sqlite3.connect(runs / resumed / "journal.db")
    try:                                    # and the resumed run's journal says it too
        lines = [ln for (ln,) in db.execute("SELECT line FROM logs WHERE level='TASKFLOW'")]
    finally:
        db.close()
    assert [f"taskflow: {ln}" for ln in lines if "resume.log is damaged at byte" in ln] == said


def test_a_resume_log_of_another_kind_is_refused_in_one_line(tmp_path):
    (tmp_path / "wf.py").write_text(HEAD)
    runs = tmp_path / "runs"
    assert _tf(tmp_path, "run", "--run-dir", str(runs), "wf.py").returncode == 0
    _damage(os.path.join(_only_run(runs), "resume.log"))
    r = _tf(tmp_path, "run", "--run-dir", str(runs), "--resume", "wf.py")
    assert r.returncode == 0, r.stderr
    assert "is not a resume log this taskflow can read" in r.stderr
    assert "Traceback" not in r.stderr


def test_runs_are_resumable_without_being_asked_and_runtime_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")) as rt:
        assert wait_on(L.inc(1)) == 2
    assert rt.resumable and os.path.getsize(os.path.join(rt.run_dir, "resume.log")) > 0
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), resumable=False) as rt:
        assert wait_on(L.inc(1)) == 2
    assert not os.path.exists(os.path.join(rt.run_dir, "resume.log"))
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), journal=False) as rt:
        assert wait_on(L.inc(1)) == 2       # a run that keeps no journal keeps no log either
    assert not rt.resumable and not os.path.exists(rt.run_dir)
