"""@container on a real rootful podman (tests/support/container_testbed.py): programs and Python
functions in fresh containers, files at the same paths, the caller's user, limits from
@constraint, exit codes, logs, time-outs, and the errors for a missing engine or image."""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

import taskflow
from taskflow import (FILE_IN, FILE_INOUT, FILE_OUT, FILE_OUT_STDOUT, TaskError, TaskTimeout,
                      UsageError, binary, constraint, task, wait_on, wait_on_file)
from taskflow.api.container import container
from taskflow.journal.reader import Journal
from taskflow.observe.attempts.rows import trace_rows

BB = "localhost/taskflow-bb:1"
BB_USER = "localhost/taskflow-bb-user:1"
PY = "localhost/taskflow-py:1"


@container(engine="podman", image=BB)
@binary(binary="sh", args="-c {{script}} sh {{src}} {{dst}}", fail_by_exit_value=False)
@task(returns=int, src=FILE_IN, dst=FILE_OUT)
def shell(script, src, dst):
    ...


@container(engine="PODMAN", image=BB)
@binary(binary="sh", args="-c {{script}}")
@task(returns=int)
def strict(script):
    ...


@container(engine="podman", image=BB_USER)
@binary(binary="sh", args="-c {{script}} sh {{dst}}")
@task(returns=int, dst=FILE_OUT)
def as_image_user(script, dst):
    ...


