"""Debugging surfaces (docs/guide/debugging.md): inline runs, ``taskflow rerun``, ``--plan``.

Real processes throughout: the CLI as a user runs it, pdb driven through a pty.
"""
from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

from support.paths import ROOT

TF = [sys.executable, "-m", "taskflow.cli"]
QUICK = os.path.join(ROOT, "examples", "quickstart", "pipeline.py")
NMMB = os.path.join(ROOT, "examples", "nmmb_monarch")


def _env(**extra: str) -> dict:
    env = dict(os.environ, TASKFLOW_WORKERS="2")
    env.update(extra)
    return env


def _run(args: list[str], cwd: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=_env(**extra), capture_output=True, text=True,
                          timeout=120)


def test_inline_quickstart_same_outputs_in_one_process(tmp_path):
    normal, inline = tmp_path / "normal", tmp_path / "inline"
    normal.mkdir()
    inline.mkdir()
    a = _run(TF + ["run", "--no-progress", QUICK, "20"], str(normal))
    b = _run(TF + ["run", "--inline", QUICK, "20"], str(inline))
    assert a.returncode == b.returncode == 0, (a.stderr, b.stderr)
    assert a.stdout == b.stdout
    report = (normal / "quickstart-report.txt").read_bytes()
    assert (inline / "quickstart-report.txt").read_bytes() == report
    # a plan of the same run with 30: what --resume would reuse (nothing written)
    p = _run(TF + ["run", "--plan", "--resume", QUICK, "30"], str(normal))
    assert p.returncode == 0, p.stderr
    assert "22 of 35 call(s) would be reused, 13 would run" in p.stdout
    assert "would reuse 20 of 30 calls of square; 10 would run: 10 no earlier result" \
        in p.stdout, p.stdout
    assert "square: 30 call(s) [python, 20 reused, 10 run to read their values]" in p.stdout
    assert (normal / "quickstart-report.txt").read_bytes() == report


def test_inline_readme_example_same_output(tmp_path):
    text = open(os.path.join(ROOT, "README.md")).read()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "readme.py").write_text(code)
    # (a normal run prints what the README says: tests/surfaces/test_docs.py runs it)
    b = _run([sys.executable, "readme.py"], str(tmp_path), TASKFLOW_INLINE="1")
    assert b.returncode == 0, b.stderr
    assert b.stdout == "328350 7\n"
    assert (tmp_path / "sum.txt").read_bytes() == b"328350\n"


SCRIPT = '''
import os
from taskflow import task, wait_on, wait_on_file, FILE_OUT, INOUT, binary

@task(returns=1)
def where(x):
    return os.getpid(), x

@task(out=FILE_OUT)
def write(out, v):
    with open(out, "w") as f:
        f.write(f"value {v}\\n")

@task(lst=INOUT)
def add(lst, v):
    lst.append(v)

@binary(binary="cat", fail_by_exit_value=True)
@task(f=FILE_OUT)
def copy(src, f):
    pass

pid, x = wait_on(where(41))
write("out.txt", x + 1)
items = []
add(items, 5)
wait_on_file("out.txt")
print(pid == os.getpid(), x, wait_on(items), open("out.txt").read().strip())
from concurrent.futures import ThreadPoolExecutor   # calls from threads: each its own
with ThreadPoolExecutor(3) as ex:
    print(list(ex.map(lambda i: wait_on(where(where(i)))[1][1], range(6))))
'''


