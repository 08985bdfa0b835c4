"""A chain's links resume as calls keyed when made do, though their keys waited.

A call that reads other tasks' values gets its key after it ended, from the bus
thread, or as soon as something needs it (graph/keys.py): these tests run real
`taskflow run` processes and count, through ``runs.log``, what ran again.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

import taskflow
from taskflow import task, wait_on
from taskflow.agent.holding import INLINE_MAX
from taskflow.future import Future
from taskflow.graph.keys import Waited

CHAIN = textwrap.dedent('''
    import os
    from taskflow import task, wait_on, FILE_IN

    def mark(what):
        with open("runs.log", "a") as f:
            f.write(what + "\\n")

    @task(returns=int)
    def inc(x):
        mark(f"inc{x}")
        return x + 1

    @task(returns=int)
    def total(values):
        mark(f"total{len(values)}")
        return sum(values)

    @task(returns=bytes)
    def grow(x):
        mark(f"grow{x}")
        return b"x" * (400_000 + x)     # stays on its node

    @task(returns=int)
    def size(b):
        mark(f"size{len(b)}")
        return len(b)

    @task(returns=int, src=FILE_IN)
    def count(src, n):
        mark(f"count{n}")
        with open(src) as f:
            return len(f.read()) + n

    # the functions become known short: an adoptable run lets only their keys wait
    wait_on([total([inc(100)]), size(grow(0))])
    f = inc(int(os.environ.get("START", "0")))
    for _ in range(30):
        f = inc(f)                          # a link: its key waits
    t = total([f, inc(f), 5])               # a snapshot holding futures: waits too
    g = size(grow(f))                       # reads a value left on its node
    c = count("input.txt", f)               # keyed at its call: the chain's keys made then
    print("RESULT", wait_on(f), wait_on(t), wait_on(g), wait_on(c), flush=True)
''')


def _run(tmp_path, *args, start="0"):
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"), START=start)
    return subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def _ran(tmp_path):
    p = tmp_path / "runs.log"
    lines = p.read_text().split() if p.exists() else []
    p.unlink(missing_ok=True)
    return lines


def _kinds(run_dir):
    """The kinds of the records of a run's resume log ("plain" for a plain call's)."""
    from taskflow.runtime.recovery.frames import MAGIC, read_frames
    kinds: Counter[str] = Counter()
    with open(run_dir / "resume.log", "rb") as f:
        assert f.read(len(MAGIC)) == MAGIC
        for frame in read_frames(f, os.fstat(f.fileno()).st_size, []):
            for rec in pickle.loads(frame.header)[1]:
                kinds[rec[0] if isinstance(rec[0], str) else "plain"] += 1
    return kinds


@pytest.mark.parametrize("grace", ["600", "0"])     # adoptable (the default) or not
def test_a_chain_whose_keys_waited_is_restored_and_rerun_as_keyed_calls_are(tmp_path, grace):
    (tmp_path / "wf.py").write_text(CHAIN)
    (tmp_path / "input.txt").write_text("hello\n")
    r = _run(tmp_path, "--adopt-grace", grace, "wf.py")
    assert r.returncode == 0 and "RESULT 31 68 400031 37" in r.stdout, r.stderr
    assert len(_ran(tmp_path)) == 40
    (first,) = os.listdir(tmp_path / "runs")
    assert _kinds(tmp_path / "runs" / first)["c"] >= 30      # the links' keys waited
    r = _run(tmp_path, "--resume", "--explain", "wf.py")
    assert r.returncode == 0 and "RESULT 31 68 400031 37" in r.stdout, r.stderr
    # the values left on their node and never fetched: not kept, as for any call
    assert sorted(_ran(tmp_path)) == ["grow0", "grow31"]
    assert "38 task(s) restored, 2 ran again" in r.stderr
    r = _run(tmp_path, "--resume", "--explain", "wf.py", start="1")   # the chain's start
    assert r.returncode == 0 and "RESULT 32 70 400032 38" in r.stdout, r.stderr
    again = _ran(tmp_path)
    assert sorted(again) == sorted([f"inc{i}" for i in range(1, 33)] +
                                   ["grow0", "grow32", "total3", "count32", "size400032"])
    assert "reused 1 of 33 calls of inc; 32 ran: 31 an upstream task changed" in r.stderr, \
        r.stderr


@task(returns=bytes)
def _gated(path, deadline=60.0):
    """A value left on its node, made once ``path`` exists (the test's gate)."""
    import time
    end = time.monotonic() + deadline
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.02)
    return b"x" * (INLINE_MAX + 1)


@task(returns=bytes)
def _longer(b):
    return b + b"x"                         # stays on its node too


def test_a_link_whose_key_another_thread_made_after_its_end_is_keyed_from_what_it_kept(
        tmp_path, monkeypatch):
    """Three threads make the keys of a chain's links while the loop thread ends them
    (graph/keys.py): a thread that found a link's key not made yet may read the link once
    it ended, its refs made its journal row's and its key made by another thread. A real
    run leaves its links so (their values stay on their node: the loop thread makes their
    keys, then lets go of their inputs); the key a thread makes of such a link is the
    link's key (once an IndexError ended the script, reading a row as an input)."""
    monkeypatch.chdir(tmp_path)
    gate = tmp_path / "gate"
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), adopt_grace=0) as rt:
        f = _gated(str(gate))
        links = []
        for _ in range(3):
            f = _longer(f)
            links.append(f._producer)       # (pending: the gate is shut)
        gate.touch()
        assert len(wait_on(f)) == INLINE_MAX + 4
        keys = rt.keys
        with rt.lock:                       # (the links' ends are over)
            for t in links:
                made = t.key_parts
                assert type(made) is Waited and t.key == made.key
                assert not isinstance(t.refs[0][2], Future)     # its journal row's refs
                assert keys._compute(t, True) == made
                assert keys.late(t) == made
