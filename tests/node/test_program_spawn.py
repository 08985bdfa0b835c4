"""How a program task is started and ended (agent/executor/invokers/spawn.py, process.py).

Programs start with posix_spawn (no Python in the child), so what a Python
child used to do must still hold: a program does not outlive a killed
executor, inherits no descriptor a Python task made inheritable, gets SIGPIPE
back to its default, finds its program on the task's PATH; job log files
appear when the program writes (both for a failure); programs chained on a
node pass exit codes along.
"""
from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

import taskflow
from taskflow import FILE_OUT_STDOUT, TaskError, TaskTimeout, binary, task, wait_on
from taskflow.agent.executor.invokers import process, spawn


@pytest.fixture
def rt1(tmp_path, monkeypatch):
    """One executor: a Python task and the program after it share it."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")) as r:
        yield r


def _procs_with(argv_tail: list[str]) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if cmd[-len(argv_tail):] == argv_tail:
            out.append(p)
    return out


def _gone(argv_tail: list[str], within: float = 10.0) -> bool:
    deadline = time.time() + within
    while time.time() < deadline:
        alive = [p for p in _procs_with(argv_tail)
                 if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return True
        time.sleep(0.05)
    return False


@binary(binary="sleep")
@task(time_out=1, on_failure="FAIL")
def nap_limited(seconds):
    pass


@binary(binary="sleep")
@task(on_failure="FAIL")
def nap(seconds):
    pass


def test_a_timed_out_program_is_killed_with_its_executor(rt):
    fut = nap_limited("37.25")        # an argument no other process here has
    with pytest.raises(TaskTimeout, match="time_out=1"):
        wait_on(fut)
    assert _gone(["37.25"]), "the program outlived the executor killed for its time_out"


def test_a_program_does_not_outlive_an_executor_that_dies(tmp_path, monkeypatch):
    """crash_limit=0: the worker's death fails the task at once (else it runs again)."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), crash_limit=0):
        _executor_dies_under_its_program()


def _executor_dies_under_its_program() -> None:
    fut = nap("41.75")
    deadline = time.time() + 20
    while not _procs_with(["41.75"]):
        assert time.time() < deadline, "the program never started"
        time.sleep(0.02)
    (prog,) = _procs_with(["41.75"])
    os.kill(prog.ppid(), signal.SIGKILL)      # its executor dies (a crash, the OOM killer)
    with pytest.raises(TaskError, match="WorkerDied|died"):
        wait_on(fut)
    assert _gone(["41.75"]), "the program outlived its executor"
    assert wait_on(nap("0")) == 0             # the slot works again


def test_the_slot_names_the_running_program_and_is_cleared_before_the_reap(tmp_path):
    slot = spawn.PidSlot()
    spawn.attach(slot)
    try:
        null = os.open(os.devnull, os.O_RDWR)
        pid = spawn.start("/bin/sh", ["/bin/sh", "-c", "sleep 0.3"], os.getcwd(), dict(os.environ),
                          null, null, null)
        assert slot.get() == pid
        assert spawn.reap(pid) == 0
        assert slot.get() == 0
        assert slot.terminate() == 0          # nothing to signal now
        # a program in another working directory goes through subprocess, same slot
        pid = spawn.start("/bin/sh", ["/bin/sh", "-c", "exit 3"], str(tmp_path),
                          dict(os.environ), null, null, null)
        assert slot.get() == pid
        assert spawn.reap(pid) == 3 and slot.get() == 0
        os.close(null)
    finally:
        spawn.attach(None)
        slot.close()


LEAK_FD = 77


@task(returns=int)
def leak_a_descriptor(path):
    fd = os.open(path, os.O_RDONLY)
    os.dup2(fd, LEAK_FD, inheritable=True)    # what close_fds=True used to close
    os.close(fd)
    return LEAK_FD


@binary(binary="ls", args="-1 /proc/self/fd")
@task(out=FILE_OUT_STDOUT)
def list_fds(out):
    pass


@task(returns=int)
def close_descriptor(fd):
    os.close(fd)
    return fd


def test_a_descriptor_a_python_task_made_inheritable_does_not_reach_programs(rt1, tmp_path):
    assert wait_on(leak_a_descriptor(__file__)) == LEAK_FD
    list_fds("fds.txt")
    taskflow.barrier()
    fds = set(open("fds.txt").read().split())
    assert "0" in fds and "1" in fds and "2" in fds
    assert str(LEAK_FD) not in fds, fds
    wait_on(close_descriptor(LEAK_FD))


@binary(binary="grep", args="SigIgn /proc/self/status")
@task(out=FILE_OUT_STDOUT)
def ignored_signals(out):
    pass


def test_programs_get_sigpipe_back_to_its_default(rt1):
    ignored_signals("sig.txt")
    taskflow.barrier()
    mask = int(open("sig.txt").read().split()[1], 16)
    assert not mask & (1 << (signal.SIGPIPE - 1)), hex(mask)    # Python ignores it


@binary(binary="sh", args="-c {{script}}", fail_by_exit_value=False)
@task(returns=int)
def shell(script):
    pass


