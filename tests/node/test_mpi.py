"""@mpi with real MPI (Debian Open MPI's mpirun, mpi4py), gang slots, @multinode."""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

import taskflow
from taskflow import (FILE_OUT_STDOUT, TaskError, UsageError, constraint, mpi, multinode, task,
                      wait_on)

ALLREDUCE_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0, mine;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        char line[256];
        FILE *hf = fopen(getenv("TASKFLOW_HOSTFILE"), "r");
        printf("tag=%s size=%d sum=%d\n", argc > 1 ? argv[1] : "-", size, sum);
        while (hf && fgets(line, sizeof line, hf)) printf("hostfile: %s", line);
        if (hf) fclose(hf);
    }
    MPI_Finalize();
    return argc > 2 ? atoi(argv[2]) : 0;
}
"""

ALLREDUCE_F90 = """
program allreduce
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, mine, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  mine = 10 * (rank + 1)
  call MPI_Allreduce(mine, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(A,I0,A,I0)', 'fortran size=', nprocs, ' sum=', total
  call MPI_Finalize(ierr)
end program allreduce
"""

needs_mpi = pytest.mark.skipif(shutil.which("mpicc") is None or shutil.which("mpirun") is None,
                               reason="needs Open MPI (apt-get install openmpi-bin libopenmpi-dev)")


@pytest.fixture(scope="module")
def allreduce_bin(tmp_path_factory):
    if shutil.which("mpicc") is None:
        pytest.skip("mpicc not installed")
    d = tmp_path_factory.mktemp("mpiprog")
    (d / "allreduce.c").write_text(ALLREDUCE_C)
    subprocess.run(["mpicc", "-O1", "-o", str(d / "allreduce"), str(d / "allreduce.c")],
                   check=True)
    return str(d / "allreduce")


@pytest.fixture(scope="module")
def fortran_bin(tmp_path_factory):
    if shutil.which("mpif90") is None:
        pytest.skip("mpif90 not installed (apt-get install gfortran libopenmpi-dev)")
    d = tmp_path_factory.mktemp("mpif90")
    (d / "allreduce.f90").write_text(ALLREDUCE_F90)
    subprocess.run(["mpif90", "-o", str(d / "allreduce_f"), str(d / "allreduce.f90")],
                   check=True)
    return str(d / "allreduce_f")


@pytest.fixture
def rt4(tmp_path, monkeypatch):
    """Two local node agents with two slots each."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=4, nodes=2, run_dir=str(tmp_path / "runs")) as r:
        yield r


@mpi(runner="mpirun", binary="$TF_MPI_PROG", processes=3, args="{{tag}} {{code}}",
     fail_by_exit_value=False)
@task(returns=int, out=FILE_OUT_STDOUT)
def c_allreduce(tag, code, out):
    pass


@mpi(runner="mpirun", binary="$TF_MPI_PROG", processes="nprocs", args="{{tag}} {{code}}")
@task(returns=int, out=FILE_OUT_STDOUT, on_failure="FAIL")
def c_allreduce_n(tag, code, out, nprocs):
    pass


@mpi(runner="mpirun", processes=3)
@task(returns=dict)
def py_allreduce(scale):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    with open(os.environ["TASKFLOW_HOSTFILE"]) as f:
        hostfile = f.read()
    return {"size": comm.Get_size(), "sum": comm.allreduce((comm.Get_rank() + 1) * scale),
            "hostfile": hostfile, "nodes": os.environ["TASKFLOW_NODES"]}


@mpi(runner="mpirun", processes=2, processes_per_node=1)
@task(returns=str)
def py_spread():
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    got = comm.gather(comm.Get_rank())
    with open(os.environ["TASKFLOW_HOSTFILE"]) as f:
        return f"{got} {f.read().strip()} {os.environ['TASKFLOW_NODES']}"


@mpi(runner="mpirun", processes=2)
@task(returns=int, on_failure="FAIL")
def py_rank0_raises():
    from mpi4py import MPI
    if MPI.COMM_WORLD.Get_rank() == 0:
        raise ValueError("rank zero is unhappy")
    return 1


@mpi(runner="mpirun", processes=4)
@task(returns=int)
def hold_all(marker_dir):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 0:
        open(os.path.join(marker_dir, "started"), "w").close()
        time.sleep(1.5)
    comm.Barrier()
    if comm.Get_rank() == 0:
        open(os.path.join(marker_dir, "mpi_done"), "w").close()
    return comm.Get_size()


@task(returns=bool)
def saw_mpi_done(marker_dir):
    return os.path.exists(os.path.join(marker_dir, "mpi_done"))


@multinode(computing_nodes=2)
@task(returns=dict)
def two_nodes():
    return {k: os.environ[k] for k in os.environ
            if k.startswith(("TASKFLOW_NUM", "TASKFLOW_HOSTN", "COMPSS_", "TASKFLOW_NODES"))}


@needs_mpi
def test_c_program_ranks_talk_over_the_chosen_slots(rt4, allreduce_bin, monkeypatch):
    monkeypatch.setenv("TF_MPI_PROG", allreduce_bin)
    code = c_allreduce("a b", 0, "out.txt")          # 3 processes: 2 + 1 over both nodes
    assert wait_on(code) == 0
    taskflow.barrier()
    out = open("out.txt").read().splitlines()
    assert out[0] == "tag=a b size=3 sum=6"           # allreduce: 1 + 2 + 3
    assert out[1:] == ["hostfile: localhost slots=3"]


@needs_mpi
def test_fortran_program_one_rank_per_node(rt4, fortran_bin, monkeypatch, tmp_path):
    monkeypatch.setenv("TF_F90_PROG", fortran_bin)

    @mpi(runner="mpirun", binary="$TF_F90_PROG", processes=2, processes_per_node=1)
    @task(out=FILE_OUT_STDOUT)
    def f90(out):
        pass

    f90("f.txt")
    taskflow.barrier()
    assert open("f.txt").read().split("\n")[0] == "fortran size=2 sum=30"
    hostfiles = [p for p in os.listdir(rt4.run_dir + "/jobs") if p.endswith(".hosts")]
    assert [open(os.path.join(rt4.run_dir, "jobs", p)).read() for p in hostfiles] == \
        ["localhost slots=2\n"]


@needs_mpi
def test_mpi_exit_code_value_and_failure(rt4, allreduce_bin, monkeypatch):
    monkeypatch.setenv("TF_MPI_PROG", allreduce_bin)
    assert wait_on(c_allreduce("x", 5, "o1.txt")) == 5
    with pytest.raises(TaskError) as info:
        wait_on(c_allreduce_n("y", 7, "o2.txt", 2))
    msg = str(info.value)
    assert "mpirun" in msg and "--hostfile" in msg and "-n 2" in msg and "logs:" in msg


@needs_mpi
def test_mpi4py_function_on_every_rank_over_two_nodes(rt4):
    res = wait_on(py_allreduce(10))
    assert res["size"] == 3 and res["sum"] == 60
    assert res["hostfile"] == "localhost slots=3\n"
    shares = dict(p.split(":") for p in res["nodes"].split(","))
    assert set(shares) == {"local-0", "local-1"} and sorted(shares.values()) == ["1", "2"]


@needs_mpi
def test_processes_per_node_spreads_ranks(rt4):
    got = wait_on(py_spread())
    assert got.startswith("[0, 1] localhost slots=2 ")
    assert sorted(got.rsplit(" ", 1)[1].split(",")) == ["local-0:1", "local-1:1"]


@needs_mpi
def test_exception_on_rank_zero_reaches_wait_on(rt4):
    with pytest.raises(TaskError, match="rank zero is unhappy") as info:
        wait_on(py_rank0_raises())
    assert isinstance(info.value.__cause__, ValueError)


@needs_mpi
def test_mpi_task_holding_every_slot_blocks_other_tasks(rt4, tmp_path):
    markers = str(tmp_path / "markers")
    os.makedirs(markers)
    size = hold_all(markers)
    while not os.path.exists(os.path.join(markers, "started")) and not size.done():
        time.sleep(0.02)                                  # the MPI job now holds all 4 slots
    others = [saw_mpi_done(markers) for _ in range(6)]
    assert wait_on(size) == 4
    assert wait_on(others) == [True] * 6


def test_processes_beyond_the_cluster_is_a_call_time_error(rt4):
    @mpi(runner="mpirun", processes=5)
    @task()
    def too_big():
        pass

    with pytest.raises(UsageError) as info:
        too_big()
    msg = str(info.value)
    assert "too_big" in msg and "5 processes" in msg and "local-0: 2 slots" in msg

    @mpi(runner="mpirun", processes=3, processes_per_node=3)
    @task()
    def too_wide():
        pass

    with pytest.raises(UsageError, match="3 per node"):
        too_wide()

    @constraint(computing_units=2)
    @mpi(runner="mpirun", processes=3)
    @task()
    def too_fat():
        pass

    with pytest.raises(UsageError, match="of 2 computing units"):
        too_fat()


def test_unknown_runner_and_bad_splits(rt4, monkeypatch):
    with pytest.raises(UsageError, match="unknown runner 'mpiexecc'"):
        mpi(runner="mpiexecc")
    monkeypatch.setenv("TF_RUNNER", "qsub")

    @mpi(runner="$TF_RUNNER", processes=2)
    @task()
    def later():
        pass

    with pytest.raises(UsageError, match="unknown runner 'qsub'"):
        later()
    with pytest.raises(UsageError, match="mandatory"):
        mpi()

    @mpi(runner="mpirun", processes=3, processes_per_node=2)
    @task()
    def uneven():
        pass

    with pytest.raises(UsageError, match="not a multiple"):
        uneven()


def test_multinode_task_sees_its_nodes(rt4):
    env = wait_on(two_nodes())
    assert env["TASKFLOW_NUM_NODES"] == env["COMPSS_NUM_NODES"] == "2"
    assert env["TASKFLOW_HOSTNAMES"] == env["COMPSS_HOSTNAMES"] == "localhost,localhost"
    assert env["TASKFLOW_NUM_THREADS"] == env["COMPSS_NUM_THREADS"] == "1"
    assert sorted(env["TASKFLOW_NODES"].split(",")) == ["local-0:1", "local-1:1"]


def test_multinode_more_nodes_than_exist_is_a_call_time_error(rt4):
    @multinode(computing_nodes=3)
    @task()
    def three():
        pass

    with pytest.raises(UsageError, match="never give"):
        three()
