"""Executors run numeric libraries with one thread each unless the environment says
otherwise (agent.executor.taskenv.one_thread_each); the programs they start do not get
those defaults.

Real runtimes, real executors and a real ``sh`` program.
"""
from __future__ import annotations

import pytest

import taskflow
from taskflow import binary, task, wait_on

VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@task(returns=1)
def threads_seen():
    import os
    return [os.environ.get(v) for v in VARS]


@binary(binary="sh", args="-c {{script}}", fail_by_exit_value=False)
@task(returns=int)
def exit_value(script):
    pass


@pytest.fixture
def no_thread_vars(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for v in VARS:
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


def test_python_tasks_get_one_thread_programs_the_users_environment(no_thread_vars, tmp_path):
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        assert wait_on(threads_seen()) == ["1", "1", "1"]
        # (exit 0: the libraries' own variables are not set for the program; it sees
        # OMP_NUM_THREADS = the units its task holds, as before: invokers/environment.py)
        unset = " && ".join(f'test -z "${v}"' for v in VARS[1:])
        assert wait_on(exit_value(unset)) == 0


def test_a_thread_count_the_user_set_is_kept(no_thread_vars, tmp_path):
    no_thread_vars.setenv("OMP_NUM_THREADS", "3")
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        assert wait_on(threads_seen()) == ["3", "1", "1"]
        assert wait_on(exit_value('test -z "$MKL_NUM_THREADS"')) == 0
