"""``taskflow map``: real programs through the real command line (no mocks).

The runs are subprocesses of ``python -m taskflow.cli map`` (the bad-input
checks, which end before anything starts, go through click's runner).
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest
from click.testing import CliRunner

from support.waiting import until
from taskflow.cli import main


def _map(tmp_path, *args, env=None, check=None, **kw):
    r = subprocess.run([sys.executable, "-m", "taskflow.cli", "map", "--no-progress",
                        "--run-dir", str(tmp_path / "runs"), *args], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})), **kw)
    if check is not None:
        assert r.returncode == check, r.stderr
    return r


def _runs(tmp_path):
    return sorted(os.listdir(tmp_path / "runs")) if (tmp_path / "runs").exists() else []


def _done_items(run_dir):
    """The item indices a run's journal says ended well."""
    db = sqlite3.connect(f"file:{run_dir}/journal.db?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT params FROM task_rows WHERE state='DONE'").fetchall()
    finally:
        db.close()
    return {int(p.split("'")[1]) for (p,) in rows}


def test_placeholders_cross_product_environment_and_streams(tmp_path):
    (tmp_path / "cases.json").write_text(json.dumps([{"n": 3, "tol": "1e-3"},
                                                    {"n": 5, "tol": "1e-6"}]))
    r = _map(tmp_path, "--range", "1-2", "--from-json", "cases.json",
             "--stdout", "out/{#}.txt", "--", "sh", "-c",
             'echo "$0 $1 $2 $3 [$TASKFLOW_INDEX] [$TASKFLOW_ITEM]"',
             "{1}", "{n}", "tol={tol}", "{{lit}}", check=0)
    got = {p: (tmp_path / "out" / p).read_text() for p in os.listdir(tmp_path / "out")}
    assert got == {
        "1.txt": '1 3 tol=1e-3 {lit} [1] [1 {"n":3,"tol":"1e-3"}]\n',
        "2.txt": '1 5 tol=1e-6 {lit} [2] [1 {"n":5,"tol":"1e-6"}]\n',
        "3.txt": '2 3 tol=1e-3 {lit} [3] [2 {"n":3,"tol":"1e-3"}]\n',
        "4.txt": '2 5 tol=1e-6 {lit} [4] [2 {"n":5,"tol":"1e-6"}]\n'}, r.stderr
    # a map is a run: status counts its items under the program's name
    s = subprocess.run([sys.executable, "-m", "taskflow.cli", "status", "--run-dir",
                        str(tmp_path / "runs")], capture_output=True, text=True, timeout=60)
    assert "sh: 4 done" in s.stdout, s.stdout


def test_failed_items_are_listed_and_the_map_fails(tmp_path):
    r = _map(tmp_path, "--range", "1-6", "--", "sh", "-c", 'exit $(( $0 % 3 == 0 ? 7 : 0 ))',
             "{}")
    assert r.returncode == 1, r.stderr
    run_id = _runs(tmp_path)[0]
    assert "taskflow map: 2 of 6 item(s) failed, 4 ended well" in r.stderr
    for i in (3, 6):
        assert f"item {i}: exit code 7; its output: taskflow logs {run_id} --item {i}" \
            in r.stderr
    logs = subprocess.run([sys.executable, "-m", "taskflow.cli", "logs", run_id, "--item", "6",
                           "--run-dir", str(tmp_path / "runs")], capture_output=True,
                          text=True, timeout=60)
    assert "' 6 failed with exit code 7" in logs.stdout, logs.stdout + logs.stderr
    # --max-fails 1: the first failure stops the map; the items after it never run
    r = _map(tmp_path, "--max-fails", "1", "-w", "1", "--range", "1-40", "--", "sh", "-c",
             'echo "$0" >> ran.txt; exit $(( $0 == 2 ))', "{}")
    assert r.returncode == 1 and "--max-fails 1" in r.stderr, r.stderr
    assert "did not run" in r.stderr
    assert len((tmp_path / "ran.txt").read_text().split()) < 40


def test_each_line_sha256_resumes_after_the_master_is_killed(tmp_path):
    """Half the items end, the master is SIGKILLed, --resume runs the rest: every output
    right, no item the first run finished runs again."""
    n = 60
    names = []
    for i in range(n):
        (tmp_path / f"f{i}.dat").write_bytes(os.urandom(64) + b"%d" % i)
        names.append(f"f{i}.dat")
    (tmp_path / "list.txt").write_text("\n".join(names) + "\n")
    work = tmp_path / "work.sh"
    work.write_text('#!/bin/sh\necho "$TASKFLOW_INDEX" >> ran.log\nsleep 0.05\n'
                    'exec sha256sum "$1"\n')
    work.chmod(0o755)
    args = ["--each-line", "list.txt", "--in", "{}", "--stdout", "{}.sha", "-w", "2", "--",
            "./work.sh", "{}"]
    cmd = [sys.executable, "-m", "taskflow.cli", "map", "--no-progress", "--run-dir",
           str(tmp_path / "runs"), *args]
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        ran = tmp_path / "ran.log"
        until(lambda: ran.exists() and len(ran.read_text().split()) >= n // 2, 60,
              "half the items to start")
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    first = tmp_path / "runs" / _runs(tmp_path)[0]
    finished = _done_items(first)
    assert 0 < len(finished) < n
    r = _map(tmp_path, "--resume", *args, check=0)
    assert "resumed run" in r.stderr
    counts: dict[int, int] = {}
    for i in (tmp_path / "ran.log").read_text().split():
        counts[int(i)] = counts.get(int(i), 0) + 1
    assert set(counts) == set(range(1, n + 1))
    assert [i for i in finished if counts[i] != 1] == []     # finished: never ran again
    for name in names:
        want = hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        assert (tmp_path / f"{name}.sha").read_text().split()[0] == want, name


