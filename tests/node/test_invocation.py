"""A program task's call resolved into typed options (runtime/calltime.py, wire/invocation.py)
and what the node does with them (agent/executor/invokers)."""
from __future__ import annotations

import pickle

import pytest

import taskflow
from taskflow import FILE_OUT_STDOUT, binary, constraint, mpi, task, wait_on
from taskflow.agent.executor import invokers
from taskflow.graph.keys import Keys
from taskflow.wire.invocation import (CommandLine, Gang, Invocation, Limits, Mpi, Options,
                                      Placement, Program)


@pytest.fixture
def rt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as r:
        yield r


def prepare(rt, spec, args, kwargs):
    """One call's (computing units, memory, options), as the runtime resolves it."""
    return rt.calltimes.prepare(rt.nodes, rt.run_dir, rt.run_id, spec, args, kwargs)


@binary(binary="printf", args="%s\\n {{a}}")
@task(out=FILE_OUT_STDOUT)
def say(a, out):
    pass


@binary(binary="printf", args="%s\\n $GREETING {{a}}")
@task(out=FILE_OUT_STDOUT)
def greet(a, out):
    pass


@constraint(computing_units=2)
@mpi(runner="mpirun", binary="true", processes="$NRANKS")
@task()
def ranks():
    pass


@task(time_out=5)
def timed(x):
    return x


@task()
def plain(x):
    return x


def test_a_static_program_shares_one_record_and_the_node_reads_it(rt, tmp_path):
    a = prepare(rt, say.spec, ("x", str(tmp_path / "o1")), {})
    b = prepare(rt, say.spec, ("y", str(tmp_path / "o2")), {})
    assert a[2] is b[2]                     # one Options for every call (pickled once a frame)
    opts = a[2]
    assert isinstance(opts, Options) and opts.limits is None
    inv = opts.invocation
    assert isinstance(inv.action, Program) and inv.action.binary == "printf"
    assert inv.action.line.args == "%s\\n {{a}}" and inv.action.line.order == ("a", "out")
    assert inv.action.line.params["out"].stream == "stdout"
    assert inv.log_dir.endswith("jobs") and inv.threads == 1 and inv.gang is None
    assert pickle.loads(pickle.dumps(opts)) == opts
    assert wait_on(say("hello world", str(tmp_path / "o3"))) == 0
    taskflow.barrier()
    assert (tmp_path / "o3").read_text() == "hello world\n"    # one argument, not split


def test_env_in_a_declaration_is_expanded_per_call(rt, tmp_path, monkeypatch):
    monkeypatch.setenv("GREETING", "hi")
    first = prepare(rt, greet.spec, ("a", str(tmp_path / "o")), {})[2]
    monkeypatch.setenv("GREETING", "ho")
    second = prepare(rt, greet.spec, ("a", str(tmp_path / "o")), {})[2]
    assert first.invocation.action.line.args == "%s\\n hi {{a}}"
    assert second.invocation.action.line.args == "%s\\n ho {{a}}"
    monkeypatch.delenv("GREETING")
    with pytest.raises(taskflow.UsageError, match=r"\$GREETING is not set"):
        greet("a", str(tmp_path / "o"))


def test_a_gang_task_asks_for_processes_and_holds_one_unit_until_placed(rt, monkeypatch):
    monkeypatch.setenv("NRANKS", "1")
    cus, _mem, opts = prepare(rt, ranks.spec, (), {})
    assert cus == 1                           # the scheduler decides the real share
    assert opts.invocation.gang == Gang(procs=1, ppn=None, unit=2, gpus=0)
    assert isinstance(opts.invocation.action, Mpi) and opts.invocation.action.processes == 1
    monkeypatch.setenv("NRANKS", "2")         # 2 x 2 units: more than the 2 slots there are
    with pytest.raises(taskflow.UsageError, match="can never give that"):
        prepare(rt, ranks.spec, (), {})


def test_plain_calls_carry_nothing_and_limits_travel_alone():
    assert plain.spec.options is None and not plain.spec.call_time
    assert timed.spec.options == Options(Limits(time_out=5.0))
    assert not timed.spec.call_time


def test_a_key_does_not_depend_on_where_the_run_put_things(tmp_path):
    line = CommandLine(None, {}, ("x",))
    inv = Invocation(Program("/bin/true", line, None, True), 1, str(tmp_path / "jobs"))
    here = Options(None, inv)
    there = Options(None, inv._replace(log_dir="/elsewhere/jobs", placement=Placement(
        (("h1", 2),), (("n1", 2),), ("h1",), None)))
    other = Options(None, inv._replace(threads=4))
    keys = Keys()
    assert keys.options(here) == keys.options(there)
    assert keys.options(here) != keys.options(other)
    assert keys.options(here) == keys.options(here)         # (the second from the cache)


def test_a_program_rebuilt_during_a_run_changes_its_calls_keys(tmp_path, monkeypatch):
    """The program file's size and time are part of a call's key; they are looked at again
    once PROGRAM_RECHECK seconds passed (not a stat per call)."""
    from taskflow.graph import keys as K
    prog = tmp_path / "prog.sh"
    prog.write_text("#!/bin/sh\necho 1\n")
    opts = Options(None, Invocation(Program(str(prog), CommandLine(None, {}, ()), None, True),
                                    1, None))
    keys = Keys()
    first = keys.options(opts)
    prog.write_text("#!/bin/sh\necho 22\n")           # another size
    monkeypatch.setattr(K, "PROGRAM_RECHECK", 0.0)
    assert keys.options(opts) != first


def test_the_node_names_the_task_for_an_action_it_does_not_know():
    with pytest.raises(TypeError, match="task 7: no invoker for tuple"):
        invokers.run(Invocation(("not", "an", "action")), plain.__wrapped__, [1], {},  # type: ignore[arg-type]
                     [], 7)


def test_the_environment_describes_the_nodes_given():
    inv = Invocation(None, 3, placement=Placement((("h1", 1), ("h2", 1)), (("a", 1), ("b", 1)),
                                                  ("h1", "h2"), None, gpus=(0, 2)))
    env = invokers.node_env(inv)
    assert env["TASKFLOW_NUM_NODES"] == "2" and env["TASKFLOW_HOSTNAMES"] == "h1,h2"
    assert env["TASKFLOW_NODES"] == "a:1,b:1" and env["COMPSS_NUM_THREADS"] == "3"
    assert env["CUDA_VISIBLE_DEVICES"] == "0,2"
    assert invokers.node_env(Invocation(None))["TASKFLOW_HOSTNAMES"] == "localhost"
