"""The public API: bad-input errors, constraints, futures, sync verbs, runtimes."""
from __future__ import annotations

import concurrent.futures as cf
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from support import tasks_lib as L
import taskflow
from taskflow import FILE_IN, UsageError, constraint, task, wait_on

from support.paths import ROOT


def test_unknown_direction_names_function_parameter_and_fix():
    with pytest.raises(UsageError) as info:
        @task(x="INOUTT")
        def f(x):
            pass
    msg = str(info.value)
    assert "f" in msg and "'x'" in msg and "INOUTT" in msg and "Did you mean INOUT" in msg
    with pytest.raises(UsageError, match="'fiel' is not a parameter of .*Did you mean 'file'"):
        @task(fiel=FILE_IN)
        def g(file):
            pass
    with pytest.raises(UsageError, match="on_failure='SOMETIMES'"):
        @task(on_failure="SOMETIMES")
        def h():
            pass


NOUT = 3            # a module global, as PyCOMPSs's returns="NOUT" names one


def test_returns_as_text_is_a_count_a_type_or_refused_at_decoration():
    """A string that is neither a count nor a type is refused when the function is decorated,
    naming the function, the value and what is allowed; never read as one value."""
    for text, says in (("two", "write returns=2"), ("Three", "write returns=3"),
                       ("two values", "neither a count nor a type"),
                       ("3 + 4", "neither a count nor a type"),
                       ("NOUT", "module global NOUT (= 3)"),
                       ("{{x}}", "taskflow run --compat pycompss"),
                       ("value_of(x.n)", "taskflow run --compat pycompss")):
        with pytest.raises(UsageError) as info:
            @task(returns=text)
            def counted(x):
                return x
        msg = str(info.value)
        assert "counted" in msg and repr(text) in msg and says in msg, msg
        assert "returns=int" in msg or "returns=NOUT" in msg
    for text, nout in (("2", 2), ("int", 1), ("tuple[int, str]", 2), ("list[int] | None", 1),
                       ("Defined.later", 1), ("NotYetDefined", 1)):
        @task(returns=text)
        def fine(x):
            return x
        assert (fine.spec.nout, fine.spec.returns_tuple) == (nout, nout > 1), text


def test_file_in_missing_at_call_time(rt, tmp_path):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(UsageError) as info:
        L.read_file(missing)
    msg = str(info.value)
    assert "read_file" in msg and "'src'" in msg and missing in msg and "does not exist" in msg
    with pytest.raises(UsageError, match="pass a path"):
        L.read_file(42)


def test_unpicklable_argument_is_reported_at_call_time(rt):
    lock = threading.Lock()
    with pytest.raises(UsageError) as info:
        L.ident([lock])
    msg = str(info.value)
    assert "ident" in msg and "'x'" in msg and "cannot be pickled" in msg


def test_an_open_file_as_an_argument_is_refused_at_the_call(rt, tmp_path):
    """Not sent as a StringIO of its text (what cloudpickle would make of it)."""
    p = tmp_path / "notes.txt"
    p.write_text("hello\n")
    with open(p) as f, pytest.raises(UsageError) as info:
        L.ident([f])
    msg = str(info.value)
    assert "ident" in msg and "'x'" in msg and "open file" in msg and str(p) in msg, msg
    assert "pass its path instead" in msg and "FILE_IN" in msg


def test_returns_mismatch_fails_the_task_with_a_clear_message(rt):
    a, b = wrong_count(1)
    with pytest.raises(taskflow.TaskError,
                       match=r"wrong_count declared returns=2 but returned a value of type int"):
        wait_on(a)
    with pytest.raises(taskflow.TaskError, match="3 values"):
        wait_on(wrong_count((1, 2, 3))[0])


@task(returns=2, on_failure="FAIL")
def wrong_count(x):
    return x


@task(returns=int, on_failure="FAIL")
def opens(path, binary=False):
    return open(path, "rb" if binary else "r")


@task(returns=2, on_failure="FAIL")
def opens_second(path):
    return 1, [open(path)]


def test_an_open_file_returned_is_the_tasks_error_naming_it_and_the_fix(rt, tmp_path):
    """Not a StringIO of its text (what cloudpickle would make of it): the task fails."""
    p = tmp_path / "notes.txt"
    p.write_text("hello\n")
    for fut, what in ((opens(str(p)), "its return value holds"),
                      (opens(str(p), True), "its return value holds"),
                      (opens_second(str(p))[1], "its return value #2 holds")):
        with pytest.raises(taskflow.TaskError) as info:
            wait_on(fut)
        msg = str(info.value)
        assert "opens" in msg and what in msg and "open file" in msg and str(p) in msg, msg
        assert "return the path" in msg and "FILE_OUT" in msg, msg