@pytest.mark.parametrize("args, says", [
    (["--range", "5-1", "--", "true"], "5-1 is empty"),
    (["--range", "x", "--", "true"], "write START-END[:STEP]"),
    (["--each-line", "empty.txt", "--", "true"], "the file has no lines"),
    (["--from-json", "bad.json", "--", "true"], "not valid JSON at line 2, column 10"),
    (["--from-json", "obj.json", "--", "true"], "it must hold a list"),
    (["--from-json", "cases.json", "--", "echo", "{size}"], "names no field of the items: "
                                                            "the items' fields are n, tol"),
    (["--range", "1-3", "--", "echo", "{n}"], "the items have no fields"),
    (["--from-json", "ragged.json", "--", "echo", "{tol}"], "item 2: {tol} in '{tol}' names"),
    (["--range", "1-3", "--", "echo", "{3}"], "names source 3, but the map has 1"),
    (["--each-line", "dup.txt", "--out", "{}.out", "--", "cp", "in.txt", "{}.out"],
     "items 1 and 3 would both write"),
    (["--range", "1-3", "--stdout", "same.txt", "--", "true"], "items 1 and 2 would both"),
    (["--range", "1-3", "--out", "o{}", "--", "sh", "-c", "echo > o{}"], "whole argument"),
    (["--range", "1-3", "--out", "o{}", "--", "true"], "is not an argument of the command"),
    (["--range", "1-3", "--in", "missing{}.txt", "--", "cat", "missing{}.txt"],
     "item 1: --in 'missing{}.txt' is missing1.txt, which does not exist"),
    (["--range", "1-3", "--cpus", "0", "--", "true"], "0 is not in the range x>=1"),
    (["--range", "1-3", "--memory", "-2", "--", "true"], "--memory '-2': give an amount above"),
    (["--range", "1-3", "--memory", "0", "--", "true"], "--memory '0': give an amount above"),
    (["--range", "1-3", "--resource", "gpu=0", "--", "true"], "ask for an amount > 0"),
    (["--range", "1-3", "--resource", "gpu=-1", "--", "true"], "ask for an amount > 0"),
    (["--range", "1-3", "--time-out", "0", "--", "true"], "give seconds above 0"),
    (["--range", "1-3", "--", "no-such-program-here", "{}"], "'no-such-program-here' was "
                                                              "not found on PATH"),
    (["--range", "1-3", "--", "{}"], "must be one fixed program"),
    (["--range", "1-3", "--"], "no command"),
    (["--", "echo"], "no items"),
])
def test_bad_input_is_refused_before_anything_runs(tmp_path, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "bad.json").write_text('[{"n": 1},\n {"n": 2,,}]')
    (tmp_path / "obj.json").write_text('{"n": 1}')
    (tmp_path / "cases.json").write_text('[{"n": 1, "tol": 2}]')
    (tmp_path / "ragged.json").write_text('[{"n": 1, "tol": 2}, {"n": 2}]')
    (tmp_path / "dup.txt").write_text("a\nb\na\n")
    (tmp_path / "in.txt").write_text("x")
    r = CliRunner().invoke(main, ["map", "--run-dir", str(tmp_path / "runs"), *args])
    assert r.exit_code == 2, r.output
    assert says in r.output, r.output
    assert _runs(tmp_path) == []            # no run was started


def test_each_item_gets_the_resources_it_asks_for(tmp_path):
    """--resource NAME=AMOUNT on a node that declares it (a cluster file's local node): each
    item sees the device it was given (sharing is tests/core/test_resources.py's); a name
    no node has is refused before anything runs."""
    (tmp_path / "c.yaml").write_text("nodes:\n  - local: true\n    computing_units: 2\n"
                                     "    resources: {gpu: [0, 1]}\n")
    _map(tmp_path, "--cluster", "c.yaml", "--range", "1-4", "--resource", "gpu=0.5",
         "--stdout", "g{}.txt", "--", "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES"', check=0)
    seen = [(tmp_path / f"g{i}.txt").read_text().strip() for i in range(1, 5)]
    assert set(seen) <= {"0", "1"} and all(seen), seen
    r = _map(tmp_path, "--cluster", "c.yaml", "--range", "1-2", "--resource", "license=1",
             "--", "true")
    assert r.returncode == 2 and "license" in r.stderr, r.stderr


def test_plan_lists_the_items_command_lines_and_files_and_runs_nothing(tmp_path):
    r = _map(tmp_path, "--plan", "--range", "1-50", "--stdout", "o/{}.txt", "--", "sh", "-c",
             "echo {} > made{}", check=0)
    assert "50 call(s) of 1 task(s); no program started" in r.stdout, r.stdout
    assert "$ /usr/bin/sh -c 'echo 1 > made1'" in r.stdout or \
        "$ /bin/sh -c 'echo 1 > made1'" in r.stdout, r.stdout
    assert f"writes: {tmp_path}/o/1.txt" in r.stdout, r.stdout
    assert not (tmp_path / "o").exists() and not list(tmp_path.glob("made*"))
    assert _runs(tmp_path) == []
