"""taskflow.Executor: the standard concurrent.futures.Executor over the runtime."""
from __future__ import annotations

import concurrent.futures as cf
import math
import os
import subprocess
import sys
import threading
import time

import pytest

from support import executor_tasks as E
from support import tasks_lib as L
import taskflow
from taskflow import Executor, TaskCancelled, TaskError, UsageError, wait_on
from taskflow.journal import Journal

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/


@pytest.fixture
def ex(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Executor(max_workers=2, run_dir=str(tmp_path / "runs")) as e:
        yield e


def test_submit_map_and_futures_as_arguments(ex):
    f = ex.submit(E.square, 3)
    assert isinstance(f, cf.Future) and isinstance(f, taskflow.Future)
    g = ex.submit(E.square, f)                  # a future as an argument: a dependency
    assert g.result() == 81 and f.done()
    assert list(ex.map(E.square, range(10))) == [x * x for x in range(10)]
    assert list(ex.map(E.divide, [6, 8, 10], [3, 4, 5])) == [2, 2, 2]
    # several calls per task: the same results, in order
    assert list(ex.map(E.square, range(25), chunksize=4)) == [x * x for x in range(25)]
    assert ex.submit(lambda a, b=2: a + b, 1, b=5).result() == 6
    # functions whose signature Python cannot say (builtins) run too
    assert ex.submit(math.sqrt, 16).result() == 4.0 and ex.submit(pow, 2, 10).result() == 1024


def test_wait_as_completed_and_callbacks(ex):
    futs = [ex.submit(E.square, i) for i in range(1000)]
    seen = [f.result() for f in cf.as_completed(futs)]
    assert sorted(seen) == [i * i for i in range(1000)]          # each yielded once
    done, not_done = cf.wait(futs, return_when=cf.ALL_COMPLETED)
    assert len(done) == 1000 and not not_done
    got: list[int] = []
    ev = threading.Event()
    ex.submit(E.square, 7).add_done_callback(lambda fu: (got.append(fu.result()), ev.set()))
    assert ev.wait(60) and got == [49]


def test_errors_are_the_functions_own_and_handled_ones_do_not_fail_the_run(ex):
    with pytest.raises(ZeroDivisionError) as info:
        ex.submit(E.divide, 1, 0).result()
    assert isinstance(info.value, TaskError) and info.value.task_name == "divide"
    f = ex.submit(E.refuse, 7)
    exc = f.exception()                        # read: met by the program
    assert isinstance(exc, E.Refused) and exc.code == 7 and exc.args == (7, "not today")
    with pytest.raises(FileNotFoundError) as nf:
        ex.submit(E.open_missing, "/nonexistent/x").result()
    assert nf.value.errno == 2 and nf.value.filename == "/nonexistent/x"
    rt = ex.runtime
    assert not rt.failed and len(rt.failures) == 3
    assert rt.handled_note() == "3 tasks failed (handled by the script)"


def test_several_threads_submit_at_once(ex):
    out: dict[int, list[int]] = {}

    def work(k: int) -> None:
        futs = [ex.submit(E.square, k * 1000 + i) for i in range(100)]
        out[k] = [f.result() for f in futs]
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert {k: v for k, v in out.items()} == {
        k: [(k * 1000 + i) ** 2 for i in range(100)] for k in range(4)}


def test_decorated_tasks_and_submissions_mix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as rt:
        ex = Executor()                         # the running runtime: no nodes of its own
        assert ex.runtime is rt
        a = L.inc(1)                            # a @task call
        b = ex.submit(E.square, a)              # ... read by a submission
        c = L.inc(b)                            # ... whose future a @task call reads
        assert wait_on(c) == 5
        ex.shutdown()                           # (does not stop a runtime it did not start)
        assert wait_on(L.inc(5)) == 6
        with pytest.raises(UsageError, match="already running"):
            Executor(cluster="nodes.yaml")
        assert Executor(max_workers=3).runtime is rt     # (the run's nodes decide: said)


def test_shutdown_refuses_new_work_and_cancels_what_has_not_started(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gate = tmp_path / "gate"
    ex = Executor(max_workers=1, run_dir=str(tmp_path / "runs"))
    first = ex.submit(E.wait_for_file, str(gate))
    started = tmp_path / "gate.started"
    for _ in range(2400):                       # the first runs (else shutdown cancels it too)
        if started.exists():
            break
        time.sleep(0.05)
    assert started.exists(), "the first task never started"
    later = [ex.submit(E.square, i) for i in range(5)]
    reader = ex.submit(E.square, first)         # waits for the first: cannot have been sent

    def open_gate() -> None:                    # once the reader is cancelled
        cf.wait([reader], timeout=120)
        gate.write_text("")
    opener = threading.Thread(target=open_gate)
    opener.start()
    ex.shutdown(wait=True, cancel_futures=True)
    opener.join(120)
    assert first.result() == "released"
    assert isinstance(reader.exception(), TaskCancelled)
    assert "cancel_futures=True" in str(reader.exception())
    # the others: cancelled, or sent ahead to the node before the shutdown, and then done
    for i, f in enumerate(later):
        assert isinstance(f.exception(), TaskCancelled) or f.result() == i * i
    with pytest.raises(RuntimeError, match="after shutdown"):
        ex.submit(E.square, 1)
    with Journal(ex.runtime.run_dir) as j:
        assert j.run()["state"] == "finished"


def test_bad_arguments_are_refused_at_the_call(ex):
    with pytest.raises(UsageError, match="give a function"):
        ex.submit(42)
    with pytest.raises(UsageError, match="chunksize"):
        ex.map(E.square, [1], chunksize=0)
    with pytest.raises(UsageError, match="returns 2 values"):
        ex.submit(L.divmod_task, 7, 2)
    with pytest.raises(UsageError, match="max_workers"):
        Executor(max_workers=0)


UNMET = '''
from taskflow import Executor
from support.executor_tasks import divide, square
with Executor(max_workers=2) as ex:
    ex.submit(divide, 1, 0)             # nobody looks at it
    print(ex.submit(square, 4).result())
'''


def test_a_failure_nobody_looked_at_is_said_and_fails_the_run(tmp_path):
    (tmp_path / "wf.py").write_text(UNMET)
    env = dict(os.environ, PYTHONPATH=HERE, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    r = subprocess.run([sys.executable, "wf.py"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.stdout.strip() == "16"
    assert "task divide (id 1) FAILED" in r.stderr and "ZeroDivisionError" in r.stderr
    (run_id,) = os.listdir(tmp_path / "runs")
    with Journal(str(tmp_path / "runs" / run_id)) as j:
        assert j.run()["state"] == "failed"


def test_a_function_made_per_call_keeps_the_executor_bounded(ex, monkeypatch):
    from taskflow.api import executor as X
    monkeypatch.setattr(X, "SPECS_KEPT", 8)
    futs = [ex.submit(lambda i=i: i * 2) for i in range(50)]     # 50 distinct functions
    assert [f.result() for f in futs] == [i * 2 for i in range(50)]
    assert len(ex._specs) <= 8