def test_wrong_arguments_are_reported_at_call_time(rt):
    with pytest.raises(UsageError, match="add.*missing a required argument"):
        L.add(1)


def test_inout_on_immutable_is_rejected(rt):
    with pytest.raises(UsageError, match="cannot change in place"):
        L.append(5, 1)


def test_constraint_that_no_node_fits_fails_at_call_time(rt):
    @constraint(computing_units=64)
    @task(returns=int)
    def huge(x):
        return x

    with pytest.raises(UsageError) as info:
        huge(1)
    msg = str(info.value)
    assert "huge" in msg and "computing_units=64" in msg and "no node can ever run it" in msg

    @constraint(memory_size=10_000)
    @task(returns=int)
    def hungry(x):
        return x

    with pytest.raises(UsageError, match="memory_size=10000"):
        hungry(1)
    with pytest.raises(UsageError, match="computing_units must be an int"):
        constraint(computing_units="many")(lambda: None)


@constraint(computing_units=2)
@task(returns=bool)
def needs_two(folder):
    return L.rendezvous("two", "never", folder, timeout=0.5)


def test_constraint_holds_slots(rt, tmp_path):
    """A 2-unit task holds both slots: a 1-unit task cannot meet it while it runs."""
    big = needs_two(str(tmp_path))
    small = L.read_meeting([], "never", "two", str(tmp_path))
    assert wait_on(big) is False and wait_on(small) is True


def test_future_is_a_concurrent_future(rt):
    f = L.inc(41)
    assert isinstance(f, cf.Future)
    done, _ = cf.wait([f, L.inc(1)], timeout=30)
    assert len(done) == 2 and f.result() == 42 and f.exception() is None
    seen = []
    called = threading.Event()
    g = L.sleep_for(0.2)
    g.add_done_callback(lambda fut: (seen.append(fut.result()), called.set()))
    assert list(cf.as_completed([g], timeout=30))[0] is g
    wait_on(g)
    taskflow.barrier()
    # (as in concurrent.futures, waiters may wake before the callbacks have run)
    assert called.wait(30) and seen == [0.2]
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle
        pickle.dumps(f)


def test_priority_tasks_go_first(tmp_path, monkeypatch):
    """Among tasks waiting for a slot, priority ones are started first."""
    monkeypatch.chdir(tmp_path)
    order = str(tmp_path / "order")
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")):
        L.sleep_for(0.5)                 # holds the only slot
        L.sleep_for(0.01)                # may be queued on the node already
        normal = [log_order(order, f"n{i}") for i in range(3)]
        urgent = log_order_urgent(order, "urgent")
        wait_on(normal + [urgent])
    assert open(order).read().split()[0] == "urgent"


@task()
def log_order(path, name):
    time.sleep(0.01)
    with open(path, "a") as f:
        f.write(name + "\n")


@task(priority=True)
def log_order_urgent(path, name):
    with open(path, "a") as f:
        f.write(name + "\n")


def test_file_helpers(rt, tmp_path):
    f = str(tmp_path / "h.txt")
    assert taskflow.file_exists(f) is False
    L.write_file(f, "abc")
    assert taskflow.file_exists(f) is True
    with taskflow.open(f) as fh:
        assert fh.read() == "abc"
    with taskflow.open(f, "w") as fh:     # the program takes the file back
        fh.write("mine")
    assert wait_on(L.read_file(f)) == "mine"
    assert taskflow.delete_file(f) is True and not os.path.exists(f)
    lst = [1]
    L.append(lst, 2)
    assert taskflow.delete_object(lst) is True
    assert taskflow.number_of_resources() == 1


def test_start_stop_and_context_manager(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rt = taskflow.start(workers=1, run_dir=str(tmp_path / "runs"))
    try:
        assert taskflow.current_runtime() is rt
        with pytest.raises(RuntimeError, match="already running"):
            taskflow.start()
        assert wait_on(L.inc(1)) == 2
    finally:
        taskflow.stop()
    assert taskflow.current_runtime() is None


def _run(args, cwd, **kw):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          **kw)


