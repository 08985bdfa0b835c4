"""@constraint values decided at call time: $ENV, expressions of parameters, GPUs."""
from __future__ import annotations

import os

import pytest

import taskflow
from taskflow import FILE_OUT_STDOUT, UsageError, binary, constraint, mpi, task, wait_on
from taskflow.providers.local import LocalProvider

GPU = [{"processorType": "GPU", "computingUnits": 1}]
TWO_GPUS = [{"processorType": "GPU", "computingUnits": 2}]


@pytest.fixture
def gpu_rt(tmp_path, monkeypatch):
    """One local node that declares two GPUs."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(providers=[LocalProvider(2, gpus=2)],
                          run_dir=str(tmp_path / "runs")) as r:
        yield r


@constraint(computing_units="$TF_CUS")
@task(returns=int)
def env_units(x):
    return x


@constraint(computing_units="max(1, n // 2)", memory_size="0.001 * n")
@task(returns=int)
def expr_units(n):
    return n


@constraint(computing_units="2")
@task(returns=str)
def threads_seen():
    return os.environ.get("TASKFLOW_NUM_THREADS", "unset")


@constraint(processors=GPU)
@task(returns=str)
def one_gpu():
    return os.environ["CUDA_VISIBLE_DEVICES"]


@constraint(processors=TWO_GPUS)
@task(returns=str)
def two_gpus():
    return os.environ["CUDA_VISIBLE_DEVICES"]


@constraint(processors=GPU)
@binary(binary="sh", args="-c {{script}}")
@task(out=FILE_OUT_STDOUT)
def gpu_binary(script, out):
    pass


@mpi(runner="mpirun", processes="$TF_NP")
@task()
def np_from_env():
    pass


def test_env_value_is_read_when_the_task_is_called(rt, monkeypatch):
    monkeypatch.setenv("TF_CUS", "2")
    assert wait_on(env_units(5)) == 5
    monkeypatch.setenv("TF_CUS", "64")
    with pytest.raises(UsageError, match="computing_units=64"):
        env_units(5)
    monkeypatch.delenv("TF_CUS")
    with pytest.raises(UsageError, match=r"\$TF_CUS is not set"):
        env_units(5)
    monkeypatch.setenv("TF_CUS", "lots")
    with pytest.raises(UsageError, match="computing_units must be an int"):
        env_units(5)


def test_expression_of_parameters(rt):
    assert wait_on(expr_units(4)) == 4               # computing_units = 2: fits
    with pytest.raises(UsageError) as info:
        expr_units(10)                                # computing_units = 5 > 2 slots
    assert "expr_units" in str(info.value) and "computing_units=5" in str(info.value)
    with pytest.raises(UsageError, match="future"):
        expr_units(expr_units(2))


def test_numeric_string_constraint_is_accepted(rt):
    assert wait_on(threads_seen()) == "unset"        # a plain Python task: no invoker env


def test_bad_expressions_fail_at_declaration():
    with pytest.raises(UsageError, match="'m', which is not a parameter"):
        constraint(computing_units="m + 1")(task()(lambda n: n))
    with pytest.raises(UsageError, match="may not"):
        constraint(computing_units="n.__class__")(task()(lambda n: n))
    with pytest.raises(UsageError, match="may not"):
        constraint(computing_units="(lambda: 1)()")(task()(lambda n: n))
    with pytest.raises(UsageError, match="not a parameter"):
        mpi(runner="mpirun", processes="k")(task()(lambda n: n))


def test_mpi_processes_from_env(rt, monkeypatch):
    monkeypatch.setenv("TF_NP", "9")
    with pytest.raises(UsageError, match="9 processes"):
        np_from_env()


def test_gpu_task_on_nodes_without_gpus_fails_at_call_time(rt):
    with pytest.raises(UsageError) as info:
        one_gpu()
    assert "one_gpu" in str(info.value) and "GPU" in str(info.value)


def test_gpu_tasks_get_cuda_visible_devices(gpu_rt, tmp_path):
    assert wait_on(two_gpus()) == "0,1"
    assert wait_on(one_gpu()) in ("0", "1")
    gpu_binary('echo "$CUDA_VISIBLE_DEVICES"', "g.txt")
    taskflow.barrier()
    assert open("g.txt").read().strip() in ("0", "1")
    with pytest.raises(UsageError, match="never give"):
        constraint(processors=[{"processorType": "GPU", "computingUnits": 3}])(
            task()(lambda: None))()
