"""A local agent started early (providers/prestart.py): taken by the run, else killed.

Real agent processes: the early one is the run's node agent, or it is gone (no
process left behind) when no local provider takes it, when its time is up and
when the interpreter exits. It starts at the first task decorator a program asks
for (not in an executor, nor once a run is on), and loads the task API for its
executors while it waits for the HELLO (agent/serve.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from support.waiting import until

from taskflow.agent.serve import PRELOAD
from taskflow.providers import prestart

TAKEN = textwrap.dedent('''
    import taskflow
    from taskflow import task, wait_on
    from taskflow.providers import prestart

    @task(returns=1)
    def inc(x):
        return x + 1

    rt = taskflow.Runtime(workers=1)         # its first use: an agent starts now
    early = prestart._early[0].pid
    rt.start()
    try:
        print("SAME", rt.nodes[0].info["pid"] == early, "VALUE", wait_on(inc(1)))
    finally:
        rt.stop()
''')


DECLARED = textwrap.dedent('''
    import taskflow
    from taskflow.providers import prestart

    assert prestart._early is None
    from taskflow import task, wait_on      # a program that declares tasks: its agent starts
    early = prestart._early[0].pid

    @task(returns=1)
    def asks():                 # in an executor: asking for a decorator starts nothing
        from taskflow import binary
        from taskflow.providers import prestart
        return binary is not None and prestart._early is None

    rt = taskflow.Runtime(workers=1)
    rt.start()
    try:
        same = rt.nodes[0].info["pid"] == early
        from taskflow import mpi           # a run is on: no other agent
        print("SAME", same, "NONE", wait_on(asks()), prestart._early is None)
    finally:
        rt.stop()
''')


PLAIN = textwrap.dedent('''
    from taskflow import task, wait_on
    from taskflow.providers import prestart

    taken = []
    take = prestart.take
    prestart.take = lambda cmd, env: taken.append(take(cmd, env)) or taken[-1]

    @task(returns=1)
    def inc(x):
        return x + 1

    value = wait_on(inc(1))          # the first call starts the run: its agent, early
    print("TAKEN", [p is not None for p in taken], "VALUE", value)
''')


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_the_run_takes_the_agent_started_while_the_runtime_loaded(tmp_path):
    (tmp_path / "wf.py").write_text(TAKEN)
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    r = subprocess.run([sys.executable, "wf.py"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "SAME True VALUE 2" in r.stdout, r.stderr


def test_the_first_task_decorator_starts_the_agent_the_run_takes(tmp_path):
    """Not in an executor, and once only: a decorator asked for while the run is on
    starts nothing."""
    (tmp_path / "wf.py").write_text(DECLARED)
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    r = subprocess.run([sys.executable, "wf.py"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "SAME True NONE True True" in r.stdout, r.stderr


SPAWNED = textwrap.dedent('''
    import multiprocessing

    def child(_):
        from taskflow import task           # (the script imported again: a spawned child)
        from taskflow.providers import prestart
        return prestart._early is None

    if __name__ == "__main__":
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            print("NONE", pool.map(child, [0]))
''')


def test_a_multiprocessing_child_starts_no_agent(tmp_path):
    (tmp_path / "wf.py").write_text(SPAWNED)
    r = subprocess.run([sys.executable, "wf.py"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "NONE [True]" in r.stdout, r.stderr


UNDER_RUN = textwrap.dedent('''
    import sys
    from taskflow.providers import prestart
    taken = []
    take = prestart.take
    prestart.take = lambda cmd, env: taken.append(take(cmd, env)) or taken[-1]
    import atexit
    atexit.register(lambda: print("TAKEN", [p is not None for p in taken], flush=True))
    from taskflow.cli import main
    main(sys.argv[1:])
''')


@pytest.mark.parametrize("inline", ["0", "1"])
def test_taskflow_run_starts_its_local_agent_before_it_loads_the_runtime(tmp_path, inline):
    """The script's folder goes first on the agent's path, as on the master's; an inline
    run starts none."""
    (tmp_path / "helper.py").write_text("def plus(x):\n    return x + 1\n")
    (tmp_path / "wf.py").write_text(textwrap.dedent('''
        from taskflow import task, wait_on

        @task(returns=1)
        def inc(x):
            from helper import plus     # beside the script: on the agent's path too
            return plus(x)

        print("VALUE", wait_on(inc(1)))
    '''))
    (tmp_path / "launch.py").write_text(UNDER_RUN)
    env = dict(os.environ, TASKFLOW_INLINE=inline)
    r = subprocess.run([sys.executable, "launch.py", "run", "--run-dir", str(tmp_path / "runs"),
                        "--no-progress", str(tmp_path / "wf.py")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "VALUE 2" in r.stdout
    assert ("TAKEN []" if inline == "1" else "TAKEN [True]") in r.stdout


PRELOADS = textwrap.dedent('''
    import os, sys
    from taskflow.agent.serve import PRELOAD, preload_while_waiting
    r, w = os.pipe()
    if sys.argv[1] == "hello":
        os.write(w, b"x")           # the master's first bytes are there: load nothing
    preload_while_waiting(r)
    print(" ".join(sorted(m for m in PRELOAD if m.startswith("taskflow") and m in sys.modules)))
''')


@pytest.mark.parametrize("hello", ["none", "hello"])
def test_an_agent_loads_the_task_api_only_while_its_hello_is_not_there(hello):
    r = subprocess.run([sys.executable, "-c", PRELOADS, hello], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    loaded = r.stdout.split()
    if hello == "hello":
        assert loaded == []
    else:
        assert loaded == sorted(m for m in PRELOAD if m.startswith("taskflow"))


@pytest.mark.parametrize("inline", ["0", "1"])
def test_a_plain_scripts_first_call_starts_its_agent_early(tmp_path, inline):
    """The run a task call starts takes the agent started before the runtime loaded; an
    inline run (TASKFLOW_INLINE=1) has no node to take it."""
    (tmp_path / "wf.py").write_text(PLAIN)
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"), TASKFLOW_INLINE=inline)
    r = subprocess.run([sys.executable, "wf.py"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert ("TAKEN [] VALUE 2" if inline == "1" else "TAKEN [True] VALUE 2") in r.stdout


@pytest.fixture
def early():
    prestart.discard()                  # (none of another test's)
    prestart.begin()
    assert prestart._early is not None
    proc = prestart._early[0]
    yield proc
    prestart.discard()


def test_an_agent_no_local_provider_takes_is_killed_when_a_run_starts(early):
    assert _alive(early.pid)
    env = prestart.agent_env()
    assert prestart.take(prestart.CMD + ["--other"], env) is None     # another command
    assert early.returncode is not None and not _alive(early.pid)     # killed and reaped
    assert prestart._early is None


def test_an_agent_with_another_environment_is_not_taken(early, monkeypatch):
    monkeypatch.setenv("TASKFLOW_PRESTART_TEST", "1")       # the environment changed since
    assert prestart.take(prestart.CMD, prestart.agent_env()) is None
    assert not _alive(early.pid)


def test_an_agent_nobody_takes_is_killed_after_its_time(monkeypatch):
    prestart.discard()
    monkeypatch.setattr(prestart, "TTL", 0.2)
    prestart.begin()
    assert prestart._early is not None
    proc = prestart._early[0]
    until(lambda: proc.returncode is not None, 30)
    assert not _alive(proc.pid) and prestart._early is None


@pytest.mark.parametrize("env", [("TASKFLOW_PRESTART", "0"), ("TASKFLOW_INLINE", "1")])
def test_none_is_started_when_turned_off_or_inline(monkeypatch, env):
    """TASKFLOW_INLINE=1 runs every task in the calling thread: an agent would only linger."""
    prestart.discard()
    monkeypatch.setenv(*env)
    prestart.begin()
    assert prestart._early is None


def test_the_interpreters_exit_kills_an_agent_nobody_took(tmp_path):
    code = ("from taskflow.providers import prestart; prestart.begin(); "
            "print(prestart._early[0].pid, flush=True)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    pid = int(r.stdout.split()[0])
    deadline = time.time() + 10
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
