"""@binary and @ompss: argv building, streams, exit codes, $ENV, bad input."""
from __future__ import annotations

import os
import stat

import pytest

import taskflow
from taskflow import (FILE_IN, FILE_IN_STDIN, FILE_INOUT_STDERR, FILE_INOUT_STDOUT, FILE_OUT,
                      FILE_OUT_STDERR, FILE_OUT_STDOUT, STDIN, Prefix, StdIOStream, TaskError,
                      Type, UsageError, binary, constraint, ompss, task, wait_on)
from taskflow.agent.executor.invokers import process


@pytest.fixture
def rt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as r:
        yield r


# printf '%s\n' prints one argv entry per line: the argv the program really got.
@binary(binary="printf", args="%s\\n {{a}} -n {{n}} --tag={{b}}")
@task(out=FILE_OUT_STDOUT)
def show_template(a, n, b, out):
    pass


@binary(binary="printf")
@task(out=FILE_OUT_STDOUT, flag={Type: taskflow.IN, Prefix: "--level="})
def show_appended(fmt, x, flag, out, maybe=None):
    pass


@binary(binary="cat", args="{{f}}")
@task(f=FILE_IN, out=FILE_OUT_STDOUT)
def cat_file(f, out):
    pass


@binary(binary="cat")
@task(src=FILE_IN_STDIN, out=FILE_OUT_STDOUT)
def cat_stdin(src, out):
    pass


@binary(binary="cat")
@task(src={Type: FILE_IN, StdIOStream: STDIN}, out=FILE_INOUT_STDOUT)
def append_stdin(src, out):
    pass


@binary(binary="sh", args="-c {{script}}")
@task(err=FILE_OUT_STDERR)
def to_stderr(script, err):
    pass


@binary(binary="sh", args="-c {{script}}")
@task(err=FILE_INOUT_STDERR)
def append_stderr(script, err):
    pass


@binary(binary="sh", args="-c {{script}}", fail_by_exit_value=False)
@task(returns=int)
def exit_value(script):
    pass


@binary(binary="sh", args="-c {{script}}")
@task(returns=int, on_failure="FAIL")
def exit_fails(script):
    pass


@binary(binary="sh", args="-c {{script}} {{path}}")
@task(path=FILE_OUT)
def write_via_arg(script, path):
    pass


@constraint(computing_units=2)
@ompss(binary="sh", args="-c {{script}}")
@task(out=FILE_OUT_STDOUT)
def ompss_env(script, out):
    pass


def lines(path):
    with open(path) as f:
        return f.read().split("\n")[:-1]


def test_template_values_stay_one_argv_entry_and_no_shell(rt, tmp_path):
    home_probe = tmp_path / "gone"
    home_probe.mkdir()
    show_template("big world", 3, f"; rm -rf {home_probe}", "t.txt")
    taskflow.barrier()
    assert lines("t.txt") == ["big world", "-n", "3", f"--tag=; rm -rf {home_probe}"]
    assert home_probe.is_dir()


def test_parameters_appended_in_order_with_prefix_and_none_skipped(rt):
    show_appended("%s|", 7, "debug", "a.txt")
    taskflow.barrier()
    assert open("a.txt").read() == "7|--level=debug|"


def test_template_with_a_file_parameter_and_stdout_truncates(rt, tmp_path):
    (tmp_path / "in.txt").write_text("alpha\nbeta\n")
    (tmp_path / "out.txt").write_text("old content that must go\n" * 10)
    cat_file("in.txt", "out.txt")
    taskflow.barrier()
    assert open("out.txt").read() == "alpha\nbeta\n"


def test_stdin_and_inout_stdout_append_and_take_part_in_the_graph(rt, tmp_path):
    (tmp_path / "src.txt").write_text("one\n")
    (tmp_path / "log.txt").write_text("start\n")
    cat_stdin("src.txt", "mid.txt")           # writes mid.txt ...
    append_stdin("mid.txt", "log.txt")        # ... which this one reads: a dependency
    append_stdin("src.txt", "log.txt")
    taskflow.barrier()
    assert open("log.txt").read() == "start\none\none\n"


def test_stderr_streams_out_truncates_inout_appends(rt, tmp_path):
    (tmp_path / "e1.txt").write_text("stale\n")
    (tmp_path / "e2.txt").write_text("first\n")
    to_stderr("echo to-err >&2; echo to-out", "e1.txt")
    append_stderr("echo more >&2", "e2.txt")
    taskflow.barrier()
    assert open("e1.txt").read() == "to-err\n"
    assert open("e2.txt").read() == "first\nmore\n"


def test_stream_parameter_that_is_not_a_file_is_a_call_time_error(rt):
    with pytest.raises(UsageError) as info:
        cat_stdin(42, "x.txt")
    assert "cat_stdin" in str(info.value) and "'src'" in str(info.value)
    with pytest.raises(UsageError, match="StdIOStream parameter must be a file"):
        task(p={StdIOStream: STDIN})(lambda p: None)


def test_exit_code_is_the_value_when_not_failing(rt):
    assert wait_on(exit_value("exit 3")) == 3
    assert wait_on(exit_value("true")) == 0