def test_inline_runs_every_task_in_the_calling_process(tmp_path):
    (tmp_path / "wf.py").write_text(SCRIPT)
    r = _run([sys.executable, "wf.py"], str(tmp_path), TASKFLOW_INLINE="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["True 41 [5] value 42", "[0, 1, 2, 3, 4, 5]"]
    n = _run([sys.executable, "wf.py"], str(tmp_path))
    assert n.stdout.split("\n")[:2] == ["False 41 [5] value 42", "[0, 1, 2, 3, 4, 5]"]


def _expect(fd: int, want: bytes, seen: bytearray, deadline: float = 60.0) -> None:
    end = time.time() + deadline
    while want not in seen:
        assert time.time() < end, f"no {want!r} in {bytes(seen)!r}"
        if select.select([fd], [], [], 1.0)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            assert chunk, f"the process ended before {want!r}: {bytes(seen)!r}"
            seen += chunk


def _pty(args: list[str], cwd: str, **extra: str) -> tuple[subprocess.Popen, int]:
    master, slave = pty.openpty()
    p = subprocess.Popen(args, cwd=cwd, env=_env(**extra), stdin=slave, stdout=slave,
                         stderr=slave, close_fds=True)
    os.close(slave)
    return p, master


def test_breakpoint_in_a_task_stops_there_inline(tmp_path):
    (tmp_path / "bp.py").write_text(
        "from taskflow import task, wait_on\n"
        "@task(returns=1)\n"
        "def double(x):\n"
        "    y = x * 2\n"
        "    breakpoint()\n"
        "    return y\n"
        "print('result', wait_on(double(21)))\n")
    p, fd = _pty(TF + ["run", "--inline", "bp.py"], str(tmp_path))
    seen = bytearray()
    try:
        _expect(fd, b"(Pdb)", seen)
        assert b"return y" in seen                      # stopped in the task's own source
        os.write(fd, b"p y\n")
        _expect(fd, b"42", seen)
        os.write(fd, b"c\n")
        _expect(fd, b"result 42", seen)
        assert p.wait(60) == 0
    finally:
        p.kill()
        os.close(fd)


FAILING = '''
from taskflow import task, binary, FILE_IN, FILE_OUT

@task(out=FILE_OUT)
def make(out):
    with open(out, "w") as f:
        f.write("3\\n")

@task(f=FILE_IN, on_failure="IGNORE")
def check(f, k):
    n = int(open(f).read())
    if n != k:
        raise ValueError(f"file says {n}, expected {k}")

@task(on_failure="IGNORE")
def boom(x):
    raise RuntimeError(f"boom {x}")

@binary(binary="false")
@task(on_failure="IGNORE")
def prog():
    pass

make("made.txt")
check("made.txt", 4)
boom(7)
prog()
'''


def test_rerun_reproduces_failures_and_names_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))     # (a rerun's scratch folders go there)
    monkeypatch.setattr("tempfile.tempdir", None)
    (tmp_path / "fail.py").write_text(FAILING)
    (tmp_path / "nodes.yaml").write_text(
        "nodes:\n  - {name: n1, local: true, computing_units: 1}\n"
        "  - {name: n2, local: true, computing_units: 1}\n")
    r = _run(TF + ["run", "--no-progress", "--cluster", "nodes.yaml", "fail.py"], str(tmp_path))
    assert "3 failed" in r.stderr          # (IGNOREd failures: the run's status is 0)
    run = sorted(os.listdir(tmp_path / ".taskflow" / "runs"))[-1]
    os.unlink(tmp_path / "made.txt")    # the FILE_IN's own path and version are gone now
    out = {}
    for tid in (2, 3, 4):
        rr = _run(TF + ["rerun", run, str(tid)], str(tmp_path))
        out[tid] = rr.stdout
        assert rr.returncode == 0, (rr.stdout, rr.stderr)
    assert "(check) fails the same way: ValueError: file says 3, expected 4" in out[2]
    assert "(boom) fails the same way: RuntimeError: boom 7" in out[3]
    assert "(prog) fails the same way: ProgramFailed" in out[4]
    assert f"its files and logs: {tmp_path}/taskflow-rerun-4-" in out[4]     # not the run's
    # on a node of the run's cluster file: only its agent starts
    on = _run(TF + ["rerun", run, "2", "--node", "n2"], str(tmp_path))
    assert on.returncode == 0, on.stderr
    assert "(check on n2) fails the same way: ValueError: file says 3, expected 4" in on.stdout
    bad = _run(TF + ["rerun", run, "2", "--node", "n9"], str(tmp_path))
    assert bad.returncode != 0 and "has no such node (its nodes: n1, n2)" in bad.stderr
    nope = _run(TF + ["rerun", run, "99"], str(tmp_path))
    assert nope.returncode != 0 and f"run {run} has no task 99" in nope.stderr
    done = _run(TF + ["rerun", run, "1"], str(tmp_path))
    assert "no record of its inputs" in done.stderr and "TASKFLOW_KEEP_INPUTS=1" in done.stderr
    gone = _run(TF + ["rerun", "20990101-000000-abcdef", "2"], str(tmp_path))
    assert gone.returncode != 0 and "20990101-000000-abcdef" in gone.stderr
    # the API: the same, in this process, which it leaves as it was
    import taskflow
    env, cwd = dict(os.environ), os.getcwd()
    res = taskflow.rerun(str(tmp_path / ".taskflow" / "runs" / run), 3)
    assert res.same and isinstance(res.error, RuntimeError) and str(res.error) == "boom 7"
    assert dict(os.environ) == env and os.getcwd() == cwd
    # --pdb stops at the raising frame
    p, fd = _pty(TF + ["rerun", run, "3", "--pdb"], str(tmp_path))
    seen = bytearray()
    try:
        _expect(fd, b"(Pdb)", seen)
        assert b'raise RuntimeError(f"boom {x}")' in seen
        os.write(fd, b"p x\n")
        _expect(fd, b"7", seen)
        os.write(fd, b"q\n")
        _expect(fd, b"fails the same way", seen)
        p.wait(60)
    finally:
        p.kill()
        os.close(fd)


def test_plan_of_nmmb_lists_39_tasks_and_spawns_nothing(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    spawned = tmp_path / "spawned"
    for name in ("init", "smmount", "landuse", "deeptemperature", "roughness", "albedo",
                 "snowalbedo", "vegfrac", "soiltype", "stdh", "dust_source", "seaice",
                 "gfdlco2", "lookup_aerosol", "degrib", "prep_winds", "prep_soil", "prep_bc",
                 "umo_model", "post_regrid", "post_diag"):
        f = bindir / name
        f.write_text(f"#!/bin/sh\necho {name} >> {spawned}\nexit 3\n")
        f.chmod(0o755)
    out = tmp_path / "out"
    r = _run(TF + ["run", "--plan", os.path.join(NMMB, "workflow.py"),
                   os.path.join(NMMB, "config", "default.nml"), str(out)],
             str(tmp_path), NMMB_BIN=str(bindir))
    assert r.returncode == 0, r.stderr + r.stdout
    assert not spawned.exists()
    assert "39 call(s) of 23 task(s); no program started" in r.stdout
    for line in ("init: 1 call(s) [program]", "umo_model: 3 call(s) [program]",
                 "plot_day: 3 call(s) [python, not run]", "smmount: 1 call(s) [program]"):
        assert line in r.stdout
    assert f"$ {bindir}/degrib {out}/namelist.nml {out}/gfs.txt 2 {out}/day02/degrib.txt" \
        in r.stdout
    assert f"{bindir}/umo_model {out}/namelist.nml 1 " in r.stdout
    assert f"writes: {out}/figures/aod.gif" in r.stdout
    assert not (out / "namelist.nml").exists()          # nothing put in place