@binary(binary="sh", args="-c {{script}} {{prev}}", fail_by_exit_value=False)
@task(returns=int)
def next_code(script, prev):
    pass


def test_job_files_appear_when_the_program_writes_and_for_failures(rt):
    quiet, loud, err_only, bad = shell("true"), shell("echo out"), shell("echo e >&2"), \
        shell("exit 5")
    assert wait_on([quiet, loud, err_only, bad]) == [0, 0, 0, 5]
    jobs = os.path.join(rt.run_dir, "jobs")
    made = {name: open(os.path.join(jobs, name)).read() for name in os.listdir(jobs)}
    # the quiet one made none; the others one per stream written; the failure both
    assert sorted(made.values()) == ["", "", "e\n", "out\n"], made
    assert sorted(n.rsplit(".", 1)[1] for n in made) == ["err", "err", "out", "out"]
    empty = sorted(n for n, text in made.items() if not text)
    assert empty[0].rsplit(".", 1)[0] == empty[1].rsplit(".", 1)[0]     # one task's pair


def test_exit_codes_flow_along_a_chain_of_programs(rt):
    f = next_code('exit $(( $0 + 1 ))', 0)
    for _ in range(29):
        f = next_code('exit $(( $0 + 1 ))', f)
    assert wait_on(f) == 30


@binary(binary="sh", args="-c {{script}} {{prev}}")
@task(returns=int, on_failure="FAIL")
def strict_next(script, prev):
    pass


def test_a_failing_program_in_a_chain_cancels_the_rest_naming_it(rt):
    ok = strict_next("exit 0", 0)
    bad = strict_next('[ "$0" = 0 ] && exit 9', ok)
    after = strict_next("exit 0", bad)
    with pytest.raises(TaskError) as info:
        wait_on(after)
    assert "strict_next" in str(info.value) and "exit code 9" in str(info.value)
    assert wait_on(ok) == 0


def test_a_program_name_is_looked_up_on_the_tasks_path(tmp_path):
    tool = tmp_path / "bin"
    tool.mkdir()
    script = tool / "only-here.sh"
    script.write_text("#!/bin/sh\necho found\n")
    script.chmod(0o755)
    env = dict(os.environ, PATH=f"{tool}:{os.environ['PATH']}")
    logs: list = []
    assert process.run(["only-here.sh"], str(tmp_path), env, {}, logs, None, True) == 0
    assert [line for _, _, line in logs] == ["found"]
    with pytest.raises(taskflow.ProgramFailed, match="could not start"):
        process.run(["only-here.sh"], str(tmp_path), dict(os.environ), {}, [], None, True)


_KEPT: list[int] = []       # a descriptor the task below keeps open in its executor


@task(returns=int)
def take_dev_null_number():
    """Close the executor's /dev/null descriptors and open a file at the lowest number."""
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == os.devnull and int(name) > 2:
                os.close(int(name))
        except OSError:
            pass
    fd = os.open("not-empty.txt", os.O_RDONLY)
    _KEPT.append(fd)
    return fd


@task(returns=int)
def let_go():
    while _KEPT:
        os.close(_KEPT.pop())
    return 0


@binary(binary="wc", args="-c")
@task(out=FILE_OUT_STDOUT)
def count_stdin(out):
    pass


def test_programs_read_an_empty_stdin_after_a_python_task_closed_the_executors(rt1):
    """The executor keeps a /dev/null descriptor for programs' stdin: a Python task that
    closes it and opens another file at its number does not become the next program's
    input."""
    open("not-empty.txt", "w").write("some bytes\n")
    count_stdin("before.txt")
    taskflow.barrier()
    wait_on(take_dev_null_number())
    count_stdin("after.txt")
    taskflow.barrier()
    wait_on(let_go())
    assert open("before.txt").read().split() == ["0"]
    assert open("after.txt").read().split() == ["0"]


def _f0(): pass
def _f2(a, b=2): pass
def _f4(a, b, c=3, d=None): pass
def _fv(a, *rest): pass
def _fk(a, *, k=1): pass
def _fkw(a, **kw): pass


@pytest.mark.parametrize("func", [_f0, _f2, _f4, _fv, _fk, _fkw])
def test_binding_without_inspect_gives_what_the_signature_gives(func):
    """command.bind's quick way for plain parameters: the same names, order and defaults
    as Signature.bind, and the same answer when the call does not fit."""
    import inspect

    from taskflow.agent.executor.invokers import command

    def by_signature(args, kw):
        try:
            b = inspect.signature(func).bind(*args, **kw)
        except TypeError:
            return dict(zip(("a", "b"), args)) | kw
        b.apply_defaults()
        return dict(b.arguments)

    for args in [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4, 5)]:
        for kw in [{}, {"a": 9}, {"b": 8}, {"c": 7, "d": 6}, {"zz": 1}, {"k": 3}]:
            got = command.bind(func, list(args), dict(kw), ("a", "b"))
            want = by_signature(args, kw)
            assert list(got.items()) == list(want.items()), (args, kw)
