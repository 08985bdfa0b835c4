"""The SQLite journal: tasks, retries, failures, logs; `taskflow status/logs/runs`."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest
from click.testing import CliRunner

import taskflow
from taskflow.cli import main
from taskflow.journal import Journal, list_runs, resolve_run

from support import observe_tasks as ot


def _run(tmp_path, monkeypatch, body, **kw):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False,
                          **kw) as rt:
        body(rt)
    return rt


def test_journal_successes_failures_retries(tmp_path, monkeypatch):
    marker = str(tmp_path / "marker")
    seen = {}

    def body(rt):
        a = ot.add(1, 2)
        b = ot.add(a, 10)
        f = ot.flaky(marker)
        bad = ot.boom(b)
        after = ot.add(bad, 1)
        assert taskflow.wait_on(b) == 13
        assert taskflow.wait_on(f) == "ok"
        with pytest.raises(taskflow.TaskError) as ei:
            taskflow.wait_on(after)
        seen["err"] = ei.value
        seen["late"] = ot.add(b, 0)         # b had ended before this reader was called
        assert taskflow.wait_on(seen["late"]) == 13
    rt = _run(tmp_path, monkeypatch, body, retries=1)       # (the default is none)
    path = os.path.join(rt.run_dir, "journal.db")
    assert os.path.isfile(path)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with Journal(rt.run_dir) as j:
        run = j.run()
        # the program met the failure (wait_on raised its cancellation) and went on
        assert run["run_id"] == rt.run_id and run["state"] == "finished"
        assert run["reason"] == "1 task failed (handled by the script)"
        tasks = {t["id"]: t for t in j.tasks()}
        assert len(tasks) == 6
        by_name = {}
        for t in tasks.values():
            by_name.setdefault(t["name"], []).append(t)
        assert [t["state"] for t in by_name["add"]] == ["DONE", "DONE", "CANCELLED", "DONE"]
        a, b = by_name["add"][:2]
        assert a["params"] == "a=1, b=2"
        assert b["params"].startswith("a=<data d") and b["params"].endswith("b=10")
        assert a["func"].endswith("observe_tasks.add")
        assert '"computing_units": 1' in a["constraints"]
        for t in (a, b):
            assert t["node"] and t["t_submit"] <= t["t_dispatch"] <= t["t_start"] <= t["t_end"]
        assert j.deps_of(b["id"]) == [a["id"]]
        assert j.deps_of(by_name["add"][3]["id"]) == [b["id"]]     # an edge to an ended task
        (fl,) = by_name["flaky"]
        assert fl["state"] == "DONE"
        detail = j.task(fl["id"])
        states = [x["state"] for x in detail["transitions"]]
        assert states[0] == "SUBMITTED" and states[-1] == "DONE" and "RETRY" in states
        retry = next(x for x in detail["transitions"] if x["state"] == "RETRY")
        assert "first attempt fails" in retry["info"]
        (bd,) = by_name["boom"]
        full = j.task(bd["id"])
        assert full["state"] == "FAILED" and full["attempts"] == 2
        assert "ValueError: boom 13" in full["error"]
        assert "raise ValueError" in full["traceback"]
        assert [f["id"] for f in j.failed()] == [bd["id"]]
        c = j.counts()
        assert (c["DONE"], c["FAILED"], c["CANCELLED"], c["retries"]) == (4, 1, 1, 2)
        assert [n["name"] for n in j.nodes()] and j.nodes()[0]["slots"] == 2
    # The error the user sees names the task, the node and the command for its logs.
    msg = str(seen["err"])
    assert "task boom" in msg and "on node" in msg
    assert f"taskflow logs {rt.run_id} {bd['id']}" in msg


def test_logs_order_per_stream_and_cap(tmp_path, monkeypatch):
    def body(rt):
        taskflow.wait_on(ot.chatty(50))
        taskflow.wait_on(ot.loud(10005))
    rt = _run(tmp_path, monkeypatch, body)
    with Journal(rt.run_dir) as j:
        lines = j.logs(task=1)
        outs = [x["line"] for x in lines if x["level"] == "STDOUT"]
        errs = [x["line"] for x in lines if x["level"] == "STDERR"]
        assert outs == [f"out {i}" for i in range(50)]
        assert errs == [f"err {i}" for i in range(50)]
        ts = [x["t"] for x in lines]
        assert all(x["node"] for x in lines) and ts == sorted(ts)
        assert [x["line"] for x in j.logs(task=1, levels=["STDERR"])] == errs
        big = j.logs(task=2)
        assert len(big) == 10001
        assert big[-1]["level"] == "RAW" and "5 more STDOUT lines dropped" in big[-1]["line"]


def test_binary_task_logs(tmp_path, monkeypatch):
    binary = pytest.importorskip("taskflow").binary
    sh = tmp_path / "talk.sh"
    sh.write_text("#!/bin/sh\nfor i in 1 2 3; do echo out$i; echo err$i >&2; done\n")
    sh.chmod(0o755)

    @binary(binary=str(sh))
    @taskflow.task(returns=int)
    def talk():
        pass

    fail = tmp_path / "fail.sh"
    fail.write_text("#!/bin/sh\necho going down >&2\nexit 3\n")
    fail.chmod(0o755)

    @binary(binary=str(fail))
    @taskflow.task(returns=int, on_failure="FAIL")
    def failing():
        pass

    @binary(binary=str(fail), fail_by_exit_value=False)
    @taskflow.task(returns=int)
    def tolerated():
        pass

    def body(rt):
        assert taskflow.wait_on(talk()) == 0
        with pytest.raises(taskflow.TaskError):
            taskflow.wait_on(failing())
        assert taskflow.wait_on(tolerated()) == 3
        assert taskflow.wait_on(ot.add(1, 1)) == 2
    rt = _run(tmp_path, monkeypatch, body)
    with Journal(rt.run_dir) as j:
        # the exit code is kept for programs that succeed too; Python tasks have none
        assert j.task(1)["state"] == "DONE" and j.task(1)["exit_code"] == 0
        assert j.task(3)["state"] == "DONE" and j.task(3)["exit_code"] == 3
        assert j.task(4)["state"] == "DONE" and j.task(4)["exit_code"] is None
        lines = j.logs(task=1)
        assert [x["line"] for x in lines if x["level"] == "STDOUT"] == ["out1", "out2", "out3"]
        assert [x["line"] for x in lines if x["level"] == "STDERR"] == ["err1", "err2", "err3"]
        t2 = j.task(2)
        assert t2["state"] == "FAILED" and t2["exit_code"] == 3
        assert "going down" in [x["line"] for x in j.logs(task=2)]


def test_journal_off(tmp_path, monkeypatch):
    rt = _run(tmp_path, monkeypatch, lambda rt: taskflow.wait_on(ot.add(1, 1)), journal=False)
    assert rt.journal is None
    assert not os.path.exists(os.path.join(rt.run_dir, "journal.db"))


def test_status_logs_runs_cli(tmp_path, monkeypatch):
    def body(rt):
        taskflow.wait_on(ot.chatty(3))
        ot.boom(7)                  # a failure the program never meets: the run fails
    rt = _run(tmp_path, monkeypatch, body)
    root = str(tmp_path / "runs")
    cli = CliRunner()
    r = cli.invoke(main, ["status", "--run-dir", root])
    assert r.exit_code == 1, r.output            # a failed run: non-zero, as `taskflow run`
    assert f"run {rt.run_id}: failed" in r.output
    assert "done 1" in r.output and "failed 1" in r.output
    assert "task 2 boom on" in r.output and "ValueError: boom 7" in r.output
    assert f"taskflow logs {rt.run_id} 2" in r.output
    r = cli.invoke(main, ["logs", rt.run_id, "1", "--run-dir", root])
    assert r.exit_code == 0, r.output
    out = r.output.splitlines()
    assert [x.split()[-2:] for x in out if "STDOUT" in x] == [["out", str(i)] for i in range(3)]
    assert sum("STDERR" in x for x in out) == 3
    r = cli.invoke(main, ["logs", "--level", "stderr", "--run-dir", root])
    assert r.exit_code == 0 and "STDOUT" not in r.output and "[1 chatty] STDERR err 0" in r.output
    r = cli.invoke(main, ["logs", "2", "--run-dir", root])     # a lone number: a task id
    assert "about to fail" in r.output and "ValueError: boom 7" in r.output
    r = cli.invoke(main, ["runs", "--run-dir", root])
    assert rt.run_id in r.output and "failed" in r.output
    assert [x["run_id"] for x in list_runs(root)] == [rt.run_id]
    assert resolve_run(None, root) == rt.run_dir
    r = cli.invoke(main, ["status", "nosuchrun", "--run-dir", root])
    assert r.exit_code != 0 and "taskflow runs" in r.output


def test_taskflow_run_and_follow_subprocess(tmp_path):
    script = tmp_path / "wf.py"
    script.write_text(
        "import time\nfrom taskflow import task, wait_on\n"
        "@task(returns=int)\ndef step(i):\n    print('step', i, flush=True)\n"
        "    time.sleep(0.3)\n    return i\n"
        "wait_on([step(i) for i in range(4)])\n")
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    proc = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "-w", "2",
                             str(script)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # `logs --follow` started while the run goes on ends when the run ends.
    import time
    for _ in range(100):
        if list_runs(str(tmp_path / "runs")):
            break
        time.sleep(0.1)
    follow = subprocess.run([sys.executable, "-m", "taskflow", "logs", "--follow"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.wait(60) == 0, proc.stderr.read()
    lines = [x for x in follow.stdout.splitlines() if "STDOUT" in x]
    assert sorted(x.split()[-1] for x in lines) == ["0", "1", "2", "3"]
    st = subprocess.run([sys.executable, "-m", "taskflow", "status"], cwd=tmp_path, env=env,
                        capture_output=True, text=True)
    assert ": finished" in st.stdout and "done 4" in st.stdout and st.returncode == 0


def test_thread_mode_and_writer_process_loss(tmp_path, monkeypatch):
    import signal
    import time
    monkeypatch.setenv("TASKFLOW_JOURNAL", "thread")

    def in_thread(rt):
        assert rt.journal.proc is None
        taskflow.wait_on(ot.chatty(2))
    rt = _run(tmp_path, monkeypatch, in_thread)
    with Journal(rt.run_dir) as j:
        assert [t["state"] for t in j.tasks()] == ["DONE"] and len(j.logs()) == 4
    monkeypatch.delenv("TASKFLOW_JOURNAL")

    def lose_writer(rt):
        taskflow.wait_on(ot.add(1, 1))
        time.sleep(0.3)
        os.kill(rt.journal.proc.pid, signal.SIGKILL)
        rt.journal.proc.wait()
        deadline = time.time() + 10
        while rt.dead is None and time.time() < deadline:     # the watcher sees it at once
            time.sleep(0.05)
        with pytest.raises(taskflow.TaskError, match="writer process was killed by signal 9"):
            taskflow.wait_on(ot.add(2, 2))      # nothing new starts: rows would be missing
    # A writer that dies may take rows with it: the run fails, and says so (not finished)
    rt = _run(tmp_path, monkeypatch, lose_writer)
    assert rt.failed and "writer process was killed by signal 9" in rt.end_reason
    with Journal(rt.run_dir) as j:
        r = j.run()
        assert r["state"] == "failed" and "writer process was killed" in r["reason"]
        assert [t["params"] for t in j.tasks()] == ["a=1, b=1"]


def test_python_dash_m_taskflow_cli_has_every_subcommand():
    # run as ``python -m taskflow.cli`` the module is __main__: the subcommands that
    # other modules register on taskflow.cli's group must still be there
    out = subprocess.run([sys.executable, "-m", "taskflow.cli", "--help"], capture_output=True,
                         text=True, timeout=60).stdout
    for cmd in ("run", "status", "logs", "runs", "graph", "trace", "report", "monitor", "submit"):
        assert f"  {cmd} " in out, (cmd, out)


class _LoopLock:
    """The runtime lock, held by the "loop"; says when the bus thread starts waiting for it."""

    def __init__(self) -> None:
        import threading
        self.inner = threading.Lock()
        self.waited = threading.Event()

    def __enter__(self):
        self.waited.set()
        self.inner.acquire()

    def __exit__(self, *exc):
        self.inner.release()


class _Ended:
    """What the bus reads of a task that ended well."""

    def __init__(self, tid):
        from types import SimpleNamespace
        self.id, self.t_submit, self.t_start, self.t_end, self.t_dispatch = tid, 1.0, 2.0, 3.0, 1.5
        self.node, self.attempts, self.crashes = None, 0, 0
        self.argv = self.kwargs = self.refs = None
        self.spec = SimpleNamespace(name="f", invoker="python")


def test_a_done_row_never_goes_out_ahead_of_an_event_emitted_before_it():
    """The loop emits a task's "running" and appends its done row in one round, under the
    runtime lock; a delivery that began meanwhile carries both or neither. (Found by
    benchmarks/chaos.py: tasks of a resumed run stayed RUNNING in the journal, the event
    written after the row.)"""
    import threading
    from taskflow.runtime.bus import EventBus
    bus = EventBus()
    lock = bus.rows_lock = _LoopLock()
    batches = []
    bus._subs.append(batches.append)            # a row subscriber, without the bus thread
    bus._row_subs.add(batches.append)
    bus.active = True
    early, task = _Ended(1), _Ended(2)
    bus.sub_rows.append(early)                  # a row pending, so the delivery wants rows
    lock.inner.acquire()                        # the loop is in a round
    deliver = threading.Thread(target=bus._deliver)
    deliver.start()
    assert lock.waited.wait(30)                 # the delivery waits for the round to end
    bus.emit(("running", 2.0, task.id, "f", "n", None))
    bus.sub_rows.append(task)
    bus.done_rows.append(task)
    lock.inner.release()
    deliver.join(30)
    bus._deliver()

    def batch_of(pred):
        return next(i for i, b in enumerate(batches) if pred(b))
    running = batch_of(lambda b: any(e[0] == "running" and e[2] == task.id for e in b[2]))
    done = batch_of(lambda b: any(r[0] == task.id for r in b[0] + b[3]))
    assert running <= done                      # the journal applies events, then rows