@container(engine="podman", image=BB)
@binary(binary="cat", args="/sys/fs/cgroup/memory/memory.limit_in_bytes "
                            "/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
@task(returns=int, out=FILE_OUT_STDOUT)
def limits(out):
    ...


@constraint(computing_units=2, memory_size=0.0625)
@container(engine="podman", image=BB)
@binary(binary="cat", args="/sys/fs/cgroup/memory/memory.limit_in_bytes "
                            "/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
@task(returns=int, out=FILE_OUT_STDOUT)
def limits_constrained(out):
    ...


@container(engine="podman", image=PY)
@task(returns=3, src=FILE_IN, dst=FILE_OUT, acc=FILE_INOUT)
def in_python(src, dst, acc, k):
    import sys
    print("inside", sys.executable)
    print("warning line", file=sys.stderr)
    with open(src) as f, open(dst, "w") as g:
        g.write(f.read().upper())
    with open(acc, "a") as a:
        a.write("more\n")
    return k * 2, sys.executable, os.path.isdir("/opt/taskflow/lib/taskflow")


@container(engine="podman", image=PY)
@task(returns=int)
def raises(x):
    raise ValueError(f"bad x {x}")


@container(engine="podman", image="localhost/taskflow-absent:1")
@binary(binary="true")
@task(returns=int)
def no_image():
    ...


@container(engine="apptainer", image="/nowhere/image.sif")
@binary(binary="true")
@task(returns=int)
def no_engine():
    ...


@container(engine="podman", image=BB)
@binary(binary="sleep", args="60")
@task(returns=int, time_out=2, on_failure="FAIL")
def sleeps():
    ...


@pytest.fixture
def crt(podman, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as r:
        yield r


def _journal(rt):
    return Journal(rt.run_dir)


def test_program_files_exit_code_and_logs(podman, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("one\ntwo\n")
    script = 'wc -l < "$1" > "$2"; echo out-line; echo err-line >&2; exit 3'
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as rt:
        code = wait_on(shell(script, "in.txt", "count.txt"))
        wait_on_file("count.txt")
        run_dir = rt.run_dir
    assert code == 3                                    # the exit code is the result
    assert (tmp_path / "count.txt").read_text().strip() == "2"
    assert (tmp_path / "count.txt").stat().st_uid == os.getuid()
    with Journal(run_dir) as j:
        (t,) = j.tasks()
        lines = [(ln["level"], ln["line"]) for ln in j.logs(task=t["id"])]
        assert t["exit_code"] == 3
        (row,) = trace_rows(j)
    assert ("STDOUT", "out-line") in lines and ("STDERR", "err-line") in lines
    # podman runs the container (conmon), not the executor: the peak is its client's, said
    assert row["peak_rss_measure"] == "engine-client" and row["peak_rss"] > 0


def test_nonzero_exit_fails_with_the_program_s_words(crt):
    with pytest.raises(TaskError) as ei:
        wait_on(strict("echo going wrong >&2; exit 5"))
    msg = str(ei.value)
    assert "exit code 5" in msg and "going wrong" in msg and "podman run" in msg


def test_outputs_belong_to_the_caller_not_the_image_user(podman, crt, tmp_path):
    # the image's default user is 4321; --user makes the task run as whoever runs taskflow
    assert wait_on(as_image_user('id -u > "$1"', "who.txt")) == 0
    wait_on_file("who.txt")
    assert (tmp_path / "who.txt").read_text().strip() == str(os.getuid())
    assert (tmp_path / "who.txt").stat().st_uid == os.getuid()
    r = podman.podman("run", "--rm", BB_USER, "id", "-u")
    assert r.stdout.strip() == "4321"                 # without --user it would be 4321


def test_inputs_are_mounted_read_only(crt, tmp_path):
    (tmp_path / "keep.txt").write_text("original\n")
    code = wait_on(shell('echo changed > "$1"; echo rc=$? > "$2"', "keep.txt", "rc.txt"))
    wait_on_file("rc.txt")
    assert code == 0
    assert (tmp_path / "rc.txt").read_text().strip() != "rc=0"
    assert (tmp_path / "keep.txt").read_text() == "original\n"


def test_constraint_turns_into_engine_limits(crt, tmp_path):
    wait_on(limits("plain.txt"), limits_constrained("tight.txt"))
    wait_on_file("plain.txt", "tight.txt")
    mem, quota = (tmp_path / "tight.txt").read_text().split()
    assert int(mem) == 64 * 2**20
    assert int(quota) == 2 * int(open("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read()
                                 if os.path.exists("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
                                 else 100000)
    pmem, pquota = (tmp_path / "plain.txt").read_text().split()
    assert int(pmem) > 2**40                          # no memory_size: no --memory
    assert int(pquota) == int(quota) // 2            # one unit held: --cpus 1


def test_python_task_runs_in_the_image(podman, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src.txt").write_text("hello\n")
    (tmp_path / "acc.txt").write_text("first\n")
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as rt:
        doubled, exe, mounted = wait_on(*in_python("src.txt", "dst.txt", "acc.txt", 21))
        with pytest.raises(TaskError) as ei:
            wait_on(raises(7))
        wait_on_file("dst.txt", "acc.txt")
        run_dir = rt.run_dir
    assert doubled == 42
    assert exe == "/usr/bin/python3"                  # the image's Python, not the node's
    assert mounted                                   # the image has no taskflow: ours, read-only
    assert (tmp_path / "dst.txt").read_text() == "HELLO\n"
    assert (tmp_path / "acc.txt").read_text() == "first\nmore\n"
    assert isinstance(ei.value.__cause__, ValueError) and "bad x 7" in str(ei.value)
    with Journal(run_dir) as j:
        levels = {(ln["level"], ln["line"]) for ln in j.logs()}
    assert ("STDOUT", "inside /usr/bin/python3") in levels
    assert ("STDERR", "warning line") in levels
    assert not any(p.endswith(".ctr") for p in os.listdir(os.path.join(run_dir, "jobs")))


def test_missing_image_and_engine_fail_before_running(crt):
    errors = []
    for fn in (no_image, no_image, no_engine):
        with pytest.raises(TaskError) as ei:
            wait_on(fn())
        errors.append(str(ei.value))
    node = os.uname().nodename
    assert "podman cannot run image localhost/taskflow-absent:1 on node " + node in errors[0]
    assert "podman pull localhost/taskflow-absent:1" in errors[0]
    assert errors[1].count("taskflow-absent") == errors[0].count("taskflow-absent")
    assert "apptainer cannot run image /nowhere/image.sif" in errors[2]
    assert "'apptainer' is not on PATH" in errors[2]


def test_time_out_stops_the_container(podman, crt):
    t0 = time.time()
    with pytest.raises(TaskTimeout):
        wait_on(sleeps())
    assert time.time() - t0 < 50          # not the 60 s of the program: the container stopped
    left = "x"
    for _ in range(100):                  # podman removes it once the program is gone
        left = podman.podman("ps", "-a", "-q", "--filter", "label=taskflow=1").stdout.strip()
        if not left:
            break
        time.sleep(0.2)
    assert left == ""


def test_declaration_errors_name_the_fix():
    with pytest.raises(UsageError, match="engine='lxc' is not one of PODMAN, DOCKER"):
        container(engine="lxc", image="x")
    with pytest.raises(UsageError, match="missing mandatory argument.*image"):
        container(engine="podman")
    with pytest.raises(UsageError, match="must be placed above @task"):
        container(engine="podman", image="x")(lambda: 1)
    with pytest.raises(UsageError, match="cannot be split"):
        container(engine="podman", image="x", options="--label 'open")
    from taskflow import mpi, multinode
    with pytest.raises(UsageError, match="multinode"):
        container(engine="podman", image="x")(multinode(computing_nodes=1)(task(lambda: 1)))
    with pytest.raises(UsageError, match="give @mpi a binary"):
        container(engine="podman", image="x")(mpi(runner="mpirun")(task(lambda: 1)))


@pytest.mark.skipif(shutil.which("mpirun") is None,
                    reason="mpirun is missing: bash testbed/install.sh openmpi-bin")
def test_mpi_ranks_each_in_a_container(crt, tmp_path):
    from taskflow import mpi

    @container(engine="podman", image=BB)
    @mpi(runner="mpirun", binary="sh", processes=2,
         args="-c {{script}}", flags="--oversubscribe")
    @task(returns=int, out=FILE_OUT_STDOUT)
    def ranks(script, out):
        ...

    assert wait_on(ranks('echo "rank $OMPI_COMM_WORLD_RANK in $(hostname)"', "ranks.txt")) == 0
    wait_on_file("ranks.txt")
    lines = sorted((tmp_path / "ranks.txt").read_text().split("\n"))[1:]
    assert [ln.split()[1] for ln in lines] == ["0", "1"]


@pytest.mark.skipif(shutil.which("docker") is None,
                    reason="the docker CLI is missing: apt-get install docker.io (or docker-ce-cli)")
def test_docker_cli_through_a_compatible_socket(podman, tmp_path, monkeypatch):
    sock = tmp_path / "podman.sock"
    svc = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.1)
        monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
        monkeypatch.chdir(tmp_path)

        @container(engine="docker", image=BB)
        @binary(binary="sh", args="-c {{script}}", fail_by_exit_value=False)
        @task(returns=int)
        def dsh(script):
            ...

        with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")):
            assert wait_on(dsh("echo via docker; exit 4")) == 4   # not the 0 of `run --rm`
        left = podman.podman("ps", "-a", "-q", "--filter", "label=taskflow=1").stdout.strip()
        assert left == ""                                      # removed after it ended
    finally:
        svc.terminate()
        svc.wait(10)


# -- the engine's command, without an engine ----------------------------------------------
def _argv(engine, monkeypatch, euid=0, **c):
    from taskflow.agent.executor.invokers import container as C
    from taskflow.wire.invocation import Container
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    cfg = Container(engine, "img", ("--network=none",), {})._replace(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in c.items()})
    return C.base_argv(engine, f"/usr/bin/{engine}", cfg, "n1", [("/data/in", True), ("/wd", False)],
                       "/wd", {"A": "1 2"}, True)


def test_engine_commands_are_argv_lists(monkeypatch):
    p = _argv("podman", monkeypatch, cpus=2, memory_gb=1.5, gpus=["1", "3"])
    assert p[:2] == ["/usr/bin/podman", "run"] and "--rm" in p and "--init" in p
    assert p[p.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"
    assert p[p.index("--cpus") + 1] == "2" and p[p.index("--memory") + 1] == "1536m"
    assert [p[i + 1] for i, a in enumerate(p) if a == "--device"] == ["nvidia.com/gpu=1",
                                                                       "nvidia.com/gpu=3"]
    assert "/data/in:/data/in:ro" in p and "/wd:/wd" in p and "A=1 2" in p and "-i" in p
    assert p[-1] == "--network=none" and any(a.startswith("nofile=") for a in p)
    assert "--userns=keep-id" in _argv("podman", monkeypatch, euid=1000)   # rootless podman
    d = _argv("docker", monkeypatch, gpus=["0", "2"])
    assert "--rm" not in d and d[d.index("--gpus") + 1] == '"device=0,2"'
    a = _argv("apptainer", monkeypatch, gpus=["0"])
    assert a[:3] == ["/usr/bin/apptainer", "exec", "--cleanenv"] and "--nv" in a
    assert "/data/in:/data/in:ro" in a and "--user" not in a and "--cpus" not in a
    with pytest.raises(ValueError, match="rename it"):
        from taskflow.agent.executor.invokers import container as C
        from taskflow.wire.invocation import Container
        C.base_argv("podman", "podman", Container("podman", "i", (), {}), "n", [("/a:b", True)],
                    "/", {}, False)


def test_gpu_numbering_inside(monkeypatch):
    from taskflow.agent.executor.invokers.container import gpu_env
    from taskflow.wire.invocation import Invocation, Placement
    opts = Invocation(None, placement=Placement((), (), (), None, gpus=(2, 5)))   # GPUs 2 and 5
    assert gpu_env(opts, "podman") == (["2", "5"], {"CUDA_VISIBLE_DEVICES": "0,1",
                                                    "TASKFLOW_GPUS": "2,5"})
    assert gpu_env(opts, "apptainer")[1]["CUDA_VISIBLE_DEVICES"] == "2,5"   # --nv: all GPUs
    assert gpu_env(Invocation(None), "docker") == ([], {})


def test_mounts_inputs_read_only_outputs_by_their_directory(tmp_path):
    from taskflow.agent.executor.invokers.container import mounts
    (tmp_path / "in.txt").write_text("x")
    (tmp_path / "d").mkdir()
    files = {"a": ("file", "IN", None), "b": ("file", "OUT", None),
             "c": ("directory", "INOUT", None), "many": ("file", "IN", None)}
    values = {"a": str(tmp_path / "in.txt"), "b": str(tmp_path / "out" / "v1" / "b.txt"),
              "c": str(tmp_path / "d"), "many": [str(tmp_path / "in.txt")]}
    got = dict(mounts(files, values, "/wd"))
    assert got == {str(tmp_path / "in.txt"): True, str(tmp_path / "out" / "v1"): False,
                   str(tmp_path / "d"): False, "/wd": False}