def test_nonzero_exit_fails_by_default_with_command_code_stderr_and_logs(rt):
    assert wait_on(exit_fails("echo fine")) == 0
    fut = exit_fails("echo first >&2; echo 'the real reason' >&2; exit 4")
    with pytest.raises(TaskError) as info:
        wait_on(fut)
    msg = str(info.value)
    assert "exit code 4" in msg and "sh -c" in msg and "the real reason" in msg
    assert isinstance(info.value.__cause__, taskflow.ProgramFailed)
    logs = info.value.__cause__.log_paths
    assert logs and all(os.path.exists(p) for p in logs)
    assert any(p.endswith(".err") and "the real reason" in open(p).read() for p in logs)
    assert all(p in msg for p in logs)


def test_output_file_named_by_template(rt):
    write_via_arg('echo "$HOME" > "$0"', "made.txt")   # sh's own $0/$HOME, not ours
    taskflow.barrier()
    assert open("made.txt").read() == os.environ["HOME"] + "\n"


def test_env_expansion_of_binary_and_working_dir_at_call_time(rt, tmp_path, monkeypatch):
    tool = tmp_path / "bin"
    tool.mkdir()
    script = tool / "where.sh"
    script.write_text("#!/bin/sh\npwd\necho \"$1\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("TF_TOOLS", str(tool))
    monkeypatch.setenv("TF_WD", str(tmp_path / "work"))

    @binary(binary="$TF_TOOLS/where.sh", working_dir="${TF_WD}/sub")
    @task(out=FILE_OUT_STDOUT)
    def where(arg, out):
        pass

    where("$HOME-is-not-expanded-in-values", str(tmp_path / "w.txt"))
    taskflow.barrier()
    assert lines(tmp_path / "w.txt") == [str(tmp_path / "work" / "sub"),
                                         "$HOME-is-not-expanded-in-values"]
    monkeypatch.delenv("TF_TOOLS")
    with pytest.raises(UsageError, match=r"\$TF_TOOLS is not set"):
        where("x", str(tmp_path / "w2.txt"))


def test_missing_or_not_executable_binary_is_a_call_time_error(rt, tmp_path):
    @binary(binary="no-such-program-taskflow")
    @task()
    def ghost():
        pass

    with pytest.raises(UsageError, match="'no-such-program-taskflow' was not found on PATH"):
        ghost()
    plain = tmp_path / "plain.sh"
    plain.write_text("echo hi\n")
    plain.chmod(stat.S_IRUSR | stat.S_IWUSR)

    @binary(binary=str(plain))
    @task()
    def not_exec():
        pass

    with pytest.raises(UsageError) as info:
        not_exec()
    assert str(plain) in str(info.value) and "not executable" in str(info.value)

    @binary(binary="./missing.sh", working_dir=str(tmp_path / "wd"))
    @task()
    def relative():
        pass

    with pytest.raises(UsageError, match=str(tmp_path / "wd" / "missing.sh")):
        relative()


def test_declaration_errors():
    with pytest.raises(UsageError, match="not a parameter"):
        binary(binary="echo", args="{{nope}}")(task()(lambda x: None))
    with pytest.raises(UsageError, match="mandatory"):
        binary()
    with pytest.raises(UsageError, match="above @task"):
        binary(binary="echo")(lambda: None)
    with pytest.raises(UsageError, match="fail_by_exit_value"):
        binary(binary="echo", fail_by_exit_value="yes")(task()(lambda: None))
    with pytest.raises(UsageError, match="unknown argument"):
        binary(binary="echo", workingDir="/tmp")


def test_ompss_sets_threads_from_computing_units(rt):
    ompss_env('echo "$OMP_NUM_THREADS|$NX_ARGS|$TASKFLOW_NUM_THREADS|$COMPSS_NUM_THREADS"',
              "o.txt")
    taskflow.barrier()
    assert lines("o.txt") == ["2|--smp-workers=2|2|2"]


def test_program_output_is_captured_line_by_line_raw_for_non_text(tmp_path):
    logs: list = []
    code = process.run(["sh", "-c", "echo out1; echo err1 >&2; printf 'bin\\377\\n'; "
                        "printf 'no-newline'"], str(tmp_path), dict(os.environ), {}, logs,
                       str(tmp_path / "job1"), False)
    assert code == 0
    got = [(lvl, line) for _, lvl, line in logs]
    assert ("STDOUT", "out1") in got and ("STDERR", "err1") in got
    assert ("RAW", "bin\\xff") in got and ("STDOUT", "no-newline") in got
    assert all(isinstance(t, float) for t, _, _ in logs)
    assert (tmp_path / "job1.out").read_bytes() == b"out1\nbin\xff\nno-newline"
    assert (tmp_path / "job1.err").read_text() == "err1\n"


def test_program_output_reaches_the_master(rt, capfd):
    assert wait_on(exit_value("echo hello-from-the-binary")) == 0
    taskflow.barrier()
    assert "hello-from-the-binary" in capfd.readouterr().out