SCRIPT = textwrap.dedent('''
    import sys
    from taskflow import task, wait_on, FILE_OUT

    @task(returns=int)
    def sq(x):
        print("squaring", x)
        return x * x

    @task(out=FILE_OUT)
    def save(out, v):
        open(out, "w").write(str(v))

    @task(returns=int, on_failure="FAIL")
    def broken(x):
        raise ZeroDivisionError("broken on purpose")

    if __name__ == "__main__":
        total = sum(wait_on([sq(i) for i in range(10)]))
        save("result.txt", total)          # never waited for: the end of the run does it
        print("total", total, sys.argv[1:])
        if "--fail" in sys.argv:
            broken(1)
''')


def test_embedded_default_runtime(tmp_path):
    (tmp_path / "wf.py").write_text(SCRIPT)
    r = _run([sys.executable, "wf.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "total 285 []" in r.stdout and "squaring 3" in r.stdout
    assert (tmp_path / "result.txt").read_text() == "285"
    r = _run([sys.executable, "wf.py", "--fail"], tmp_path)
    assert r.returncode == 1 and "broken on purpose" in r.stderr


def test_taskflow_run_end_to_end(tmp_path):
    (tmp_path / "wf.py").write_text(SCRIPT)
    cli = [sys.executable, "-m", "taskflow.cli", "run", "--workers", "2"]
    r = _run(cli + ["wf.py", "a", "b"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "total 285 ['a', 'b']" in r.stdout
    assert "finished" in r.stderr and "11 tasks, 11 done, 0 failed" in r.stderr
    assert (tmp_path / "result.txt").read_text() == "285"
    r = _run(cli + ["wf.py", "--fail"], tmp_path)
    assert r.returncode == 1
    assert "FAILED" in r.stderr and "task broken" in r.stderr and "ZeroDivisionError" in r.stderr
    r = _run(cli + ["--progress", "wf.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    # off a terminal, progress is plain lines (console/lines.py); the last: all done
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("[")]
    assert lines and lines[-1].endswith("] 11/11 done, 0 running, 0 queued, 0 waiting, 0 failed")
    (tmp_path / "bad.py").write_text("raise SystemExit(3)\n")
    assert _run(cli + ["bad.py"], tmp_path).returncode == 3     # the script's own status


def test_public_names_load_on_use_and_an_agent_needs_neither_the_api_nor_psutil():
    """``import taskflow`` is lazy (PEP 562): an agent's start-up, on the path of the first
    task, imports only the node modules; every name of ``__all__`` still resolves."""
    code = textwrap.dedent("""
        import sys
        import taskflow.agent.agent
        heavy = [m for m in ("taskflow.runtime.runtime", "taskflow.api.task", "psutil")
                 if m in sys.modules]
        import taskflow
        missing = [n for n in taskflow.__all__ if getattr(taskflow, n, None) is None]
        from taskflow import *  # noqa: F403
        print(heavy, missing, "wait_on" in dir(taskflow), callable(task))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "[]", "True", "True"], out.stdout


def test_an_agents_start_up_leaves_out_what_only_its_rare_paths_use():
    """An agent's imports are on the path of a run's first result: the standard modules
    that only adoption, dial-back, a program in another directory, a failure's message or
    a stream without an alias use are imported there, not at every agent's start (nor
    by an executor when it attaches its streams)."""
    code = textwrap.dedent("""
        import sys
        import taskflow.node, taskflow.agent.serve, taskflow.agent.agent
        import taskflow.agent.executor.streams
        print(sorted(m for m in ("logging", "hashlib", "hmac", "secrets", "tempfile",
                                 "subprocess", "shlex", "uuid") if m in sys.modules))
        from taskflow.wire import adoption
        print(len(adoption.new_secret()), adoption.socket_name("r", "n").endswith(".sock"))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "64 True"], out.stdout
    with pytest.raises(AttributeError, match="no attribute 'wait_onn'"):
        taskflow.wait_onn  # noqa: B018


def test_a_masters_start_loads_neither_openssl_nor_the_secrets_module(tmp_path):
    """A run's master makes its keys and digests with hashlib's own BLAKE2 and its
    adoption secret from os.urandom: importing hashlib (OpenSSL) and secrets (random,
    hmac) is on the path of every first result, so a plain run does without them; the
    digests are hashlib's own, and the secret is as long as before."""
    code = textwrap.dedent("""
        import sys
        import taskflow
        from taskflow import task, wait_on

        @task(returns=int)
        def inc(x):
            return x + 1

        with taskflow.Runtime(workers=1, run_dir=sys.argv[1]):
            print(wait_on(inc(inc(1))))
            print(sorted(m for m in ("hashlib", "_hashlib", "secrets", "random", "hmac")
                         if m in sys.modules))
        import hashlib
        from taskflow.graph.digests import blake2b
        print(blake2b is hashlib.blake2b)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "runs")],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["3", "[]", "True"], out.stdout
    from taskflow.wire.adoption import SECRET_NAME
    secrets = [p.read_text() for p in (tmp_path / "runs").glob(f"*/{SECRET_NAME}")]
    assert len(secrets) == 1 and len(secrets[0]) == 64, secrets
    int(secrets[0], 16)


def test_a_python_found_through_a_relative_path_still_starts_a_run_after_a_chdir(tmp_path):
    """``PATH=.venv/bin:$PATH python script.py`` leaves ``sys.executable`` relative; a
    script that changes its directory and then starts a run still gets its agents and its
    journal's writer (they are started from the interpreter's absolute path)."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "script.py").write_text(textwrap.dedent("""
        import os, sys
        import taskflow
        from taskflow import task, wait_on

        @task(returns=int)
        def inc(x):
            return x + 1

        os.chdir("elsewhere")
        with taskflow.Runtime(workers=1, run_dir="runs"):
            print(os.path.isabs(sys.executable), wait_on(inc(inc(1))))
    """))
    bindir = os.path.relpath(os.path.dirname(sys.executable), tmp_path)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
               PYTHONPATH=os.path.join(ROOT, "src"), TASKFLOW_PRESTART="0")
    out = subprocess.run([os.path.basename(sys.executable), "script.py"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "False 3", out.stdout
    assert list((tmp_path / "elsewhere" / "runs").glob("*/journal.db"))


def test_wait_on_refuses_what_can_only_be_a_mistake(rt):
    """A generator would be waited for as nothing (0 tasks, the run 'finished'); a task
    function is not a call of it: both are said, with the fix."""
    futs = [L.inc(i) for i in range(3)]
    for given, says in [((f for f in futs), r"wait_on\(generator object\).*wait_on\(list"),
                        (map(lambda f: f, futs), r"wait_on\(map object\).*give a list"),
                        (L.inc, r"wait_on\(inc\): that is the task function itself.*"
                                r"wait_on\(inc\(...\)\)"),
                        (len, r"wait_on\(len\): that is a function, not a future")]:
        with pytest.raises(UsageError, match=says):
            wait_on(given)
    assert wait_on(futs) == [1, 2, 3] and wait_on(5) == 5 and wait_on(range(2)) == range(2)


@task(src=taskflow.FILE_OUT, returns=1)
def count_chars(src):
    with open(src) as f:
        return len(f.read())


@task(out=taskflow.OUT)
def fill(out):
    out.append(1)


def test_a_file_out_the_task_reads_names_the_parameter_and_the_fix(rt, tmp_path):
    (tmp_path / "input.csv").write_text("a,b\n1,2\n")
    with pytest.raises(FileNotFoundError) as info:
        wait_on(count_chars(str(tmp_path / "input.csv")))
    text = str(info.value)
    assert "parameter 'src' is FILE_OUT" in text and "declare src=FILE_IN" in text
    # the user's path, never the run's version path
    assert str(tmp_path / "input.csv") in text
    assert rt.data_dir not in text and rt.data_dir not in info.value.remote_traceback


def test_out_given_a_path_suggests_file_out(rt):
    with pytest.raises(UsageError, match=r"If 'result.txt' is a file the task writes, declare it "
                                         r"out=FILE_OUT"):
        fill("result.txt")


class _Talker:
    """Holds a standard stream, as a logger or a unittest case does (PyCOMPSs's test apps
    pass their TestCase as `self`)."""

    def __init__(self):
        self.out = sys.__stdout__       # (pytest's capture replaced sys.stdout)
        self.hook = lambda: 1           # (only cloudpickle sends it: by value)


@task(returns=1)
def talker_back(t):
    assert t.out is sys.stdout          # the worker's own stream in its place
    t.out = sys.__stdout__
    return t


def test_an_object_holding_a_standard_stream_goes_and_comes_back(rt):
    """Not refused as an open file: sys.stdout and co. travel as the receiver's own."""
    back = wait_on(talker_back(_Talker()))
    assert type(back).__name__ == "_Talker" and back.out in (sys.stdout, sys.__stdout__)
